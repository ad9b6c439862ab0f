package io.agentnest;

import java.time.Instant;
import java.util.Map;

/**
 * A managed sandbox as the backend lists it.
 *
 * @param id sandbox id
 * @param backend backend name, e.g. {@code docker}
 * @param image image the sandbox runs
 * @param runtime OCI runtime, e.g. {@code runc} or {@code runsc}
 * @param state backend state, e.g. {@code running}
 * @param created creation time
 * @param labels labels, including {@code agentnest.*} management labels
 */
public record SandboxInfo(
    String id,
    String backend,
    String image,
    String runtime,
    String state,
    Instant created,
    Map<String, String> labels) {
  public SandboxInfo {
    labels = Map.copyOf(labels);
  }
}
