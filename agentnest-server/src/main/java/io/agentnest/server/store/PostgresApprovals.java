package io.agentnest.server.store;

import io.agentnest.server.approvals.ApprovalBoard;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The approvals queue in PostgreSQL. An answer given on any server is written to the question's row
 * and announced with {@code NOTIFY agentnest_approvals} in the same transaction; every server
 * listens on a connection of its own and hands the answers of its own questions to their waiting
 * sandboxes at once. After its listening connection broke, a server reads the answers it may have
 * missed before it listens again, so no answer is lost to a restart of the database.
 */
final class PostgresApprovals implements ApprovalBoard {
  private static final Logger LOG = LoggerFactory.getLogger(PostgresApprovals.class);

  static final String CHANNEL = "agentnest_approvals";

  /** How long one wait for notifications lasts: also how long {@link #close} may take. */
  static final int WAIT_MILLIS = 500;

  /** Waits between attempts to listen again after the connection broke. */
  static final long RETRY_MILLIS = 1_000;

  private final Database db;
  private volatile boolean running = true;
  private volatile @Nullable Thread listener;

  PostgresApprovals(Database db) {
    this.db = db;
  }

  @Override
  public void post(Question q) {
    try (Connection c = db.connection();
        PreparedStatement p =
            c.prepareStatement(
                "INSERT INTO approvals (id, tenant, sandbox_id, kind, target, detail, requested,"
                    + " expires) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")) {
      p.setString(1, q.id());
      p.setString(2, q.tenant());
      p.setString(3, q.sandboxId());
      p.setString(4, q.kind());
      p.setString(5, q.target());
      p.setString(6, q.detail());
      p.setObject(7, PostgresTenantStore.at(q.requestedAt()));
      p.setObject(8, PostgresTenantStore.at(q.expires()));
      p.executeUpdate();
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
  }

  @Override
  public List<Question> waiting(@Nullable String tenant, Instant now) {
    String sql =
        "SELECT id, tenant, sandbox_id, kind, target, detail, requested, expires FROM approvals"
            + " WHERE decided IS NULL AND expires > ?"
            + (tenant == null ? "" : " AND tenant = ?")
            + " ORDER BY requested";
    try (Connection c = db.connection();
        PreparedStatement p = c.prepareStatement(sql)) {
      p.setObject(1, PostgresTenantStore.at(now));
      if (tenant != null) {
        p.setString(2, tenant);
      }
      List<Question> out = new ArrayList<>();
      try (ResultSet r = p.executeQuery()) {
        while (r.next()) {
          out.add(
              new Question(
                  r.getString(1),
                  r.getString(2),
                  r.getString(3),
                  r.getString(4),
                  r.getString(5),
                  r.getString(6),
                  r.getObject(7, OffsetDateTime.class).toInstant(),
                  r.getObject(8, OffsetDateTime.class).toInstant()));
        }
      }
      return out;
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
  }

  @Override
  public boolean answer(Answer a, @Nullable String tenant, Instant now) {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try {
        int n;
        try (PreparedStatement p =
            c.prepareStatement(
                "UPDATE approvals SET approve = ?, reason = ?, decided_by = ?, decided = ?"
                    + " WHERE id = ? AND decided IS NULL AND expires > ?"
                    + (tenant == null ? "" : " AND tenant = ?"))) {
          p.setBoolean(1, a.approve());
          p.setString(2, a.reason());
          p.setString(3, a.by());
          p.setObject(4, PostgresTenantStore.at(now));
          p.setString(5, a.id());
          p.setObject(6, PostgresTenantStore.at(now));
          if (tenant != null) {
            p.setString(7, tenant);
          }
          n = p.executeUpdate();
        }
        if (n > 0) {
          // Delivered when the answer commits, never before it is readable.
          try (PreparedStatement p = c.prepareStatement("SELECT pg_notify(?, ?)")) {
            p.setString(1, CHANNEL);
            p.setString(2, a.id());
            p.execute();
          }
        }
        c.commit();
        return n > 0;
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      }
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
  }

  @Override
  public void withdraw(String id) {
    try (Connection c = db.connection();
        PreparedStatement p = c.prepareStatement("DELETE FROM approvals WHERE id = ?")) {
      p.setString(1, id);
      p.executeUpdate();
    } catch (SQLException e) {
      throw db.unavailable(e);
    }
  }

  @Override
  public synchronized void deliverTo(Waiting w) {
    if (listener != null) {
      throw new IllegalStateException("the approvals board delivers to one server only");
    }
    Thread t = new Thread(() -> listen(w), "agentnest-approvals-listener");
    t.setDaemon(true);
    listener = t;
    t.start();
  }

  private void listen(Waiting w) {
    while (running) {
      try (Connection c = db.dedicated()) {
        try (Statement s = c.createStatement()) {
          s.execute("LISTEN " + CHANNEL);
        }
        // Answers given while this server was not listening (the first start, a broken link).
        for (String id : w.waitingIds()) {
          deliver(c, id, w);
        }
        PGConnection pg = c.unwrap(PGConnection.class);
        while (running) {
          PGNotification[] got = pg.getNotifications(WAIT_MILLIS);
          if (got == null) {
            continue;
          }
          Set<String> mine = w.waitingIds();
          for (PGNotification n : got) {
            if (mine.contains(n.getParameter())) {
              deliver(c, n.getParameter(), w);
            }
          }
        }
      } catch (SQLException | RuntimeException e) {
        if (!running) {
          return;
        }
        LOG.warn(
            "listening for approval answers failed ({}); listening again in {} ms",
            ConnectErrors.problem(e),
            RETRY_MILLIS);
        try {
          TimeUnit.MILLISECONDS.sleep(RETRY_MILLIS);
        } catch (InterruptedException stop) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  private static void deliver(Connection c, String id, Waiting w) throws SQLException {
    try (PreparedStatement p =
        c.prepareStatement(
            "SELECT approve, reason, decided_by FROM approvals WHERE id = ? AND decided IS NOT"
                + " NULL")) {
      p.setString(1, id);
      try (ResultSet r = p.executeQuery()) {
        if (r.next()) {
          w.answered(new Answer(id, r.getBoolean(1), r.getString(2), r.getString(3)));
        }
      }
    }
  }

  @Override
  public void close() {
    running = false;
    Thread t = listener;
    if (t != null) {
      try {
        // One wait for notifications at most, then the loop sees running is false.
        t.join(WAIT_MILLIS * 4L);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
