package io.agentnest.server;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A tenant: its quotas (totals over its sandboxes at once, and requests per second) and its own
 * policy, which can only tighten the server's.
 *
 * @param name lower-case letters, digits and '-' (it also names a Kubernetes namespace)
 * @param maxSandboxes sandboxes at once
 * @param memoryBytes total memory of its sandboxes at once
 * @param cpus total CPUs of its sandboxes at once
 * @param requestsPerSecond authenticated requests per second (a token bucket of one second)
 * @param maxSandboxMemoryBytes per-sandbox memory cap of its own, or null for the server's
 * @param allowHosts egress hosts its sandboxes may ask for, or null for the server's list
 * @param executionsPerMinute exec and code calls it may start in any sliding minute (0: no limit)
 */
public record Tenant(
    String name,
    int maxSandboxes,
    long memoryBytes,
    double cpus,
    int requestsPerSecond,
    @Nullable Long maxSandboxMemoryBytes,
    @Nullable List<String> allowHosts,
    int executionsPerMinute) {
  /** What `tenant add` gives when --executions-per-minute is not said. */
  public static final int DEFAULT_EXECUTIONS_PER_MINUTE = 600;

  /** A tenant with the default executions-per-minute quota. */
  public Tenant(
      String name,
      int maxSandboxes,
      long memoryBytes,
      double cpus,
      int requestsPerSecond,
      @Nullable Long maxSandboxMemoryBytes,
      @Nullable List<String> allowHosts) {
    this(
        name,
        maxSandboxes,
        memoryBytes,
        cpus,
        requestsPerSecond,
        maxSandboxMemoryBytes,
        allowHosts,
        DEFAULT_EXECUTIONS_PER_MINUTE);
  }

  public Tenant {
    if (allowHosts != null) {
      allowHosts = List.copyOf(allowHosts);
    }
  }
}
