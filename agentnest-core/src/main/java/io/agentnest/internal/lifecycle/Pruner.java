package io.agentnest.internal.lifecycle;

import io.agentnest.AgentNestException;
import io.agentnest.PruneOptions;
import io.agentnest.PruneReport;
import io.agentnest.internal.snapshot.SnapshotStore;
import io.agentnest.spi.Labels;
import io.agentnest.spi.ManagedResource;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.spi.support.HostProcess;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Finds and removes what AgentNest left behind: expired sandboxes, sandboxes whose owner process is
 * gone (a crashed or killed host), stopped ones, and host-side state of sandboxes that no longer
 * exist. Backend-agnostic: it decides from labels what a backend lists. Behind {@link
 * io.agentnest.Sandbox#prune}.
 */
public final class Pruner {
  /** Grace for a container between create and start, which another process may be doing now. */
  private static final Duration STARTING_GRACE = Duration.ofSeconds(60);

  private Pruner() {}

  public static PruneReport prune(RuntimeBackend backend, PruneOptions options) {
    Instant now = Instant.now();
    List<ManagedResource> resources = backend.resources();
    List<PruneReport.Item> items = new ArrayList<>();
    Set<String> remaining = new HashSet<>();
    long freed = 0;
    for (ManagedResource r : resources) {
      String reason = reason(r, options, now);
      if (reason == null) {
        remaining.add(r.id());
        continue;
      }
      if (options.dryRun()) {
        items.add(new PruneReport.Item(r.kind(), r.id(), reason, r.sizeBytes(), false, null));
        remaining.add(r.id());
        continue;
      }
      try {
        backend.remove(r);
        items.add(new PruneReport.Item(r.kind(), r.id(), reason, r.sizeBytes(), true, null));
        freed += Math.max(0, r.sizeBytes());
        HostState.delete(r.id());
      } catch (AgentNestException e) {
        remaining.add(r.id());
        items.add(
            new PruneReport.Item(r.kind(), r.id(), reason, r.sizeBytes(), false, e.getMessage()));
      }
    }
    int stateRemoved = 0;
    for (HostState.Entry e : HostState.all()) {
      if (!e.backend().equals(backend.name()) || remaining.contains(e.id())) {
        continue;
      }
      boolean exists = resources.stream().anyMatch(r -> r.id().equals(e.id()));
      if (options.dryRun()) {
        stateRemoved += exists ? 0 : 1;
        continue;
      }
      HostState.delete(e.id());
      stateRemoved++;
    }
    // Half-written snapshots of crashed saves (never listed as valid, but they hold disk).
    SnapshotStore store = SnapshotStore.local();
    for (SnapshotStore.Leftover l : store.leftovers(SnapshotStore.LEFTOVER_AGE, now)) {
      if (options.dryRun()) {
        items.add(
            new PruneReport.Item(
                "snapshot-staging", l.name(), "unfinished save", l.bytes(), false, null));
        continue;
      }
      try {
        store.removeLeftover(l);
        items.add(
            new PruneReport.Item(
                "snapshot-staging", l.name(), "unfinished save", l.bytes(), true, null));
        freed += l.bytes();
      } catch (AgentNestException e) {
        items.add(
            new PruneReport.Item(
                "snapshot-staging", l.name(), "unfinished save", l.bytes(), false, e.getMessage()));
      }
    }
    return new PruneReport(List.copyOf(items), freed, stateRemoved, options.dryRun());
  }

  static @Nullable String reason(ManagedResource r, PruneOptions o, Instant now) {
    if (o.olderThan() != null && r.created().isAfter(now.minus(o.olderThan()))) {
      return null;
    }
    if (r.kind().equals("bulk-dir") && r.state().equals("orphaned")) {
      // A fresh one may belong to a sandbox another process is creating right now.
      return r.created().isBefore(now.minus(STARTING_GRACE)) ? "its sandbox is gone" : null;
    }
    if (o.all()) {
      return "--all";
    }
    Optional<HostState.Entry> state = HostState.read(r.id());
    Instant expires = expiry(r, state);
    if (expires != null && !expires.isAfter(now)) {
      return "expired at " + expires;
    }
    String owner = state.map(HostState.Entry::owner).filter(s -> !s.isEmpty()).orElse(null);
    if (owner == null) {
      owner = r.labels().get(Labels.OWNER);
    }
    String gone = HostState.DETACHED.equals(owner) ? null : ownerGone(owner);
    if (gone != null) {
      return gone;
    }
    if (r.kind().equals("container") && !r.running()) {
      if (r.state().equals("created") && r.created().isAfter(now.minus(STARTING_GRACE))) {
        return null;
      }
      return "stopped (state " + r.state() + ")";
    }
    return null;
  }

  private static @Nullable Instant expiry(ManagedResource r, Optional<HostState.Entry> state) {
    Instant label = null;
    String e = r.labels().get(Labels.EXPIRES);
    if (e != null) {
      try {
        label = Instant.ofEpochSecond(Long.parseLong(e));
      } catch (NumberFormatException ignored) {
        label = null;
      }
    }
    Instant extended = state.map(HostState.Entry::expiresAt).orElse(null);
    if (extended != null && r.labels().containsKey(Labels.POOL)) {
      // A pooled sandbox's label holds its idle deadline; its user's TTL, set at hand-out, is the
      // host state's (Docker cannot change the label).
      return extended;
    }
    if (label == null) {
      return extended;
    }
    return extended != null && extended.isAfter(label) ? extended : label;
  }

  /** Reason text when the owner is a process on this host that no longer runs; else null. */
  static @Nullable String ownerGone(@Nullable String owner) {
    if (owner == null) {
      return null;
    }
    String[] parts = owner.split(":");
    if (parts.length != 3 || !parts[0].equals(HostProcess.hostName())) {
      return null; // another host's sandbox: only its expiry can tell
    }
    long pid;
    long start;
    try {
      pid = Long.parseLong(parts[1]);
      start = Long.parseLong(parts[2]);
    } catch (NumberFormatException e) {
      return null;
    }
    Optional<ProcessHandle> p = ProcessHandle.of(pid);
    if (p.isEmpty() || !p.get().isAlive()) {
      return "owner process " + pid + " is gone";
    }
    Optional<Instant> started = p.get().info().startInstant();
    if (started.isPresent() && Math.abs(started.get().toEpochMilli() - start) > 2000) {
      return "owner process " + pid + " is gone (pid reused)";
    }
    return null;
  }
}
