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
 */
public record Tenant(
    String name,
    int maxSandboxes,
    long memoryBytes,
    double cpus,
    int requestsPerSecond,
    @Nullable Long maxSandboxMemoryBytes,
    @Nullable List<String> allowHosts) {
  public Tenant {
    if (allowHosts != null) {
      allowHosts = List.copyOf(allowHosts);
    }
  }
}
