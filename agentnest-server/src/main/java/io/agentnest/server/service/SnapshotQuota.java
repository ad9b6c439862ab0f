package io.agentnest.server.service;

import io.agentnest.SnapshotInfo;
import io.agentnest.server.http.ApiException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * A tenant's snapshot quota: how many snapshots it may keep ({@code policy.max_snapshots} or the
 * tenant's own) and their total size ({@code policy.max_snapshot_bytes}). Snapshots live on the
 * host's disk beyond any sandbox's life, so without it one tenant could fill the disk every tenant
 * shares. E2B's pause is a snapshot and counts too. Saves of one tenant are serialised so two
 * racing saves cannot both pass a count of one.
 */
final class SnapshotQuota {
  private final Supplier<List<SnapshotInfo>> snapshots;
  private final Map<String, Object> locks = new ConcurrentHashMap<>();

  /**
   * @param snapshots the installation's snapshots (every tenant's, by stored name)
   */
  SnapshotQuota(Supplier<List<SnapshotInfo>> snapshots) {
    this.snapshots = snapshots;
  }

  /** What a save does, run with the tenant's quota held. */
  @FunctionalInterface
  interface Save {
    SnapshotInfo run();
  }

  /**
   * Runs {@code save} of the tenant's snapshot {@code stored} if the quota has room: a 429 naming
   * the full quota before, and after when the new snapshot took the total over its bytes (the new
   * snapshot is then removed by {@code remove}).
   */
  SnapshotInfo within(
      Policies.Effective p, String prefix, String stored, Save save, Consumer<String> remove) {
    synchronized (locks.computeIfAbsent(p.tenant(), k -> new Object())) {
      int count = 0;
      long bytes = 0;
      for (SnapshotInfo s : snapshots.get()) {
        // A replaced snapshot gives its room to its successor.
        if (s.name().startsWith(prefix) && !s.name().equals(stored)) {
          count++;
          bytes += s.bytes();
        }
      }
      if (count + 1 > p.maxSnapshots()) {
        throw quota(
            "snapshots",
            p.maxSnapshots(),
            count,
            "delete a snapshot (DELETE /v1/snapshots/{name}, or kill a paused E2B sandbox), or ask"
                + " the operator to raise policy.max_snapshots or the tenant's own");
      }
      if (bytes >= p.maxSnapshotBytes()) {
        throw bytesFull(p, bytes);
      }
      SnapshotInfo info = save.run();
      if (bytes + info.bytes() > p.maxSnapshotBytes()) {
        remove.accept(stored);
        throw bytesFull(p, bytes + info.bytes());
      }
      return info;
    }
  }

  private static ApiException bytesFull(Policies.Effective p, long used) {
    return quota(
        "snapshot_bytes",
        p.maxSnapshotBytes(),
        used,
        "delete snapshots you no longer need (DELETE /v1/snapshots/{name}) or save a smaller"
            + " workspace, or ask the operator to raise policy.max_snapshot_bytes or the"
            + " tenant's own");
  }

  private static ApiException quota(String quota, Object limit, Object used, String fix) {
    return Registry.quota(quota, limit, used, fix);
  }
}
