package io.agentnest.agent;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * The in-sandbox agent's Python sources, loaded from this jar.
 *
 * <p>The bootstrap is passed as {@code python3 -c BOOTSTRAP}; it then reads the worker and agent
 * sources from stdin, so nothing is written into the sandbox's (read-only) root filesystem.
 */
public final class AgentSources {
  private static final byte[] AGENT = load("agent.py");
  private static final byte[] WORKER = load("worker.py");
  private static final String BOOTSTRAP = new String(load("bootstrap.py"), StandardCharsets.UTF_8);

  private AgentSources() {}

  /** Source of the bootstrap, to be run with {@code python3 -c}. */
  public static String bootstrap() {
    return BOOTSTRAP;
  }

  /**
   * The bytes the bootstrap expects on stdin: three lengths, the worker, the agent, then the agent
   * compiled on the host ({@link AgentBytecode}; empty when there is none yet).
   */
  public static byte[] bootstrapPayload() {
    return payload(AgentBytecode.current());
  }

  static byte[] payload(byte[] code) {
    byte[] head =
        String.format("%010d%010d%010d", AGENT.length, WORKER.length, code.length)
            .getBytes(StandardCharsets.US_ASCII);
    byte[] out = new byte[head.length + WORKER.length + AGENT.length + code.length];
    System.arraycopy(head, 0, out, 0, head.length);
    System.arraycopy(WORKER, 0, out, head.length, WORKER.length);
    System.arraycopy(AGENT, 0, out, head.length + WORKER.length, AGENT.length);
    System.arraycopy(code, 0, out, head.length + WORKER.length + AGENT.length, code.length);
    return out;
  }

  static byte[] agentSource() {
    return AGENT;
  }

  private static byte[] load(String name) {
    try (InputStream in = AgentSources.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("agent resource " + name + " missing from the jar");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
