package io.agentnest.server.store;

import io.agentnest.server.tenancy.QuotaLedger;
import io.agentnest.server.tenancy.Tenant;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * Quota holds in PostgreSQL: one row per sandbox or create under way, of any server. A hold is
 * taken in a transaction that first locks the tenant's row ({@code SELECT ... FOR UPDATE}), then
 * sums the tenant's live holds and inserts the new one only when it fits: two servers' racing
 * creates for one tenant are counted one after the other, so together they never pass a limit. Rows
 * past their expiry no longer count (a dead server's sandboxes have expired by then too).
 */
final class PostgresQuota implements QuotaLedger {
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

  /** CPUs in thousandths, so that sums are exact (0.1 + 0.2 must fit a quota of 0.3). */
  static long millicpus(double cpus) {
    return Math.round(cpus * 1000);
  }
}
