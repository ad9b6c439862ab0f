package io.agentnest.server.store;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** The E2B face's per-sandbox state in PostgreSQL (one row per E2B id, written on change). */
final class PostgresE2bRecords implements E2bRecords {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Database db;

  PostgresE2bRecords(Database db) {
    this.db = db;
  }

  @Override
  public void save(Record r) {
    try (Connection c = db.connection();
        PreparedStatement p =
            c.prepareStatement(
                "INSERT INTO e2b_sandboxes (id, tenant, template_id, metadata, started, sandbox_id,"
                    + " envd_token, traffic_token, keys) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    + " ON CONFLICT (id) DO UPDATE SET sandbox_id = excluded.sandbox_id,"
                    + " envd_token = excluded.envd_token, traffic_token = excluded.traffic_token,"
                    + " keys = excluded.keys")) {
      p.setString(1, r.id());
      p.setString(2, r.tenant());
      p.setString(3, r.templateId());
      p.setObject(4, JSON.writeValueAsString(r.metadata()), Types.OTHER);
      p.setObject(5, PostgresTenantStore.at(r.started()));
      p.setString(6, r.sandboxId());
      p.setString(7, r.envdToken());
      p.setString(8, r.trafficToken());
      p.setArray(9, c.createArrayOf("text", r.keys().toArray()));
      p.executeUpdate();
    } catch (SQLException e) {
      throw db.unavailable(e);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("E2B metadata is not JSON: " + e.getOriginalMessage(), e);
    }
  }

  @Override
  public @Nullable Record load(String id) {
    try (Connection c = db.connection();
        PreparedStatement p =
            c.prepareStatement(
                "SELECT tenant, template_id, metadata::text, started, sandbox_id, envd_token,"
                    + " traffic_token, keys FROM e2b_sandboxes WHERE id = ?")) {
      p.setString(1, id);
      try (ResultSet r = p.executeQuery()) {
        if (!r.next()) {
          return null;
        }
        Array keys = r.getArray(8);
        return new Record(
            id,
            r.getString(1),
            r.getString(2),
            JSON.readValue(r.getString(3), new TypeReference<Map<String, String>>() {}),
            r.getObject(4, OffsetDateTime.class).toInstant(),
            r.getString(5),
            r.getString(6),
            r.getString(7),
            new HashSet<>(Arrays.asList((String[]) keys.getArray())));
      }
    } catch (SQLException e) {
      throw db.unavailable(e);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("the store holds bad E2B metadata for " + id, e);
    }
  }

  @Override
  public void remove(String id) {
    try (Connection c = db.connection();
        PreparedStatement p = c.prepareStatement("DELETE FROM e2b_sandboxes WHERE id = ?")) {
      p.setString(1, id);
      p.executeUpdate();
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
  }
}
