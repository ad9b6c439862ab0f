package io.agentnest.server.service;

import io.agentnest.NetworkPolicy;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SnapshotException;
import io.agentnest.SnapshotInfo;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import io.agentnest.server.tenancy.Tenant;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * What a tenant may do with its sandboxes' state, whichever face asks (the {@code /v1} state
 * routes, E2B's pause, resume and fork): fork within the quota, save within the snapshot quota,
 * restore within today's policy and floor. Snapshots live in the installation's one store, so a
 * tenant's snapshot is stored as {@code <tenant>.<name>}: tenant names have no dot, so the prefix
 * cannot be forged, and a tenant never sees, restores or deletes a name without its own prefix
 * (another tenant's name is 404).
 */
public final class SandboxStates {
  /** What a client may call a snapshot: the store's rule, without dots, short enough to prefix. */
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_-]{0,35}");

  private final ServerConfig config;
  private final Registry registry;
  private final Clock clock;
  private final SnapshotQuota snapshotQuota = new SnapshotQuota(Sandbox::snapshots);

  private final ApprovalFloor floor;

  public SandboxStates(ServerConfig config, Registry registry, Clock clock, ApprovalFloor floor) {
    this.config = config;
    this.registry = registry;
    this.clock = clock;
    this.floor = floor;
  }

  /** An independent copy of {@code parent}, registered for {@code t} within its quota. */
  public Registry.Entry fork(Tenant t, Registry.Entry parent) {
    Registry.Reservation r = registry.reserve(t, parent.memoryBytes(), parent.cpus());
    Sandbox copy;
    try {
      copy = parent.sandbox().fork();
    } catch (RuntimeException e) {
      registry.release(r);
      throw Failures.of(e);
    }
    Registry.Entry entry =
        new Registry.Entry(
            t.name(),
            copy,
            parent.image(),
            parent.memoryBytes(),
            parent.cpus(),
            clock.instant(),
            ConcurrentHashMap.newKeySet());
    entry.sessions().addAll(parent.sessions());
    registry.commit(r, entry);
    return entry;
  }

  /** Saves {@code e} as the tenant's snapshot {@code name}, within its snapshot quota. */
  public SnapshotInfo save(Tenant t, Registry.Entry e, @Nullable String name, boolean replace) {
    String stored = stored(t, name);
    return snapshotQuota.within(
        Policies.effective(config.policy(), t),
        prefix(t),
        stored,
        () -> {
          try {
            return e.sandbox().snapshot(stored, replace);
          } catch (RuntimeException ex) {
            throw map(ex, String.valueOf(name));
          }
        },
        n -> Sandbox.removeSnapshot(n));
  }

  /** Removes the tenant's snapshot {@code name}; false when there was none. */
  public boolean delete(Tenant t, String name) {
    return Sandbox.removeSnapshot(stored(t, name));
  }

  /** A new sandbox of {@code t} from its snapshot {@code name}, within policy and quota. */
  public Registry.Entry restore(Tenant t, String name) {
    String stored = stored(t, name);
    SnapshotInfo info =
        Sandbox.snapshots().stream()
            .filter(s -> s.name().equals(stored))
            .findFirst()
            .orElseThrow(() -> notFound(name));
    SandboxConfig saved = info.config();
    // Defence in depth: the name's prefix says whose it is; the label the server wrote must agree.
    if (!t.name().equals(saved.labels().get(SandboxService.TENANT_LABEL))) {
      throw notFound(name);
    }
    Policies.Effective p = Policies.effective(config.policy(), t);
    p.check(
        saved.image(),
        saved.memoryBytes(),
        saved.cpus(),
        saved.ttl(),
        saved.network().isNone() ? List.of() : saved.network().rules());
    // A snapshot saved before policy.max_pids (or a tenant's lower cap) is held to it now.
    p.pids(saved.pidsLimit(), saved.pidsLimit());
    Registry.Reservation r = registry.reserve(t, saved.memoryBytes(), saved.cpus());
    // The saved rules are those of the day it was saved: today's floor and the tenant's queue
    // apply (a snapshot from before policy.approvals: recommended must not restore into a sandbox
    // that deletes without asking). A fork of it inherits them.
    ApprovalFloor.Applied applied =
        floor.apply(
            t, saved.approvals(), saved.network().onUnknownHost() == NetworkPolicy.Mode.ASK);
    Sandbox sb;
    try {
      sb =
          Sandbox.restore(
              stored,
              saved.toBuilder()
                  .approvals(applied.rules())
                  .approvalHandler(applied.handler())
                  .build());
    } catch (RuntimeException ex) {
      registry.release(r);
      throw map(ex, name);
    }
    Registry.Entry entry =
        new Registry.Entry(
            t.name(),
            sb,
            saved.image(),
            saved.memoryBytes(),
            saved.cpus(),
            clock.instant(),
            ConcurrentHashMap.newKeySet());
    entry.sessions().addAll(info.sessions());
    registry.commit(r, entry);
    return entry;
  }

  /** The prefix of every stored name of the tenant's snapshots. */
  public static String prefix(Tenant t) {
    return t.name() + ".";
  }

  private static String stored(Tenant t, @Nullable String name) {
    if (name == null || !NAME.matcher(name).matches()) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD,
          "snapshot name '" + Escape.id(String.valueOf(name)) + "' is invalid",
          "use 1-36 letters, digits, '_' or '-', starting with a letter or digit");
    }
    return prefix(t) + name;
  }

  public static ApiException notFound(String name) {
    return new ApiException(
        404,
        ErrorCode.NOT_FOUND,
        "snapshot '" + Escape.id(name) + "' not found",
        "list yours with GET /v1/snapshots; other tenants' snapshots are never visible");
  }

  private static ApiException map(RuntimeException e, String name) {
    if (!(e instanceof SnapshotException s)) {
      return Failures.of(e);
    }
    SnapshotException.Reason reason = s.reason();
    int status = Failures.status(reason);
    if (status == 404) {
      return notFound(name);
    }
    // The store's message names the stored (prefixed) name and host paths: the client gets the
    // reason and its own name only.
    return new ApiException(
        status,
        ErrorCode.SNAPSHOT,
        switch (reason) {
          case EXISTS -> "snapshot '" + Escape.id(name) + "' already exists";
          case SECRET -> "snapshot '" + Escape.id(name) + "' refused: the state holds a secret";
          default -> "snapshot '" + Escape.id(name) + "' failed: " + reason.code();
        },
        switch (reason) {
          case EXISTS -> "choose another name, or send \"replace\": true";
          case SECRET -> "the sandbox's state holds a secret's value: remove it first";
          default -> "see the server log; retry once the operator has checked the store";
        },
        Map.of("reason", reason.code()));
  }
}
