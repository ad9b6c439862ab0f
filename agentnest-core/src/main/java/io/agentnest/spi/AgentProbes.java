package io.agentnest.spi;

import io.agentnest.Sandbox;
import java.io.IOException;
import java.io.InputStream;
import java.util.ServiceLoader;

/**
 * Direct access to the in-sandbox agent for host-side probes that test the agent's own defences
 * (the escape suite), skipping on purpose the host-side checks that the public API applies first.
 * Not for applications: {@link Sandbox#uploadArchive} checks every entry on the host, then the
 * agent checks again; this reaches the second line alone, to prove that it holds by itself.
 *
 * <p>agentnest-core ships the one implementation, found with {@link ServiceLoader} under {@code
 * META-INF/services/io.agentnest.spi.AgentProbes} ({@link #load()}).
 */
public interface AgentProbes {
  /** Whether {@code sandbox} has an AgentNest agent this implementation can reach. */
  boolean supports(Sandbox sandbox);

  /**
   * Streams {@code tar} to the agent's strict unpacker under {@code /workspace/}{@code subPath},
   * with no host-side look at its entries. The agent refuses entries that leave the target, links
   * that point outside, device files and more than {@code maxBytes}.
   *
   * @throws IllegalArgumentException when {@link #supports} is false for {@code sandbox}
   * @throws io.agentnest.FileOperationException when the agent refuses the archive
   */
  void unpackUnchecked(Sandbox sandbox, String subPath, InputStream tar, long maxBytes)
      throws IOException;

  /** The implementation on the class path. */
  static AgentProbes load() {
    return ServiceLoader.load(AgentProbes.class, AgentProbes.class.getClassLoader())
        .findFirst()
        .orElseThrow(
            () ->
                new IllegalStateException(
                    "no io.agentnest.spi.AgentProbes on the class path: put agentnest-core's jar"
                        + " (with its META-INF/services) on the class path"));
  }
}
