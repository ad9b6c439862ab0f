package io.agentnest.server.store;

import io.agentnest.server.tenancy.QuotaLedger;
import io.agentnest.server.tenancy.Tenant;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import org.jspecify.annotations.Nullable;

/**
 * Quota holds in PostgreSQL: one row per sandbox or create under way, of any server. A hold is
 * taken in a transaction that first locks the tenant's row ({@code SELECT ... FOR UPDATE}), then
 * sums the tenant's live holds and inserts the new one only when it fits: two servers' racing
 * creates for one tenant are counted one after the other, so together they never pass a limit. Rows
 * past their expiry no longer count (a dead server's sandboxes have expired by then too).
 */
final class PostgresQuota implements QuotaLedger {
  /** The executions_per_minute window. */
  static final Duration WINDOW = Duration.ofMinutes(1);

  private final Database db;
  private final Clock clock;

  PostgresQuota(Database db, Clock clock) {
    this.db = db;
    this.clock = clock;
  }

  @Override
  public @Nullable Full hold(
      Tenant t, String holdId, long memoryBytes, double cpus, int extra, Instant expires) {
    long millicpus = millicpus(cpus);
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try {
        Full full = tryHold(c, t, holdId, memoryBytes, millicpus, extra, expires);
        c.commit();
        return full;
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      }
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
  }

  private @Nullable Full tryHold(
      Connection c,
      Tenant t,
      String holdId,
      long memoryBytes,
      long millicpus,
      int extra,
      Instant expires)
      throws SQLException {
    try (PreparedStatement lock =
        c.prepareStatement("SELECT 1 FROM tenants WHERE name = ? FOR UPDATE")) {
      lock.setString(1, t.name());
      try (ResultSet r = lock.executeQuery()) {
        if (!r.next()) {
          // Removed by another server since the request authenticated: nothing to count against.
          return new Full("sandboxes", 0, 0);
        }
      }
    }
    long n;
    long mem;
    long milli;
    try (PreparedStatement sum =
        c.prepareStatement(
            "SELECT count(*), coalesce(sum(memory_bytes), 0), coalesce(sum(millicpus), 0)"
                + " FROM quota_holds WHERE tenant = ? AND expires > ?")) {
      sum.setString(1, t.name());
      sum.setObject(2, PostgresTenantStore.at(clock.instant()));
      try (ResultSet r = sum.executeQuery()) {
        r.next();
        n = r.getLong(1) + extra;
        mem = r.getLong(2);
        milli = r.getLong(3);
      }
    }
    if (n + 1 > t.maxSandboxes()) {
      return new Full("sandboxes", t.maxSandboxes(), (int) n);
    }
    if (mem + memoryBytes > t.memoryBytes()) {
      return new Full("memory_bytes", t.memoryBytes(), mem);
    }
    if (milli + millicpus > millicpus(t.cpus())) {
      return new Full("cpus", t.cpus(), milli / 1000.0);
    }
    try (PreparedStatement insert =
        c.prepareStatement(
            "INSERT INTO quota_holds (id, tenant, memory_bytes, millicpus, created, expires)"
                + " VALUES (?, ?, ?, ?, ?, ?)")) {
      insert.setString(1, holdId);
      insert.setString(2, t.name());
      insert.setLong(3, memoryBytes);
      insert.setLong(4, millicpus);
      insert.setObject(5, PostgresTenantStore.at(clock.instant()));
      insert.setObject(6, PostgresTenantStore.at(expires));
      insert.executeUpdate();
    }
    return null;
  }

  @Override
  public void bind(String holdId, String sandboxId, Instant expires) {
    update("UPDATE quota_holds SET id = ?, expires = ? WHERE id = ?", sandboxId, expires, holdId);
  }

  @Override
  public void adopt(
      String tenant, String sandboxId, long memoryBytes, double cpus, Instant expires) {
    try (Connection c = db.connection();
        PreparedStatement p =
            c.prepareStatement(
                "INSERT INTO quota_holds (id, tenant, memory_bytes, millicpus, created, expires)"
                    + " SELECT ?, name, ?, ?, ?, ? FROM tenants WHERE name = ?"
                    + " ON CONFLICT (id) DO UPDATE SET expires = excluded.expires")) {
      p.setString(1, sandboxId);
      p.setLong(2, memoryBytes);
      p.setLong(3, millicpus(cpus));
      p.setObject(4, PostgresTenantStore.at(clock.instant()));
      p.setObject(5, PostgresTenantStore.at(expires));
      p.setString(6, tenant);
      p.executeUpdate();
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
  }

  @Override
  public void extend(String sandboxId, Instant expires) {
    update("UPDATE quota_holds SET expires = ? WHERE id = ?", null, expires, sandboxId);
  }

  @Override
  public void release(String id) {
    try (Connection c = db.connection();
        PreparedStatement p = c.prepareStatement("DELETE FROM quota_holds WHERE id = ?")) {
      p.setString(1, id);
      p.executeUpdate();
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
  }

  private void update(String sql, @Nullable String newId, Instant expires, String id) {
    try (Connection c = db.connection();
        PreparedStatement p = c.prepareStatement(sql)) {
      int i = 1;
      if (newId != null) {
        p.setString(i++, newId);
      }
      p.setObject(i++, PostgresTenantStore.at(expires));
      p.setString(i, id);
      p.executeUpdate();
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
  }

  @Override
  public boolean sharesExecutions() {
    return true;
  }

  @Override
  public @Nullable Busy startExecution(Tenant t, Instant now) {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try {
        Busy busy = tryStart(c, t, now);
        c.commit();
        return busy;
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      }
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
  }

  private static @Nullable Busy tryStart(Connection c, Tenant t, Instant now) throws SQLException {
    // The same lock as a create's: one tenant's starts are counted one after the other.
    try (PreparedStatement lock =
        c.prepareStatement("SELECT 1 FROM tenants WHERE name = ? FOR UPDATE")) {
      lock.setString(1, t.name());
      try (ResultSet r = lock.executeQuery()) {
        if (!r.next()) {
          return new Busy(0, 1); // removed since the request authenticated
        }
      }
    }
    Instant windowStart = now.minus(WINDOW);
    try (PreparedStatement old =
        c.prepareStatement("DELETE FROM execution_starts WHERE tenant = ? AND started <= ?")) {
      old.setString(1, t.name());
      old.setObject(2, PostgresTenantStore.at(windowStart));
      old.executeUpdate();
    }
    try (PreparedStatement count =
        c.prepareStatement(
            "SELECT count(*), min(started) FROM execution_starts WHERE tenant = ?")) {
      count.setString(1, t.name());
      try (ResultSet r = count.executeQuery()) {
        r.next();
        int used = r.getInt(1);
        if (used >= t.executionsPerMinute()) {
          Instant oldest = r.getObject(2, OffsetDateTime.class).toInstant();
          long millis = Duration.between(now, oldest.plus(WINDOW)).toMillis();
          return new Busy(used, Math.max(1, (millis + 999) / 1000));
        }
      }
    }
    try (PreparedStatement insert =
        c.prepareStatement("INSERT INTO execution_starts (tenant, started) VALUES (?, ?)")) {
      insert.setString(1, t.name());
      insert.setObject(2, PostgresTenantStore.at(now));
      insert.executeUpdate();
    }
    return null;
  }

  @Override
  public int executionsUsed(String tenant, Instant now) {
    try (Connection c = db.connection();
        PreparedStatement p =
            c.prepareStatement(
                "SELECT count(*) FROM execution_starts WHERE tenant = ? AND started > ?")) {
      p.setString(1, tenant);
      p.setObject(2, PostgresTenantStore.at(now.minus(WINDOW)));
      try (ResultSet r = p.executeQuery()) {
        r.next();
        return r.getInt(1);
      }
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
  }

  @Override
  public Use use(String tenant, Instant now) {
    try (Connection c = db.connection();
        PreparedStatement p =
            c.prepareStatement(
                "SELECT count(*), coalesce(sum(memory_bytes), 0), coalesce(sum(millicpus), 0)"
                    + " FROM quota_holds WHERE tenant = ? AND expires > ?")) {
      p.setString(1, tenant);
      p.setObject(2, PostgresTenantStore.at(now));
      try (ResultSet r = p.executeQuery()) {
        r.next();
        return new Use(r.getInt(1), r.getLong(2), r.getLong(3) / 1000.0);
      }
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
  }

  /** CPUs in thousandths, so that sums are exact (0.1 + 0.2 must fit a quota of 0.3). */
  static long millicpus(double cpus) {
    return Math.round(cpus * 1000);
  }
}
