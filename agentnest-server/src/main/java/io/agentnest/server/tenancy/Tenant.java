package io.agentnest.server.tenancy;

import java.util.List;
import java.util.regex.Pattern;
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
 * @param approvals the approval rules every sandbox of the tenant has at least ({@code
 *     recommended}), or null for the server's alone
 * @param maxSnapshots snapshots it may keep (E2B-paused sandboxes are snapshots too), or null for
 *     the server's {@code policy.max_snapshots}
 * @param snapshotBytes the total size of its snapshots, or null for the server's {@code
 *     policy.max_snapshot_bytes}
 * @param maxPids the highest pidsLimit its sandboxes may ask for, or null for the server's {@code
 *     policy.max_pids}
 * @param approverRoleRequired whether only approver keys (and the admin console) answer its
 *     approval questions; the server's {@code policy.approver_role_required} can require it of
 *     every tenant, a tenant's own setting only adds to that
 */
public record Tenant(
    String name,
    int maxSandboxes,
    long memoryBytes,
    double cpus,
    int requestsPerSecond,
    @Nullable Long maxSandboxMemoryBytes,
    @Nullable List<String> allowHosts,
    int executionsPerMinute,
    @Nullable String approvals,
    @Nullable Integer maxSnapshots,
    @Nullable Long snapshotBytes,
    @Nullable Long maxPids,
    boolean approverRoleRequired) {
  /** What a tenant may be called (it also names a Kubernetes namespace). */
  static final Pattern NAME = Pattern.compile("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");

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

  /** A tenant with no approval floor of its own. */
  public Tenant(
      String name,
      int maxSandboxes,
      long memoryBytes,
      double cpus,
      int requestsPerSecond,
      @Nullable Long maxSandboxMemoryBytes,
      @Nullable List<String> allowHosts,
      int executionsPerMinute) {
    this(
        name,
        maxSandboxes,
        memoryBytes,
        cpus,
        requestsPerSecond,
        maxSandboxMemoryBytes,
        allowHosts,
        executionsPerMinute,
        null);
  }

  /** A tenant with the server's snapshot and pids caps. */
  public Tenant(
      String name,
      int maxSandboxes,
      long memoryBytes,
      double cpus,
      int requestsPerSecond,
      @Nullable Long maxSandboxMemoryBytes,
      @Nullable List<String> allowHosts,
      int executionsPerMinute,
      @Nullable String approvals) {
    this(
        name,
        maxSandboxes,
        memoryBytes,
        cpus,
        requestsPerSecond,
        maxSandboxMemoryBytes,
        allowHosts,
        executionsPerMinute,
        approvals,
        null,
        null,
        null);
  }

  /** A tenant whose agent keys answer approvals too (unless the server requires approvers). */
  public Tenant(
      String name,
      int maxSandboxes,
      long memoryBytes,
      double cpus,
      int requestsPerSecond,
      @Nullable Long maxSandboxMemoryBytes,
      @Nullable List<String> allowHosts,
      int executionsPerMinute,
      @Nullable String approvals,
      @Nullable Integer maxSnapshots,
      @Nullable Long snapshotBytes,
      @Nullable Long maxPids) {
    this(
        name,
        maxSandboxes,
        memoryBytes,
        cpus,
        requestsPerSecond,
        maxSandboxMemoryBytes,
        allowHosts,
        executionsPerMinute,
        approvals,
        maxSnapshots,
        snapshotBytes,
        maxPids,
        false);
  }

  /** The same tenant with {@code required} as its approver-role setting. */
  public Tenant withApproverRoleRequired(boolean required) {
    return new Tenant(
        name,
        maxSandboxes,
        memoryBytes,
        cpus,
        requestsPerSecond,
        maxSandboxMemoryBytes,
        allowHosts,
        executionsPerMinute,
        approvals,
        maxSnapshots,
        snapshotBytes,
        maxPids,
        required);
  }

  public Tenant {
    if (approvals != null && !approvals.equals("none") && !approvals.equals("recommended")) {
      throw new IllegalArgumentException(
          "tenant approvals '" + approvals + "' is not none or recommended");
    }
    if (allowHosts != null) {
      allowHosts = List.copyOf(allowHosts);
    }
    if ((maxSnapshots != null && maxSnapshots < 0)
        || (snapshotBytes != null && snapshotBytes < 0)
        || (maxPids != null && maxPids < 8)) {
      throw new IllegalArgumentException(
          "tenant snapshot quotas must be 0 or more and max pids at least 8");
    }
  }
}
