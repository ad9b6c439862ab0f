package io.agentnest.server.store;

import io.agentnest.server.tenancy.Keys;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import org.jspecify.annotations.Nullable;

/**
 * Console sessions in PostgreSQL, keyed by the SHA-256 of the session id: what the database holds
 * cannot be replayed as a cookie. Read on every console request of any server (a session ended on
 * one server is ended on all at once).
 */
final class PostgresSessionBook implements SessionBook {
  private final Database db;

  PostgresSessionBook(Database db) {
    this.db = db;
  }

  @Override
  public void put(Entry e, Duration idle, int max) {
    try (Connection c = db.connection()) {
      try (PreparedStatement p =
          c.prepareStatement("DELETE FROM console_sessions WHERE seen < ?")) {
        p.setObject(1, PostgresTenantStore.at(e.created().minus(idle)));
        p.executeUpdate();
      }
      // Past the bound the least recently seen go, as on one server.
      try (PreparedStatement p =
          c.prepareStatement(
              "DELETE FROM console_sessions WHERE id_hash IN (SELECT id_hash FROM console_sessions"
                  + " ORDER BY seen DESC OFFSET ?)")) {
        p.setInt(1, Math.max(0, max - 1));
        p.executeUpdate();
      }
      try (PreparedStatement p =
          c.prepareStatement(
              "INSERT INTO console_sessions (id_hash, tenant, key_id, role, csrf, created, seen)"
                  + " VALUES (?, ?, ?, ?, ?, ?, ?)")) {
        p.setString(1, Keys.sha256(e.id()));
        p.setString(2, e.tenant());
        p.setString(3, e.keyId());
        p.setString(4, e.role());
        p.setString(5, e.csrf());
        p.setObject(6, PostgresTenantStore.at(e.created()));
        p.setObject(7, PostgresTenantStore.at(e.seen()));
        p.executeUpdate();
      }
    } catch (SQLException ex) {
      throw db.unavailable(ex);
    }
  }

  @Override
  public @Nullable Entry get(String id) {
    try (Connection c = db.connection();
        PreparedStatement p =
            c.prepareStatement(
                "SELECT tenant, key_id, role, csrf, created, seen FROM console_sessions"
                    + " WHERE id_hash = ?")) {
      p.setString(1, Keys.sha256(id));
      try (ResultSet r = p.executeQuery()) {
        if (!r.next()) {
          return null;
        }
        return new Entry(
            id,
            r.getString(1),
            r.getString(2),
            r.getString(3),
            r.getString(4),
            r.getObject(5, OffsetDateTime.class).toInstant(),
            r.getObject(6, OffsetDateTime.class).toInstant());
      }
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
  }

  @Override
  public void touch(String id, Instant seen) {
    try (Connection c = db.connection();
        PreparedStatement p =
            c.prepareStatement("UPDATE console_sessions SET seen = ? WHERE id_hash = ?")) {
      p.setObject(1, PostgresTenantStore.at(seen));
      p.setString(2, Keys.sha256(id));
      p.executeUpdate();
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
  }

  @Override
  public void remove(String id) {
    try (Connection c = db.connection();
        PreparedStatement p =
            c.prepareStatement("DELETE FROM console_sessions WHERE id_hash = ?")) {
      p.setString(1, Keys.sha256(id));
      p.executeUpdate();
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
  }
}
