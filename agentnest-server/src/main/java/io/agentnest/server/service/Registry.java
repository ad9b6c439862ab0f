package io.agentnest.server.service;

import io.agentnest.Sandbox;
import io.agentnest.Sizes;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.Wire;
import io.agentnest.server.tenancy.QuotaLedger;
import io.agentnest.server.tenancy.Tenant;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import java.util.function.ToIntFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sandboxes this server made, each owned by one tenant, and the per-tenant quota count. A
 * create first reserves its share under the lock (so two racing creates cannot both pass a quota of
 * one), then starts the sandbox outside it, then commits or releases the reservation.
 */
public final class Registry {
  private static final Logger LOG = LoggerFactory.getLogger(Registry.class);
  private static final SecureRandom RANDOM = new SecureRandom();

  public record Entry(
      String tenant,
      Sandbox sandbox,
      String image,
      long memoryBytes,
      double cpus,
      Instant created,
      Set<String> sessions) {}

  record Reservation(String id, String tenant, long memoryBytes, double cpus) {}

  private final Map<String, Entry> byId = new ConcurrentHashMap<>();
  private final Map<String, List<Reservation>> pending = new HashMap<>();
  private final Clock clock;

  private volatile BiConsumer<String, String> owners = (tenant, id) -> {};

  /** Sandboxes a tenant holds outside this registry (E2B-paused ones), counted in its quota. */
  private volatile ToIntFunction<String> held = tenant -> 0;

  /** The quota use other servers of the deployment count too (none for one server alone). */
  private volatile QuotaLedger ledger = QuotaLedger.NONE;

  /** How long a create's hold lasts before its sandbox is known: the longest a sandbox lives. */
  private volatile Duration longestLife = Duration.ofDays(1);

  public Registry(Clock clock) {
    this.clock = clock;
  }

  /**
   * Reserves room for one sandbox, or a 429 naming the quota that is full and its use: first in
   * this server's count (under the lock, so two racing creates here cannot both pass a quota of
   * one), then in the shared count of every server (outside the lock: a slow database must not hold
   * up this server's listings).
   */
  Reservation reserve(Tenant t, long memoryBytes, double cpus) {
    Reservation r;
    int heldHere;
    synchronized (this) {
      reapExpired();
      Wire.Usage u = usage(t.name());
      if (u.sandboxes() + 1 > t.maxSandboxes()) {
        throw quota("sandboxes", t.maxSandboxes(), u.sandboxes(), fix("sandboxes"));
      }
      if (u.memoryBytes() + memoryBytes > t.memoryBytes()) {
        throw quota("memory_bytes", t.memoryBytes(), u.memoryBytes(), fix("memory_bytes"));
      }
      if (u.cpus() + cpus > t.cpus() + 1e-9) {
        throw quota("cpus", t.cpus(), u.cpus(), fix("cpus"));
      }
      r = new Reservation(holdId(), t.name(), memoryBytes, cpus);
      pending.computeIfAbsent(t.name(), k -> new ArrayList<>()).add(r);
      heldHere = held.applyAsInt(t.name());
    }
    QuotaLedger.Full full;
    try {
      full = ledger.hold(t, r.id(), memoryBytes, cpus, heldHere, clock.instant().plus(longestLife));
    } catch (RuntimeException e) {
      forget(r);
      throw e;
    }
    if (full != null) {
      forget(r);
      throw quota(full.quota(), full.limit(), full.used(), fix(full.quota()));
    }
    return r;
  }

  private static String holdId() {
    byte[] raw = new byte[12];
    RANDOM.nextBytes(raw);
    return "hold_" + HexFormat.of().formatHex(raw);
  }

  private static String fix(String quota) {
    return switch (quota) {
      case "memory_bytes" -> "ask for less memory (memoryBytes) or destroy a sandbox";
      case "cpus" -> "ask for fewer cpus or destroy a sandbox";
      default -> "destroy one of your sandboxes";
    };
  }

  void commit(Reservation r, Entry e) {
    synchronized (this) {
      forget(r);
      byId.put(e.sandbox().id(), e);
    }
    try {
      ledger.bind(r.id(), e.sandbox().id(), e.sandbox().expiresAt());
    } catch (RuntimeException ex) {
      // The sandbox runs: the create succeeded. Its hold stays under the create's id and lapses
      // with max_ttl, so the quota is never undercounted, only given back late.
      LOG.warn("binding the quota hold of sandbox {} failed: {}", e.sandbox().id(), ex.toString());
    }
    owners.accept(e.tenant(), e.sandbox().id());
  }

  /**
   * Counts this server's sandboxes in {@code shared} as well, so the servers sharing it hold every
   * tenant to one quota; a create's hold lasts at most {@code longest} (the policy's max_ttl)
   * should this server die before its sandbox is known.
   */
  public void shareQuota(QuotaLedger shared, Duration longest) {
    this.ledger = shared;
    this.longestLife = longest;
  }

  /** Where the servers sharing a store count quota use together ({@link QuotaLedger#NONE}: not). */
  QuotaLedger ledger() {
    return ledger;
  }

  /** The sandbox's TTL was extended: its room in the shared quota lasts as long. */
  void extended(Entry e) {
    ledger.extend(e.sandbox().id(), e.sandbox().expiresAt());
  }

  /**
   * Counts {@code held} sandboxes of a tenant in its {@code sandboxes} quota as well: an E2B-paused
   * sandbox is a snapshot, not a container, but its client may resume it at any time, so it holds
   * its place (a tenant limited to 3 must not hold 6 paused and 1 running).
   */
  public void countHeld(ToIntFunction<String> held) {
    this.held = held;
  }

  /** Tells {@code recorder} the tenant of every sandbox committed or adopted from now on. */
  public void recordOwners(BiConsumer<String, String> recorder) {
    owners = recorder;
  }

  /** Gives back the room of a create that failed. */
  void release(Reservation r) {
    forget(r);
    ledger.release(r.id());
  }

  private synchronized void forget(Reservation r) {
    List<Reservation> list = pending.get(r.tenant());
    if (list != null) {
      list.remove(r);
    }
  }

  /** Current use of a tenant: its live sandboxes, held (paused) ones and creates under way. */
  public synchronized Wire.Usage usage(String tenant) {
    int n = held.applyAsInt(tenant);
    long mem = 0;
    double cpus = 0;
    for (Entry e : byId.values()) {
      if (e.tenant().equals(tenant)) {
        n++;
        mem += e.memoryBytes();
        cpus += e.cpus();
      }
    }
    for (Reservation r : pending.getOrDefault(tenant, List.of())) {
      n++;
      mem += r.memoryBytes();
      cpus += r.cpus();
    }
    return new Wire.Usage(n, mem, cpus);
  }

  /**
   * A tenant's use as it shows to the tenant: on every server sharing the store (and its paused
   * sandboxes here), or this server's alone.
   */
  public Wire.Usage tenantUsage(String tenant) {
    QuotaLedger.Use shared = ledger.use(tenant, clock.instant());
    if (shared == null) {
      return usage(tenant);
    }
    return new Wire.Usage(
        shared.sandboxes() + held.applyAsInt(tenant), shared.memoryBytes(), shared.cpus());
  }

  /** The tenant's sandbox by id; another tenant's or an unknown id is the same 404. */
  public Entry get(String tenant, String id) {
    Entry e = byId.get(id);
    if (e == null || !e.tenant().equals(tenant)) {
      throw ApiException.notFound("sandbox '" + Escape.id(id) + "'");
    }
    if (!clock.instant().isBefore(e.sandbox().expiresAt())) {
      remove(id);
      throw ApiException.notFound("sandbox '" + Escape.id(id) + "' (expired)");
    }
    return e;
  }

  /** Any tenant's sandbox by id (the admin console): 404 when unknown or expired. */
  public Entry getAny(String id) {
    Entry e = byId.get(id);
    if (e == null) {
      throw ApiException.notFound("sandbox '" + Escape.id(id) + "'");
    }
    return get(e.tenant(), id);
  }

  /** How many sandboxes each tenant holds on this server now. */
  public Map<String, Integer> countsByTenant() {
    Map<String, Integer> n = new TreeMap<>();
    for (Entry e : byId.values()) {
      n.merge(e.tenant(), 1, Integer::sum);
    }
    return n;
  }

  /** Every tenant's sandboxes (the admin console), oldest first. */
  public synchronized List<Entry> all() {
    reapExpired();
    return byId.values().stream().sorted((a, b) -> a.created().compareTo(b.created())).toList();
  }

  public synchronized List<Entry> list(String tenant) {
    reapExpired();
    return byId.values().stream()
        .filter(e -> e.tenant().equals(tenant))
        .sorted((a, b) -> a.created().compareTo(b.created()))
        .toList();
  }

  /** Forgets and destroys; false when it was not there. */
  public boolean remove(String id) {
    Entry e = byId.remove(id);
    if (e == null) {
      return false;
    }
    try {
      e.sandbox().destroy();
    } catch (RuntimeException ex) {
      LOG.warn("destroying sandbox {} failed: {}", id, ex.toString());
    }
    try {
      ledger.release(id);
    } catch (RuntimeException ex) {
      // The hold lapses with the sandbox's expiry: the quota comes back then at the latest.
      LOG.warn("giving back the quota of sandbox {} failed: {}", id, ex.toString());
    }
    return true;
  }

  /** Takes over a sandbox a previous server left running: it counts against its tenant's quota. */
  public void adopt(Entry e) {
    byId.putIfAbsent(e.sandbox().id(), e);
    ledger.adopt(e.tenant(), e.sandbox().id(), e.memoryBytes(), e.cpus(), e.sandbox().expiresAt());
    owners.accept(e.tenant(), e.sandbox().id());
  }

  public boolean contains(String id) {
    return byId.containsKey(id);
  }

  /** Lets go of every sandbox without destroying it (a restart: the next server adopts them). */
  public void detachAll() {
    for (String id : List.copyOf(byId.keySet())) {
      Entry e = byId.remove(id);
      if (e != null) {
        try {
          e.sandbox().detach();
        } catch (RuntimeException ex) {
          LOG.warn("detaching sandbox {} failed: {}", id, ex.toString());
        }
      }
    }
  }

  /** Destroys every sandbox (server shutdown). */
  public void destroyAll() {
    for (String id : List.copyOf(byId.keySet())) {
      remove(id);
    }
  }

  public int size() {
    return byId.size();
  }

  // Sandboxes past their TTL have been destroyed by their own expiry timer; drop them from the
  // count so that the quota recovers.
  private void reapExpired() {
    Instant now = clock.instant();
    for (Entry e : List.copyOf(byId.values())) {
      if (!now.isBefore(e.sandbox().expiresAt())) {
        remove(e.sandbox().id());
      }
    }
  }

  /** A 429 naming a full quota, its limit and its use (sizes as people write them: 2g). */
  static ApiException quota(String quota, Object limit, Object used, String fix) {
    // The exact numbers stay in the details.
    boolean bytes = quota.endsWith("_bytes") && limit instanceof Long && used instanceof Long;
    String shownLimit = bytes ? size((Long) limit) : String.valueOf(limit);
    String shownUsed = bytes ? size((Long) used) : String.valueOf(used);
    return new ApiException(
        429,
        ErrorCode.QUOTA,
        "quota '" + quota + "' is full: limit " + shownLimit + ", in use " + shownUsed,
        fix,
        Map.of("quota", quota, "limit", limit, "used", used));
  }

  /** 2g, 512m, 1.1k: exact where the size is round, one decimal otherwise. */
  static String size(long bytes) {
    if (bytes < 1024) {
      return bytes + " bytes";
    }
    String exact = Sizes.format(bytes);
    if (!exact.equals(Long.toString(bytes))) {
      return exact;
    }
    String[] units = {"k", "m", "g", "t"};
    double v = bytes;
    int i = -1;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return String.format(Locale.ROOT, "%.1f%s", v, units[i]);
  }
}
