package io.agentnest.internal;

import io.agentnest.Sandbox;
import io.agentnest.internal.files.SandboxArchives;
import io.agentnest.spi.AgentProbes;
import java.io.IOException;
import java.io.InputStream;

/** {@link AgentProbes} for the sandboxes core makes (registered in {@code META-INF/services}). */
public final class DefaultAgentProbes implements AgentProbes {
  @Override
  public boolean supports(Sandbox sandbox) {
    return sandbox instanceof DefaultSandbox;
  }

  @Override
  public void unpackUnchecked(Sandbox sandbox, String subPath, InputStream tar, long maxBytes)
      throws IOException {
    if (!(sandbox instanceof DefaultSandbox ds)) {
      throw new IllegalArgumentException(
          "not a sandbox of agentnest-core ("
              + sandbox.getClass().getName()
              + "): only those have an agent to probe");
    }
    ds.archives().tarIn(SandboxArchives.WORKSPACE, subPath, tar, true, maxBytes);
  }
}
