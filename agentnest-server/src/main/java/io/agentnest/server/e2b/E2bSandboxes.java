package io.agentnest.server.e2b;

import io.agentnest.server.http.Tokens;
import io.agentnest.server.service.Registry;
import io.agentnest.server.store.E2bRecords;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * What the E2B face keeps per sandbox beside the registry's entry: the template name the client
 * asked for, its metadata, the two access tokens the SDK sends to the sandbox's services, the
 * process table and the code contexts. The registry stays the owner: state whose sandbox is gone
 * (killed through /v1, expired) is dropped when next looked up or at the next create.
 *
 * <p>The access tokens are bound to the API keys they were handed to (create, get, connect, resume,
 * fork): they are honoured only while every one of those keys is active, so revoking (or the expiry
 * of) a key ends the tokens its holder saw at the next envd call. The next hand-out to an active
 * key of the tenant issues new tokens.
 *
 * <p>With the shared store, what a restarted server needs of each running sandbox (template,
 * metadata, tokens and the keys they went to) is kept in {@link E2bRecords} and read back the first
 * time the sandbox is asked for after the restart, so its clients' tokens keep working.
 */
public final class E2bSandboxes {
  /** The envd version this server speaks: picks the SDK's code paths (see docs/e2b.md). */
  static final String ENVD_VERSION = "0.5.7";

  /**
   * A sandbox's access tokens and the ids of the API keys that received them.
   *
   * @param keys never empty once handed out; empty only before the first hand-out
   */
  record Grant(String envdToken, String trafficToken, Set<String> keys) {
    Grant {
      keys = Set.copyOf(keys);
    }

    static Grant fresh() {
      return new Grant(Tokens.random(), Tokens.random(), Set.of());
    }
  }

  private final Map<String, State> byId = new ConcurrentHashMap<>();
  private final Predicate<String> keyActive;
  private final E2bRecords records;

  /** Makes the state of a kept record again, when its sandbox runs here; null otherwise. */
  private volatile Function<E2bRecords.Record, @Nullable State> revive = r -> null;

  /**
   * @param keyActive whether an API key (by id) is still active (not revoked, not expired)
   */
  public E2bSandboxes(Predicate<String> keyActive) {
    this(keyActive, E2bRecords.NONE);
  }

  /**
   * @param keyActive whether an API key (by id) is still active (not revoked, not expired)
   * @param records where the state of running sandboxes outlives this server (the shared store)
   */
  public E2bSandboxes(Predicate<String> keyActive, E2bRecords records) {
    this.keyActive = keyActive;
    this.records = records;
  }

  /** How a kept record becomes state again: the E2B face knows the registry and its threads. */
  void reviveWith(Function<E2bRecords.Record, @Nullable State> reviver) {
    this.revive = reviver;
  }

  /**
   * The tokens to hand to the holder of key {@code keyId}: the current ones, now bound to that key
   * too, or new ones when a key that received the current ones is no longer active (its holder
   * keeps the old tokens, which must stop working).
   */
  Grant issue(State s, String keyId) {
    synchronized (s) {
      Grant g = s.grant;
      Set<String> keys = new HashSet<>(g.keys());
      if (!keys.stream().allMatch(keyActive)) {
        g = Grant.fresh();
        keys.clear();
      }
      boolean changed = keys.add(keyId) || g != s.grant;
      g = new Grant(g.envdToken(), g.trafficToken(), keys);
      s.grant = g;
      if (changed) {
        save(s);
      }
      return g;
    }
  }

  /**
   * Whether the tokens of {@code s} still stand: handed out, and every key that received them is
   * active. Asked on every envd call, so revocation takes effect at the token holder's next call.
   */
  boolean honoured(State s) {
    Grant g = s.grant;
    return !g.keys().isEmpty() && g.keys().stream().allMatch(keyActive);
  }

  /** One sandbox's E2B state. */
  static final class State {
    /** The state of a kept record whose sandbox runs here again, as {@code processes} runs it. */
    static State revived(E2bRecords.Record r, E2bProcesses processes) {
      State s = new State(r.id(), r.tenant(), r.templateId(), r.metadata(), r.started(), processes);
      s.sandboxId = r.sandboxId();
      s.grant = new Grant(r.envdToken(), r.trafficToken(), r.keys());
      return s;
    }

    /** The id the E2B client knows: the sandbox's id at create, kept across pause and resume. */
    final String id;

    final String tenant;
    final String templateId;
    final Map<String, String> metadata;

    /** The current access tokens and the keys they were handed to. */
    volatile Grant grant = Grant.fresh();

    final Instant started;

    /** The registry's id of the running sandbox (a resumed sandbox is a restored copy). */
    volatile String sandboxId;

    volatile E2bProcesses processes;

    /** The tenant's snapshot that holds it while paused, else null. */
    volatile @Nullable String pausedAs;

    /** True while it is being resumed: its restored copy takes its place in the quota. */
    volatile boolean resuming;

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
    save(s);
  }

  /** Adds {@code s} unless the sandbox has state already; returns the one that stays. */
  State putIfAbsent(State s) {
    State had = byId.putIfAbsent(s.id, s);
    return had != null ? had : s;
  }

  /**
   * The state of E2B id {@code id}: this server's, or (after a restart) what the store kept of a
   * sandbox this server runs again, with the tokens its clients hold.
   */
  @Nullable State get(String id) {
    State s = byId.get(id);
    if (s != null) {
      return s;
    }
    E2bRecords.Record r = records.load(id);
    State revived = r == null ? null : revive.apply(r);
    return revived == null ? null : putIfAbsent(revived);
  }

  /**
   * Keeps what a restarted server needs of a running sandbox; a paused one is not kept (it lives in
   * this server's memory until the store holds paused sandboxes too).
   */
  void save(State s) {
    if (s.paused()) {
      return;
    }
    Grant g = s.grant;
    records.save(
        new E2bRecords.Record(
            s.id,
            s.tenant,
            s.templateId,
            s.metadata,
            s.started,
            s.sandboxId,
            g.envdToken(),
            g.trafficToken(),
            g.keys()));
  }

  /** A paused sandbox is not kept beyond this server (yet): its running copy is gone. */
  void unkeep(State s) {
    records.remove(s.id);
  }

  void remove(String id) {
    State s = byId.remove(id);
    if (s != null) {
      s.processes.cancelAll();
    }
    records.remove(id);
  }

  /** Stops every command started through the E2B face (the server is closing). */
  public void cancelAll() {
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

  /** Paused and not being resumed: it counts in its tenant's sandboxes quota. */
  private static boolean heldPaused(State s) {
    return s.paused() && !s.resuming;
  }

  /** How many sandboxes each tenant has paused through the E2B face. */
  public Map<String, Integer> pausedByTenant() {
    Map<String, Integer> n = new TreeMap<>();
    for (State s : byId.values()) {
      if (heldPaused(s)) {
        n.merge(s.tenant, 1, Integer::sum);
      }
    }
    return n;
  }

  /** How many of the tenant's sandboxes are paused (they count in its sandboxes quota). */
  public int paused(String tenant) {
    int n = 0;
    for (State s : byId.values()) {
      if (s.tenant.equals(tenant) && heldPaused(s)) {
        n++;
      }
    }
    return n;
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
