package io.agentnest.server.store;

import io.agentnest.server.config.StoreConfig;
import io.agentnest.server.tenancy.ApiKey;
import io.agentnest.server.tenancy.KeyRole;
import io.agentnest.server.tenancy.Keys;
import io.agentnest.server.tenancy.QuotaLedger;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Clock;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Tenants, API keys, admin keys and sandbox owners in PostgreSQL, shared by every server that names
 * the same database: a key made or revoked through one is seen by the next request to any other
 * (nothing is cached). Every value reaches the database as a statement parameter.
 */
public final class PostgresTenantStore implements TenantStore {
  /** Connections per server: requests wait at most {@link Database#CONNECT_SECONDS} for one. */
  static final int POOL_SIZE = 10;

  private static final Pattern KEY_ID = Pattern.compile("[0-9a-f]{16}");

  /** What the sandbox-owner table accepts as an id (the engines' ids are shorter). */
  private static final int MAX_ID = 200;

  private final Database db;
  private final Clock clock;
  private final PostgresQuota quota;
  private final String server;

  /**
   * @param server which server this is among those sharing the database (its AGENTNEST_HOME): the
   *     label on its sandboxes names it, so that a restarted server adopts only its own
   */
  PostgresTenantStore(Database db, Clock clock, String server) {
    this.db = db;
    this.clock = clock;
    this.server = server;
    this.quota = new PostgresQuota(db, clock);
  }

  /**
   * Connects to the database of {@code c} (password from {@code env}), brings its schema up to date
   * and returns the store.
   *
   * @throws IllegalArgumentException naming the problem and its fix, within a few seconds
   */
  public static PostgresTenantStore open(
      StoreConfig.Postgres c, Map<String, String> env, Clock clock) {
    return new PostgresTenantStore(Database.open(c, env, POOL_SIZE), clock, "");
  }

  /**
   * The database and this server: two servers on one engine that share a database never adopt each
   * other's sandboxes (each sandbox's channel is held by the server that made it until ownership is
   * leased), while a server restarted on its own home adopts what it left running.
   */
  @Override
  public String storeId() {
    return Keys.sha256(db.identity() + "#" + server).substring(0, 16);
  }

  @Override
  public QuotaLedger quota() {
    return quota;
  }

  @Override
  public void recordSandbox(String tenant, String id) {
    if (id.length() > MAX_ID || id.indexOf('\0') >= 0) {
      throw new IllegalArgumentException("sandbox id is not one an engine makes: " + id.length());
    }
    update(
        "INSERT INTO sandbox_owners (id, tenant, created) VALUES (?, ?, ?)"
            + " ON CONFLICT (id) DO NOTHING",
        id,
        tenant,
        now());
  }

  @Override
  public List<String> sandboxIds(String tenant, int max) {
    if (!named(tenant)) {
      return List.of();
    }
    return query(
        "SELECT id FROM sandbox_owners WHERE tenant = ? ORDER BY created DESC LIMIT ?",
        r -> r.getString(1),
        tenant,
        max);
  }

  @Override
  public String add(Tenant tenant, @Nullable Instant expires) {
    TenantStore.checkName(tenant.name());
    Keys.NewKey key = Keys.fresh();
    // The tenant and its first key in one transaction: a tenant never exists without its key.
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try {
        try (PreparedStatement p =
            c.prepareStatement(
                "INSERT INTO tenants (name, max_sandboxes, memory_bytes, cpus, rps,"
                    + " max_sandbox_memory, allow_hosts, created, executions_per_minute, approvals,"
                    + " max_snapshots, snapshot_bytes, max_pids, approver_role_required)"
                    + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    + " ON CONFLICT (name) DO NOTHING")) {
          p.setString(1, tenant.name());
          p.setInt(2, tenant.maxSandboxes());
          p.setLong(3, tenant.memoryBytes());
          p.setDouble(4, tenant.cpus());
          p.setInt(5, tenant.requestsPerSecond());
          p.setObject(6, tenant.maxSandboxMemoryBytes(), Types.BIGINT);
          List<String> hosts = tenant.allowHosts();
          if (hosts == null) {
            p.setNull(7, Types.ARRAY);
          } else {
            hosts.forEach(PostgresTenantStore::checkText);
            p.setArray(7, c.createArrayOf("text", hosts.toArray()));
          }
          p.setObject(8, now());
          p.setInt(9, tenant.executionsPerMinute());
          p.setString(10, tenant.approvals());
          p.setObject(11, tenant.maxSnapshots(), Types.INTEGER);
          p.setObject(12, tenant.snapshotBytes(), Types.BIGINT);
          p.setObject(13, tenant.maxPids(), Types.BIGINT);
          p.setBoolean(14, tenant.approverRoleRequired());
          if (p.executeUpdate() == 0) {
            throw new IllegalArgumentException(
                "tenant '" + tenant.name() + "' exists: pick another name, or `tenant key` it");
          }
        }
        insertKey(c, key, tenant.name(), expires, KeyRole.AGENT);
        c.commit();
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      }
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
    return key.key();
  }

  @Override
  public boolean requireApproverRole(String tenant, boolean required) {
    return update("UPDATE tenants SET approver_role_required = ? WHERE name = ?", required, tenant)
        > 0;
  }

  @Override
  public String issueKey(String tenant, @Nullable Instant expires, KeyRole role) {
    if (find(tenant).isEmpty()) {
      throw new IllegalArgumentException(
          "no tenant '" + tenant + "': add it first with `agentnest tenant add " + tenant + "`");
    }
    Keys.NewKey key = Keys.fresh();
    try (Connection c = db.connection()) {
      insertKey(c, key, tenant, expires, role);
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
    return key.key();
  }

  private void insertKey(
      Connection c, Keys.NewKey key, String tenant, @Nullable Instant expires, KeyRole role)
      throws SQLException {
    try (PreparedStatement p =
        c.prepareStatement(
            "INSERT INTO api_keys (id, tenant, hash, created, expires, revoked, role)"
                + " VALUES (?, ?, ?, ?, ?, NULL, ?)")) {
      p.setString(1, key.id());
      p.setString(2, tenant);
      p.setString(3, Keys.sha256(key.key()));
      p.setObject(4, now());
      p.setObject(5, expires == null ? null : at(expires), Types.TIMESTAMP_WITH_TIMEZONE);
      p.setString(6, role.label());
      p.executeUpdate();
    }
  }

  private record KeyRow(
      String tenant, String hash, @Nullable Instant expires, boolean revoked, KeyRole role) {}

  private @Nullable KeyRow keyRow(String id) {
    List<KeyRow> rows =
        query(
            "SELECT tenant, hash, expires, revoked IS NOT NULL, role FROM api_keys WHERE id = ?",
            r ->
                new KeyRow(
                    r.getString(1),
                    r.getString(2),
                    instant(r.getObject(3, OffsetDateTime.class)),
                    r.getBoolean(4),
                    KeyRole.parse(r.getString(5))),
            id);
    return rows.isEmpty() ? null : rows.get(0);
  }

  @Override
  public Check authenticate(String presented) {
    var m = Keys.match(presented);
    if (!m.matches()) {
      return new Check(null, null, Refusal.MALFORMED);
    }
    String id = m.group(1);
    KeyRow row = keyRow(id);
    if (row == null || !Keys.matches(row.hash(), presented)) {
      return new Check(null, id, Refusal.UNKNOWN);
    }
    if (row.revoked()) {
      return new Check(null, id, Refusal.REVOKED);
    }
    Instant expires = row.expires();
    if (expires != null && !clock.instant().isBefore(expires)) {
      return new Check(null, id, Refusal.EXPIRED);
    }
    return new Check(find(row.tenant()).orElse(null), id, null, row.role());
  }

  @Override
  public boolean keyActive(String id) {
    if (!KEY_ID.matcher(id).matches()) {
      return false;
    }
    KeyRow row = keyRow(id);
    if (row == null) {
      return false;
    }
    Instant expires = row.expires();
    return !row.revoked()
        && (expires == null || clock.instant().isBefore(expires))
        && find(row.tenant()).isPresent();
  }

  @Override
  public boolean revoke(String keyOrId) {
    var m = Keys.match(keyOrId);
    String id = m.matches() ? m.group(1) : keyOrId;
    if (!KEY_ID.matcher(id).matches()) {
      return false; // not the shape of any key id: there is no such key
    }
    OffsetDateTime now = now();
    return update("UPDATE api_keys SET revoked = ? WHERE id = ? AND revoked IS NULL", now, id)
            + update("UPDATE admin_keys SET revoked = ? WHERE id = ? AND revoked IS NULL", now, id)
        > 0;
  }

  @Override
  public String issueAdminKey() {
    Keys.NewKey key = Keys.fresh();
    update(
        "INSERT INTO admin_keys (id, hash, created, revoked) VALUES (?, ?, ?, NULL)",
        key.id(),
        Keys.sha256(key.key()),
        now());
    return key.key();
  }

  @Override
  public @Nullable Refusal checkAdminKey(String presented) {
    var m = Keys.match(presented);
    if (!m.matches()) {
      return Refusal.MALFORMED;
    }
    List<Boolean> revoked =
        query(
            "SELECT hash, revoked IS NOT NULL FROM admin_keys WHERE id = ?",
            r -> Keys.matches(r.getString(1), presented) ? r.getBoolean(2) : null,
            m.group(1));
    if (revoked.isEmpty() || revoked.get(0) == null) {
      return Refusal.UNKNOWN;
    }
    return revoked.get(0) ? Refusal.REVOKED : null;
  }

  @Override
  public boolean adminKeyActive(String id) {
    return KEY_ID.matcher(id).matches()
        && !query("SELECT 1 FROM admin_keys WHERE id = ? AND revoked IS NULL", r -> 1, id)
            .isEmpty();
  }

  @Override
  public List<ApiKey> adminKeys() {
    return query(
        "SELECT id, created, revoked FROM admin_keys ORDER BY created",
        r ->
            new ApiKey(
                r.getString(1),
                "*admin",
                r.getObject(2, OffsetDateTime.class).toInstant(),
                null,
                instant(r.getObject(3, OffsetDateTime.class))));
  }

  /** Whether {@code name} could name a tenant: no tenant has a name the store refuses. */
  private static boolean named(String name) {
    try {
      TenantStore.checkName(name);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  @Override
  public Optional<Tenant> find(String name) {
    if (!named(name)) {
      return Optional.empty();
    }
    List<Tenant> t =
        query("SELECT * FROM tenants WHERE name = ?", PostgresTenantStore::tenant, name);
    return t.isEmpty() ? Optional.empty() : Optional.of(t.get(0));
  }

  @Override
  public List<Tenant> tenants() {
    return query("SELECT * FROM tenants ORDER BY name", PostgresTenantStore::tenant);
  }

  @Override
  public List<ApiKey> keys(String tenant) {
    if (!named(tenant)) {
      return List.of();
    }
    return query(
        "SELECT id, tenant, created, expires, revoked, role FROM api_keys WHERE tenant = ?"
            + " ORDER BY created",
        r ->
            new ApiKey(
                r.getString(1),
                r.getString(2),
                r.getObject(3, OffsetDateTime.class).toInstant(),
                instant(r.getObject(4, OffsetDateTime.class)),
                instant(r.getObject(5, OffsetDateTime.class)),
                KeyRole.parse(r.getString(6))),
        tenant);
  }

  private static Tenant tenant(ResultSet r) throws SQLException {
    Array hosts = r.getArray("allow_hosts");
    Integer snapshots = (Integer) r.getObject("max_snapshots");
    return new Tenant(
        r.getString("name"),
        r.getInt("max_sandboxes"),
        r.getLong("memory_bytes"),
        r.getDouble("cpus"),
        r.getInt("rps"),
        (Long) r.getObject("max_sandbox_memory"),
        hosts == null ? null : Arrays.asList((String[]) hosts.getArray()),
        r.getInt("executions_per_minute"),
        r.getString("approvals"),
        snapshots,
        (Long) r.getObject("snapshot_bytes"),
        (Long) r.getObject("max_pids"),
        r.getBoolean("approver_role_required"));
  }

  /** PostgreSQL's text cannot hold NUL: say so instead of letting the driver fail. */
  private static void checkText(String s) {
    if (s.indexOf('\0') >= 0) {
      throw new IllegalArgumentException(
          "a value holds a NUL character, which the store refuses: remove it");
    }
  }

  interface Row<T> {
    @Nullable T read(ResultSet r) throws SQLException;
  }

  /** Runs a query with {@code args} as parameters; null rows are left out. */
  <T> List<T> query(String sql, Row<T> row, Object... args) {
    try (Connection c = db.connection();
        PreparedStatement p = c.prepareStatement(sql)) {
      bind(p, args);
      List<T> out = new ArrayList<>();
      try (ResultSet r = p.executeQuery()) {
        while (r.next()) {
          T v = row.read(r);
          if (v != null) {
            out.add(v);
          }
        }
      }
      return out;
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
  }

  private int update(String sql, Object... args) {
    try (Connection c = db.connection();
        PreparedStatement p = c.prepareStatement(sql)) {
      bind(p, args);
      return p.executeUpdate();
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
  }

  private static void bind(PreparedStatement p, Object... args) throws SQLException {
    for (int i = 0; i < args.length; i++) {
      if (args[i] instanceof String s) {
        checkText(s);
      }
      p.setObject(i + 1, args[i]);
    }
  }

  private OffsetDateTime now() {
    return at(clock.instant());
  }

  static OffsetDateTime at(Instant i) {
    return i.atOffset(ZoneOffset.UTC);
  }

  private static @Nullable Instant instant(@Nullable OffsetDateTime t) {
    return t == null ? null : t.toInstant();
  }

  @Override
  public void close() {
    db.close();
  }
}
