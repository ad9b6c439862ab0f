package io.agentnest.server.tenancy;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Tenants and their API keys in a SQLite file ({@code AGENTNEST_HOME/server/tenants.db}): the store
 * of one machine, the default.
 */
public final class SqliteTenantStore implements TenantStore {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Connection db;
  private final Clock clock;

  private final Path file;

  /**
   * Rows read by {@link #authenticate} and {@link #find}, so a request does not wait on the one
   * SQLite connection (under 200 concurrent clients that monitor was the longest queue of the
   * server). Only rows that exist are kept (an unknown id is read every time and rate-limited as a
   * failed authentication), so both maps are bounded by the store's own size. A change this store
   * makes clears them at once; a change another process makes (`agentnest tenant revoke` while the
   * server runs) is seen through SQLite's data_version at most {@link #RECHECK_NANOS} later.
   */
  private final ConcurrentHashMap<String, KeyRow> keys = new ConcurrentHashMap<>();

  private final ConcurrentHashMap<String, Tenant> tenantRows = new ConcurrentHashMap<>();
  private volatile long checkedAt = System.nanoTime();
  private long dataVersion;

  /** How stale the caches may be toward another process's change: 100 ms. */
  static final long RECHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  private record KeyRow(
      String tenant, String hash, @Nullable String expires, boolean revoked, KeyRole role) {}

  private SqliteTenantStore(Connection db, Clock clock, Path file) {
    this.db = db;
    this.clock = clock;
    this.file = file;
    this.dataVersion = readDataVersion();
  }

  private long readDataVersion() {
    try (Statement s = db.createStatement();
        ResultSet r = s.executeQuery("PRAGMA data_version")) {
      return r.next() ? r.getLong(1) : 0;
    } catch (SQLException e) {
      throw storeError(e);
    }
  }

  /** Drops the cached rows when another connection has committed since the last look. */
  private void recheck() {
    if (System.nanoTime() - checkedAt < RECHECK_NANOS) {
      return;
    }
    synchronized (this) {
      if (System.nanoTime() - checkedAt < RECHECK_NANOS) {
        return;
      }
      long v = readDataVersion();
      if (v != dataVersion) {
        dataVersion = v;
        forget();
      }
      checkedAt = System.nanoTime();
    }
  }

  private void forget() {
    keys.clear();
    tenantRows.clear();
  }

  /**
   * Which store this is, for the label a server writes on its sandboxes: a server adopts only the
   * sandboxes of its own store (two servers with two homes on one engine never take each other's).
   */
  @Override
  public String storeId() {
    return Keys.sha256(file.toString()).substring(0, 16);
  }

  /** Opens (creating) the store at {@code file}. */
  public static SqliteTenantStore open(Path file, Clock clock) {
    try {
      Path parent = file.toAbsolutePath().getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      Connection c = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
      TenantSchema.create(c);
      return new SqliteTenantStore(c, clock, file.toAbsolutePath().normalize());
    } catch (SQLException | IOException e) {
      throw new IllegalStateException(
          "cannot open the tenant store " + file + ": " + e.getMessage() + "; check AGENTNEST_HOME",
          e);
    }
  }

  /** Records that sandbox {@code id} is {@code tenant}'s (idempotent). */
  @Override
  public synchronized void recordSandbox(String tenant, String id) {
    try (PreparedStatement p =
        db.prepareStatement(
            "INSERT OR IGNORE INTO sandbox_owners (id, tenant, created) VALUES (?, ?, ?)")) {
      p.setString(1, id);
      p.setString(2, tenant);
      p.setString(3, clock.instant().toString());
      p.executeUpdate();
    } catch (SQLException e) {
      throw new IllegalStateException("cannot record sandbox " + id + ": " + e.getMessage(), e);
    }
  }

  /** The ids of {@code tenant}'s sandboxes, alive or gone, newest first, at most {@code max}. */
  @Override
  public synchronized List<String> sandboxIds(String tenant, int max) {
    List<String> out = new ArrayList<>();
    try (PreparedStatement p =
        db.prepareStatement(
            "SELECT id FROM sandbox_owners WHERE tenant = ? ORDER BY created DESC LIMIT ?")) {
      p.setString(1, tenant);
      p.setInt(2, max);
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getString(1));
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException(
          "cannot read the sandboxes of tenant " + tenant + ": " + e.getMessage(), e);
    }
    return out;
  }

  /** Adds a tenant and issues its first key; the key is returned once and never stored. */
  @Override
  public synchronized String add(Tenant tenant, @Nullable Instant expires) {
    TenantStore.checkName(tenant.name());
    if (find(tenant.name()).isPresent()) {
      throw new IllegalArgumentException(
          "tenant '" + tenant.name() + "' exists: pick another name, or `tenant key` it");
    }
    try (PreparedStatement p =
        db.prepareStatement(
            "INSERT INTO tenants (name, max_sandboxes, memory_bytes, cpus, rps, max_sandbox_memory,"
                + " allow_hosts, created, executions_per_minute, approvals, max_snapshots,"
                + " snapshot_bytes, max_pids, approver_role_required) VALUES (?, ?, ?, ?, ?, ?, ?,"
                + " ?, ?, ?, ?, ?, ?, ?)")) {
      p.setString(1, tenant.name());
      p.setInt(2, tenant.maxSandboxes());
      p.setLong(3, tenant.memoryBytes());
      p.setDouble(4, tenant.cpus());
      p.setInt(5, tenant.requestsPerSecond());
      if (tenant.maxSandboxMemoryBytes() == null) {
        p.setNull(6, Types.INTEGER);
      } else {
        p.setLong(6, tenant.maxSandboxMemoryBytes());
      }
      p.setString(7, tenant.allowHosts() == null ? null : toJson(tenant.allowHosts()));
      p.setString(8, clock.instant().toString());
      p.setInt(9, tenant.executionsPerMinute());
      p.setString(10, tenant.approvals());
      p.setObject(11, tenant.maxSnapshots(), Types.INTEGER);
      p.setObject(12, tenant.snapshotBytes(), Types.INTEGER);
      p.setObject(13, tenant.maxPids(), Types.INTEGER);
      p.setInt(14, tenant.approverRoleRequired() ? 1 : 0);
      p.executeUpdate();
    } catch (SQLException e) {
      throw storeError(e);
    }
    return issueKey(tenant.name(), expires);
  }

  /**
   * Sets whether only approver keys answer {@code tenant}'s approval questions; false when there is
   * no such tenant.
   */
  @Override
  public synchronized boolean requireApproverRole(String tenant, boolean required) {
    try (PreparedStatement p =
        db.prepareStatement("UPDATE tenants SET approver_role_required = ? WHERE name = ?")) {
      p.setInt(1, required ? 1 : 0);
      p.setString(2, tenant);
      int n = p.executeUpdate();
      forget();
      return n > 0;
    } catch (SQLException e) {
      throw storeError(e);
    }
  }

  /** A new key of {@code role} for an existing tenant; returned once. */
  @Override
  public synchronized String issueKey(String tenant, @Nullable Instant expires, KeyRole role) {
    if (find(tenant).isEmpty()) {
      throw new IllegalArgumentException(
          "no tenant '" + tenant + "': add it first with `agentnest tenant add " + tenant + "`");
    }
    Keys.NewKey k = Keys.fresh();
    String id = k.id();
    String key = k.key();
    try (PreparedStatement p =
        db.prepareStatement(
            "INSERT INTO api_keys (id, tenant, hash, created, expires, revoked, role)"
                + " VALUES (?, ?, ?, ?, ?, NULL, ?)")) {
      p.setString(1, id);
      p.setString(2, tenant);
      p.setString(3, Keys.sha256(key));
      p.setString(4, clock.instant().toString());
      p.setString(5, expires == null ? null : expires.toString());
      p.setString(6, role.label());
      p.executeUpdate();
    } catch (SQLException e) {
      throw storeError(e);
    }
    return key;
  }

  /** Checks a presented key against the stored hashes. */
  @Override
  public Check authenticate(String presented) {
    var m = Keys.match(presented);
    if (!m.matches()) {
      return new Check(null, null, Refusal.MALFORMED);
    }
    String id = m.group(1);
    recheck();
    KeyRow row = keys.get(id);
    if (row == null) {
      row = loadKey(id);
      if (row == null) {
        return new Check(null, id, Refusal.UNKNOWN);
      }
    }
    byte[] stored = row.hash().getBytes(StandardCharsets.US_ASCII);
    byte[] given = Keys.sha256(presented).getBytes(StandardCharsets.US_ASCII);
    if (!MessageDigest.isEqual(stored, given)) {
      return new Check(null, id, Refusal.UNKNOWN);
    }
    if (row.revoked()) {
      return new Check(null, id, Refusal.REVOKED);
    }
    String expires = row.expires();
    if (expires != null && !clock.instant().isBefore(Instant.parse(expires))) {
      return new Check(null, id, Refusal.EXPIRED);
    }
    return new Check(find(row.tenant()).orElse(null), id, null, row.role());
  }

  /**
   * Whether tenant key {@code id} still authenticates: it exists, is not revoked and has not
   * expired. Asked on every request a console session or an E2B access token makes, since both were
   * obtained with a key and must end with it. Served from the row cache, which a revocation through
   * this store clears at once and another process's within {@link #RECHECK_NANOS}.
   */
  @Override
  public boolean keyActive(String id) {
    recheck();
    KeyRow row = keys.get(id);
    if (row == null) {
      row = loadKey(id);
      if (row == null) {
        return false;
      }
    }
    String expires = row.expires();
    return !row.revoked()
        && (expires == null || clock.instant().isBefore(Instant.parse(expires)))
        && find(row.tenant()).isPresent();
  }

  private synchronized @Nullable KeyRow loadKey(String id) {
    try (PreparedStatement p =
        db.prepareStatement(
            "SELECT tenant, hash, expires, revoked, role FROM api_keys WHERE id = ?")) {
      p.setString(1, id);
      try (ResultSet r = p.executeQuery()) {
        if (!r.next()) {
          return null;
        }
        KeyRow row =
            new KeyRow(
                r.getString(1),
                r.getString(2),
                r.getString(3),
                r.getString(4) != null,
                KeyRole.parse(r.getString(5)));
        keys.put(id, row);
        return row;
      }
    } catch (SQLException e) {
      throw storeError(e);
    }
  }

  /**
   * Revokes a key by its id (or the whole key), a tenant's or an admin key; false when there is no
   * such key.
   */
  @Override
  public synchronized boolean revoke(String keyOrId) {
    var m = Keys.match(keyOrId);
    String id = m.matches() ? m.group(1) : keyOrId;
    int n = 0;
    for (String table : List.of("api_keys", "admin_keys")) {
      try (PreparedStatement p =
          db.prepareStatement(
              "UPDATE " + table + " SET revoked = ? WHERE id = ? AND revoked IS NULL")) {
        p.setString(1, clock.instant().toString());
        p.setString(2, id);
        n += p.executeUpdate();
      } catch (SQLException e) {
        throw storeError(e);
      }
    }
    forget();
    return n > 0;
  }

  /**
   * Issues an admin key: the web console signed in with it shows every tenant's sandboxes,
   * approvals and audit, and answers any tenant's questions (as {@code console:admin}). It is no
   * tenant's key: the API refuses it. Returned once; only its hash is kept, like a tenant key's.
   */
  @Override
  public synchronized String issueAdminKey() {
    Keys.NewKey key = Keys.fresh();
    try (PreparedStatement p =
        db.prepareStatement("INSERT INTO admin_keys VALUES (?, ?, ?, NULL)")) {
      p.setString(1, key.id());
      p.setString(2, Keys.sha256(key.key()));
      p.setString(3, clock.instant().toString());
      p.executeUpdate();
    } catch (SQLException e) {
      throw storeError(e);
    }
    return key.key();
  }

  /** Checks a presented admin key: null when it is a valid one, else why not. */
  @Override
  public synchronized @Nullable Refusal checkAdminKey(String presented) {
    var m = Keys.match(presented);
    if (!m.matches()) {
      return Refusal.MALFORMED;
    }
    try (PreparedStatement p =
        db.prepareStatement("SELECT hash, revoked FROM admin_keys WHERE id = ?")) {
      p.setString(1, m.group(1));
      try (ResultSet r = p.executeQuery()) {
        if (!r.next()
            || !MessageDigest.isEqual(
                r.getString(1).getBytes(StandardCharsets.US_ASCII),
                Keys.sha256(presented).getBytes(StandardCharsets.US_ASCII))) {
          return Refusal.UNKNOWN;
        }
        return r.getString(2) != null ? Refusal.REVOKED : null;
      }
    } catch (SQLException e) {
      throw storeError(e);
    }
  }

  /** Whether admin key {@code id} exists and is not revoked. */
  @Override
  public synchronized boolean adminKeyActive(String id) {
    try (PreparedStatement p =
        db.prepareStatement("SELECT 1 FROM admin_keys WHERE id = ? AND revoked IS NULL")) {
      p.setString(1, id);
      try (ResultSet r = p.executeQuery()) {
        return r.next();
      }
    } catch (SQLException e) {
      throw storeError(e);
    }
  }

  /** The admin keys (ids and dates, never secrets); their tenant is shown as {@code *admin}. */
  @Override
  public synchronized List<ApiKey> adminKeys() {
    List<ApiKey> out = new ArrayList<>();
    try (Statement s = db.createStatement();
        ResultSet r =
            s.executeQuery("SELECT id, created, revoked FROM admin_keys ORDER BY created")) {
      while (r.next()) {
        out.add(
            new ApiKey(
                r.getString(1),
                "*admin",
                Instant.parse(r.getString(2)),
                null,
                instant(r.getString(3))));
      }
    } catch (SQLException e) {
      throw storeError(e);
    }
    return out;
  }

  /** A tenant by name. */
  @Override
  public Optional<Tenant> find(String name) {
    recheck();
    Tenant t = tenantRows.get(name);
    return t != null ? Optional.of(t) : loadTenant(name);
  }

  private synchronized Optional<Tenant> loadTenant(String name) {
    try (PreparedStatement p = db.prepareStatement("SELECT * FROM tenants WHERE name = ?")) {
      p.setString(1, name);
      try (ResultSet r = p.executeQuery()) {
        if (!r.next()) {
          return Optional.empty();
        }
        Tenant t = tenant(r);
        tenantRows.put(name, t);
        return Optional.of(t);
      }
    } catch (SQLException e) {
      throw storeError(e);
    }
  }

  /** Every tenant, by name. */
  @Override
  public synchronized List<Tenant> tenants() {
    List<Tenant> out = new ArrayList<>();
    try (Statement s = db.createStatement();
        ResultSet r = s.executeQuery("SELECT * FROM tenants ORDER BY name")) {
      while (r.next()) {
        out.add(tenant(r));
      }
    } catch (SQLException e) {
      throw storeError(e);
    }
    return out;
  }

  /** Every key of a tenant (ids and dates, never secrets). */
  @Override
  public synchronized List<ApiKey> keys(String tenant) {
    List<ApiKey> out = new ArrayList<>();
    try (PreparedStatement p =
        db.prepareStatement(
            "SELECT id, tenant, created, expires, revoked, role FROM api_keys WHERE tenant = ?"
                + " ORDER BY created")) {
      p.setString(1, tenant);
      try (ResultSet r = p.executeQuery()) {
        while (r.next()) {
          out.add(
              new ApiKey(
                  r.getString(1),
                  r.getString(2),
                  Instant.parse(r.getString(3)),
                  instant(r.getString(4)),
                  instant(r.getString(5)),
                  KeyRole.parse(r.getString(6))));
        }
      }
    } catch (SQLException e) {
      throw storeError(e);
    }
    return out;
  }

  private static @Nullable Instant instant(@Nullable String s) {
    return s == null ? null : Instant.parse(s);
  }

  private static Tenant tenant(ResultSet r) throws SQLException {
    long cap = r.getLong("max_sandbox_memory");
    Long maxMemory = r.wasNull() ? null : cap;
    String hosts = r.getString("allow_hosts");
    Long snapshots = nullableLong(r, "max_snapshots");
    return new Tenant(
        r.getString("name"),
        r.getInt("max_sandboxes"),
        r.getLong("memory_bytes"),
        r.getDouble("cpus"),
        r.getInt("rps"),
        maxMemory,
        hosts == null ? null : fromJson(hosts),
        r.getInt("executions_per_minute"),
        r.getString("approvals"),
        snapshots == null ? null : Math.toIntExact(snapshots),
        nullableLong(r, "snapshot_bytes"),
        nullableLong(r, "max_pids"),
        r.getInt("approver_role_required") != 0);
  }

  private static @Nullable Long nullableLong(ResultSet r, String column) throws SQLException {
    long v = r.getLong(column);
    return r.wasNull() ? null : v;
  }

  private static String toJson(List<String> hosts) {
    try {
      return JSON.writeValueAsString(hosts);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  private static List<String> fromJson(String hosts) {
    try {
      return JSON.readValue(hosts, new TypeReference<List<String>>() {});
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("the tenant store holds a bad allow_hosts value", e);
    }
  }

  private static IllegalStateException storeError(SQLException e) {
    return new IllegalStateException("tenant store: " + e.getMessage(), e);
  }

  @Override
  public synchronized void close() {
    try {
      db.close();
    } catch (SQLException e) {
      throw storeError(e);
    }
  }
}
