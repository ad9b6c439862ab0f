package io.agentnest.docker;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.agentnest.docker.internal.DockerEngine;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/** gVisor tests need runsc registered in Docker; under CI=true its absence is a failure. */
public final class GvisorRequired implements BeforeAllCallback {
  @Override
  public void beforeAll(ExtensionContext context) {
    if (DockerEngine.connect().runtimes().containsKey("runsc")) {
      return;
    }
    String why = "runsc is not registered in the Docker daemon (scripts/setup-host.sh does it)";
    if ("true".equalsIgnoreCase(System.getenv("CI"))) {
      throw new IllegalStateException("CI=true and " + why);
    }
    assumeTrue(false, "SKIPPED (no gVisor): " + why);
  }
}
