package io.agentnest.server;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * What the E2B face keeps per sandbox beside the registry's entry: the template name the client
 * asked for, its metadata, the two access tokens the SDK sends to the sandbox's services, the
 * process table and the code contexts. The registry stays the owner: state whose sandbox is gone
 * (killed through /v1, expired) is dropped when next looked up or at the next create.
 */
final class E2bSandboxes {
  /** The envd version this server speaks: picks the SDK's code paths (see docs/e2b.md). */
  static final String ENVD_VERSION = "0.5.7";

  private final Map<String, State> byId = new ConcurrentHashMap<>();

  /** One sandbox's E2B state. */
  static final class State {
    /** The id the E2B client knows: the sandbox's id at create, kept across pause and resume. */
    final String id;

    final String tenant;
    final String templateId;
    final Map<String, String> metadata;
    final String envdToken = Tokens.random();
    final String trafficToken = Tokens.random();
    final Instant started;

    /** The registry's id of the running sandbox (a resumed sandbox is a restored copy). */
    volatile String sandboxId;

    volatile E2bProcesses processes;

    /** The tenant's snapshot that holds it while paused, else null. */
    volatile @Nullable String pausedAs;

    final Map<String, E2bCodeInterpreter.CodeContext> contexts = new ConcurrentHashMap<>();
    final AtomicInteger contextSeq = new AtomicInteger();

    State(
        String id,
        String tenant,
        String templateId,
        Map<String, String> metadata,
        Instant started,
        E2bProcesses processes) {
      this.id = id;
      this.tenant = tenant;
      this.templateId = templateId;
      this.metadata = Map.copyOf(metadata);
      this.started = started;
      this.processes = processes;
      this.sandboxId = id;
    }

    boolean paused() {
      return pausedAs != null;
    }
  }

  void put(State s) {
    byId.put(s.id, s);
  }

  /** Adds {@code s} unless the sandbox has state already; returns the one that stays. */
  State putIfAbsent(State s) {
    State had = byId.putIfAbsent(s.id, s);
    return had != null ? had : s;
  }

  @Nullable State get(String id) {
    return byId.get(id);
  }

  void remove(String id) {
    State s = byId.remove(id);
    if (s != null) {
      s.processes.cancelAll();
    }
  }

  /** Stops every command started through the E2B face (the server is closing). */
  void cancelAll() {
    for (State s : byId.values()) {
      s.processes.cancelAll();
    }
  }

  /** Drops the state of running sandboxes the registry no longer holds (paused ones stay). */
  void retainRegistered(Registry registry) {
    for (State s : byId.values()) {
      if (!s.paused() && !registry.contains(s.sandboxId)) {
        remove(s.id);
      }
    }
  }

  /** The tenant's sandboxes known to the E2B face, running or paused. */
  List<State> ofTenant(String tenant) {
    return byId.values().stream().filter(s -> s.tenant.equals(tenant)).toList();
  }

  /** The E2B state whose running sandbox has registry id {@code sandboxId}, if any. */
  @Nullable State byRunning(String sandboxId) {
    for (State s : byId.values()) {
      if (!s.paused() && s.sandboxId.equals(sandboxId)) {
        return s;
      }
    }
    return null;
  }
}
