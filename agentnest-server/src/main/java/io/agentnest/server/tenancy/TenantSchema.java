package io.agentnest.server.tenancy;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * The tenant store's tables, made on first open; a store made by an older version gets the columns
 * added since, with defaults that keep its tenants and keys doing what they did.
 */
final class TenantSchema {
  private TenantSchema() {}

  static void create(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("PRAGMA busy_timeout = 5000");
      s.execute(
          "CREATE TABLE IF NOT EXISTS tenants (name TEXT PRIMARY KEY, max_sandboxes INTEGER NOT"
              + " NULL, memory_bytes INTEGER NOT NULL, cpus REAL NOT NULL, rps INTEGER NOT NULL,"
              + " max_sandbox_memory INTEGER, allow_hosts TEXT, created TEXT NOT NULL,"
              + " executions_per_minute INTEGER NOT NULL DEFAULT "
              + Tenant.DEFAULT_EXECUTIONS_PER_MINUTE
              + ")");
      // A store made before the executions quota or the approvals floor existed gets the
      // columns with their defaults.
      List<String> columns = columnsOf(s, "tenants");
      if (!columns.contains("executions_per_minute")) {
        s.execute(
            "ALTER TABLE tenants ADD COLUMN executions_per_minute INTEGER NOT NULL DEFAULT "
                + Tenant.DEFAULT_EXECUTIONS_PER_MINUTE);
      }
      if (!columns.contains("approvals")) {
        s.execute("ALTER TABLE tenants ADD COLUMN approvals TEXT");
      }
      // Null: the server's policy.max_snapshots, max_snapshot_bytes, max_pids.
      for (String col : List.of("max_snapshots", "snapshot_bytes", "max_pids")) {
        if (!columns.contains(col)) {
          s.execute("ALTER TABLE tenants ADD COLUMN " + col + " INTEGER");
        }
      }
      if (!columns.contains("approver_role_required")) {
        s.execute(
            "ALTER TABLE tenants ADD COLUMN approver_role_required INTEGER NOT NULL DEFAULT 0");
      }
      s.execute(
          "CREATE TABLE IF NOT EXISTS api_keys (id TEXT PRIMARY KEY, tenant TEXT NOT NULL"
              + " REFERENCES tenants(name), hash TEXT NOT NULL, created TEXT NOT NULL, expires"
              + " TEXT, revoked TEXT, role TEXT)");
      // Keys stored before roles have none: they read as agent keys and keep working as before.
      if (!columnsOf(s, "api_keys").contains("role")) {
        s.execute("ALTER TABLE api_keys ADD COLUMN role TEXT");
      }
      // Which tenant each sandbox belonged to, kept after it is gone: the tenant-wide audit
      // query reads a destroyed sandbox's records by it.
      s.execute(
          "CREATE TABLE IF NOT EXISTS sandbox_owners (id TEXT PRIMARY KEY, tenant TEXT NOT NULL,"
              + " created TEXT NOT NULL)");
      s.execute(
          "CREATE INDEX IF NOT EXISTS sandbox_owners_tenant ON sandbox_owners(tenant, created)");
      s.execute(
          "CREATE TABLE IF NOT EXISTS admin_keys (id TEXT PRIMARY KEY, hash TEXT NOT NULL,"
              + " created TEXT NOT NULL, revoked TEXT)");
    }
  }

  private static List<String> columnsOf(Statement s, String table) throws SQLException {
    List<String> columns = new ArrayList<>();
    try (ResultSet cols = s.executeQuery("PRAGMA table_info(" + table + ")")) {
      while (cols.next()) {
        columns.add(cols.getString("name"));
      }
    }
    return columns;
  }
}
