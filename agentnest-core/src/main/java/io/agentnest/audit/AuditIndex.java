package io.agentnest.audit;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The SQLite index ({@code index.db}), see docs/audit.md. {@code events}: one row per record with
 * the columns queries filter on and the record's JSON, so a query never reads {@code events.jsonl};
 * {@code sandboxes}: sandbox ids as small integers (a 64-character key in an index is what makes
 * inserts slow); {@code search}: the lower-cased type and data of each record, clustered by (time,
 * seq), so a free-text scan reads about 100 bytes a record. WAL mode: readers do not block the
 * writer. One connection writes (the log's writer thread), one reads (queries, synchronised).
 */
final class AuditIndex implements AutoCloseable {
  /** A row to insert. {@code text} is the line without its two hash fields. */
  @SuppressWarnings("ArrayRecordComponent") // internal, never compared
  record Row(
      long seq,
      long timeMicros,
      String type,
      @Nullable String sandbox,
      @Nullable String decision,
      long offset,
      String text,
      String search,
      byte[] prev,
      byte[] hash) {

    static Row of(AuditEvent e, String line, long offset) {
      return new Row(
          e.seq(),
          micros(e.time()),
          e.type(),
          e.sandboxId(),
          e.decision(),
          offset,
          AuditJson.searchText(line),
          searchKey(e.type(), AuditJson.dataJson(line)),
          AuditJson.unhex(e.prevHash()),
          AuditJson.unhex(e.hash()));
    }
  }

  /** What free text is matched against: type and data JSON, lower-cased. */
  static String searchKey(String type, String dataJson) {
    return (type + " " + dataJson).toLowerCase(Locale.ROOT);
  }

  /**
   * Version of the table layout, kept in {@code meta}; another one is dropped and rebuilt. 2:
   * {@code off} is a position across rotated files ({@link AuditSegments#position}).
   */
  static final String LAYOUT = "2";

  private static final Logger LOG = LoggerFactory.getLogger(AuditIndex.class);

  /** Largest IN list for a sandbox prefix; more matching ids use a subquery. */
  private static final int MAX_IDS = 200;

  private final Connection write;
  private final Connection read;
  private final PreparedStatement insert;
  private final PreparedStatement insertSearch;
  private final PreparedStatement insertSandbox;
  private final PreparedStatement sandboxId;
  private final Map<String, Long> sandboxIds = new HashMap<>();

  AuditIndex(Path db) throws SQLException {
    String url = "jdbc:sqlite:" + db.toAbsolutePath();
    write = DriverManager.getConnection(url, props());
    try (Statement st = write.createStatement()) {
      st.execute("PRAGMA journal_mode=WAL");
      st.execute("PRAGMA synchronous=NORMAL");
      st.execute("PRAGMA temp_store=MEMORY");
      st.execute("PRAGMA cache_size=-65536");
      st.execute("PRAGMA wal_autocheckpoint=10000");
      dropOtherLayout(st);
      st.execute(
          "CREATE TABLE IF NOT EXISTS events("
              + "seq INTEGER PRIMARY KEY, time INTEGER NOT NULL, type TEXT NOT NULL,"
              + " sb INTEGER, decision TEXT, off INTEGER NOT NULL, text TEXT NOT NULL,"
              + " prev BLOB NOT NULL, hash BLOB NOT NULL)");
      st.execute("CREATE INDEX IF NOT EXISTS events_type ON events(type, time)");
      st.execute("CREATE INDEX IF NOT EXISTS events_sandbox ON events(sb, time)");
      st.execute(
          "CREATE INDEX IF NOT EXISTS events_decision ON events(decision, time)"
              + " WHERE decision IS NOT NULL");
      st.execute(
          "CREATE TABLE IF NOT EXISTS sandboxes(id INTEGER PRIMARY KEY, name TEXT NOT NULL"
              + " UNIQUE)");
      st.execute(
          "CREATE TABLE IF NOT EXISTS search(time INTEGER NOT NULL, seq INTEGER NOT NULL,"
              + " s TEXT NOT NULL, PRIMARY KEY(time, seq)) WITHOUT ROWID");
      st.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)");
      st.execute("INSERT OR IGNORE INTO meta(key, value) VALUES('layout', '" + LAYOUT + "')");
    }
    write.setAutoCommit(false);
    write.commit();
    insert =
        write.prepareStatement(
            "INSERT OR IGNORE INTO events(seq, time, type, sb, decision, off, text, prev, hash)"
                + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    insertSearch =
        write.prepareStatement("INSERT OR IGNORE INTO search(time, seq, s) VALUES (?, ?, ?)");
    insertSandbox = write.prepareStatement("INSERT OR IGNORE INTO sandboxes(name) VALUES (?)");
    sandboxId = write.prepareStatement("SELECT id FROM sandboxes WHERE name = ?");
    read = DriverManager.getConnection(url, props());
    try (Statement st = read.createStatement()) {
      st.execute("PRAGMA cache_size=-65536");
      st.execute("PRAGMA temp_store=MEMORY");
      // queries read through a memory map: a full free-text scan costs no read() per page
      st.execute("PRAGMA mmap_size=" + (1L << 30));
    }
  }

  /**
   * Drops the tables of an index with another layout (or none recorded): it is rebuilt from
   * events.jsonl by the log's catch-up.
   */
  private static void dropOtherLayout(Statement st) throws SQLException {
    boolean hasEvents;
    try (ResultSet rs =
        st.executeQuery(
            "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='events'")) {
      hasEvents = rs.next() && rs.getInt(1) > 0;
    }
    if (!hasEvents) {
      return;
    }
    String layout = null;
    try (ResultSet rs =
        st.executeQuery("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='meta'")) {
      if (rs.next() && rs.getInt(1) > 0) {
        try (ResultSet v = st.executeQuery("SELECT value FROM meta WHERE key = 'layout'")) {
          layout = v.next() ? v.getString(1) : null;
        }
      }
    }
    if (!LAYOUT.equals(layout)) {
      LOG.warn("audit index has layout {} (this version uses {}): rebuilding it", layout, LAYOUT);
      for (String t : List.of("events", "search", "sandboxes", "meta")) {
        st.execute("DROP TABLE IF EXISTS " + t);
      }
    }
  }

  private static Properties props() {
    Properties p = new Properties();
    p.setProperty("busy_timeout", "60000");
    return p;
  }

  static long micros(Instant t) {
    return Math.addExact(Math.multiplyExact(t.getEpochSecond(), 1_000_000L), t.getNano() / 1000);
  }

  /** Inserts rows in one transaction (existing seqs are kept). Writer thread only. */
  void insert(Collection<Row> rows) throws SQLException {
    try {
      for (Row r : rows) {
        insert.setLong(1, r.seq());
        insert.setLong(2, r.timeMicros());
        insert.setString(3, r.type());
        String sb = r.sandbox();
        if (sb == null) {
          insert.setNull(4, Types.INTEGER);
        } else {
          insert.setLong(4, sandboxId(sb));
        }
        insert.setString(5, r.decision());
        insert.setLong(6, r.offset());
        insert.setString(7, r.text());
        insert.setBytes(8, r.prev());
        insert.setBytes(9, r.hash());
        insert.addBatch();
        insertSearch.setLong(1, r.timeMicros());
        insertSearch.setLong(2, r.seq());
        insertSearch.setString(3, r.search());
        insertSearch.addBatch();
      }
      insert.executeBatch();
      insertSearch.executeBatch();
      write.commit();
    } catch (SQLException | RuntimeException e) {
      insert.clearBatch();
      insertSearch.clearBatch();
      sandboxIds.clear();
      write.rollback();
      throw e;
    }
  }

  private long sandboxId(String name) throws SQLException {
    Long id = sandboxIds.get(name);
    if (id != null) {
      return id;
    }
    insertSandbox.setString(1, name);
    insertSandbox.executeUpdate();
    sandboxId.setString(1, name);
    long v;
    try (ResultSet rs = sandboxId.executeQuery()) {
      if (!rs.next()) {
        throw new SQLException("sandbox id of " + name + " not found after insert");
      }
      v = rs.getLong(1);
    }
    if (sandboxIds.size() > 100_000) {
      sandboxIds.clear();
    }
    sandboxIds.put(name, v);
    return v;
  }

  /** Deletes every row (the index belongs to another file). */
  void clear() throws SQLException {
    try (Statement st = write.createStatement()) {
      st.execute("DELETE FROM events");
      st.execute("DELETE FROM search");
      st.execute("DELETE FROM sandboxes");
    }
    write.commit();
    sandboxIds.clear();
  }

  synchronized long maxSeq() throws SQLException {
    return longQuery("SELECT coalesce(max(seq), 0) FROM events", -1);
  }

  synchronized long count() throws SQLException {
    return longQuery("SELECT count(*) FROM events", -1);
  }

  synchronized long countUpTo(long seq) throws SQLException {
    return longQuery("SELECT count(*) FROM events WHERE seq <= ?", seq);
  }

  private long longQuery(String sql, long arg) throws SQLException {
    try (PreparedStatement ps = read.prepareStatement(sql)) {
      if (arg >= 0) {
        ps.setLong(1, arg);
      }
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getLong(1) : 0;
      }
    }
  }

  /**
   * Where a record is (file number and offset, see {@link AuditSegments#position}), and its hash.
   */
  record Located(long offset, String hash) {}

  /** Position (file and offset) and hash of the record {@code seq}, or null when not indexed. */
  synchronized @Nullable Located locate(long seq) throws SQLException {
    try (PreparedStatement ps =
        read.prepareStatement("SELECT off, hash FROM events WHERE seq = ?")) {
      ps.setLong(1, seq);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        return new Located(rs.getLong(1), AuditJson.hex(rs.getBytes(2)));
      }
    }
  }

  /** The SQL and arguments of a query. */
  record Sql(String sql, List<Object> args) {}

  /** Builds the statement for {@code q}, or null when it cannot match (unknown sandbox prefix). */
  @Nullable Sql sql(AuditQuery q) throws SQLException {
    List<Object> args = new ArrayList<>();
    String text = q.text();
    boolean selective = q.sandbox() != null || q.decision() != null || q.sandboxIds() != null;
    // the search table is clustered by (time, seq): it drives every query that has no selective
    // filter, scanning newest (or oldest) first and stopping at the limit
    boolean searchFirst = !selective && (text != null || q.types().isEmpty());
    StringBuilder where = new StringBuilder();
    String prefix = q.sandbox();
    if (prefix != null) {
      List<Long> ids = sandboxes(prefix);
      if (ids.isEmpty()) {
        return null;
      }
      if (ids.size() == 1) {
        where.append(" AND e.sb = ?");
        args.add(ids.get(0));
      } else if (ids.size() <= MAX_IDS) {
        where.append(" AND e.sb IN (").append(marks(ids.size())).append(')');
        args.addAll(ids);
      } else {
        where.append(" AND e.sb IN (SELECT id FROM sandboxes WHERE name >= ? AND name < ?)");
        args.add(prefix);
        args.add(upper(prefix));
      }
    }
    Set<String> exact = q.sandboxIds();
    if (exact != null) {
      List<Long> ids = sandboxIds(exact);
      if (ids.isEmpty()) {
        return null;
      }
      where.append(" AND e.sb IN (").append(marks(ids.size())).append(')');
      args.addAll(ids);
    }
    if (q.types().size() == 1) {
      where.append(" AND e.type = ?");
      args.addAll(q.types());
    } else if (!q.types().isEmpty()) {
      where.append(" AND e.type IN (").append(marks(q.types().size())).append(')');
      args.addAll(q.types());
    }
    if (q.decision() != null) {
      where.append(" AND e.decision = ?");
      args.add(q.decision());
    }
    String t = searchFirst ? "s" : "e";
    if (q.since() != null) {
      where.append(" AND ").append(t).append(".time >= ?");
      args.add(micros(q.since()));
    }
    if (q.until() != null) {
      where.append(" AND ").append(t).append(".time < ?");
      args.add(micros(q.until()));
    }
    String glob = text == null ? null : "*" + globEscape(text.toLowerCase(Locale.ROOT)) + "*";
    StringBuilder sql = new StringBuilder("SELECT e.text, e.prev, e.hash FROM ");
    if (searchFirst) {
      sql.append("search s CROSS JOIN events e ON e.seq = s.seq WHERE 1=1");
      if (glob != null) {
        sql.append(" AND s.s GLOB ?");
        args.add(0, glob);
      }
    } else {
      sql.append("events e WHERE 1=1");
      if (glob != null) {
        where.append(
            " AND EXISTS (SELECT 1 FROM search s WHERE s.time = e.time AND s.seq = e.seq"
                + " AND s.s GLOB ?)");
        args.add(glob);
      }
    }
    sql.append(where);
    String dir = q.order() == AuditQuery.Order.NEWEST_FIRST ? "DESC" : "ASC";
    sql.append(" ORDER BY ")
        .append(t)
        .append(".time ")
        .append(dir)
        .append(", ")
        .append(t)
        .append(".seq ")
        .append(dir)
        .append(" LIMIT ?");
    args.add((long) q.limit());
    return new Sql(sql.toString(), args);
  }

  synchronized List<AuditEvent> query(AuditQuery q) throws SQLException {
    Sql s = sql(q);
    if (s == null) {
      return List.of();
    }
    List<AuditEvent> out = new ArrayList<>(Math.min(q.limit(), 1024));
    try (PreparedStatement ps = read.prepareStatement(s.sql())) {
      bind(ps, s.args());
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String line =
              AuditJson.joinLine(
                  rs.getString(1), AuditJson.hex(rs.getBytes(2)), AuditJson.hex(rs.getBytes(3)));
          out.add(AuditJson.parse(line));
        }
      }
    }
    return out;
  }

  /** The plan SQLite picks for {@code q} (tests, benchmark). */
  synchronized String explain(AuditQuery q) throws SQLException {
    Sql s = sql(q);
    if (s == null) {
      return "no such sandbox";
    }
    StringBuilder sb = new StringBuilder();
    try (PreparedStatement ps = read.prepareStatement("EXPLAIN QUERY PLAN " + s.sql())) {
      bind(ps, s.args());
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          sb.append(rs.getString(4)).append("; ");
        }
      }
    }
    return sb.toString();
  }

  private static void bind(PreparedStatement ps, List<Object> args) throws SQLException {
    for (int i = 0; i < args.size(); i++) {
      Object a = args.get(i);
      if (a instanceof Long l) {
        ps.setLong(i + 1, l);
      } else {
        ps.setString(i + 1, (String) a);
      }
    }
  }

  private List<Long> sandboxes(String prefix) throws SQLException {
    List<Long> ids = new ArrayList<>();
    try (PreparedStatement ps =
        read.prepareStatement("SELECT id FROM sandboxes WHERE name >= ? AND name < ? LIMIT ?")) {
      ps.setString(1, prefix);
      ps.setString(2, upper(prefix));
      ps.setInt(3, MAX_IDS + 1);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getLong(1));
        }
      }
    }
    return ids;
  }

  /** The index's numbers of these sandbox names (those it has seen), in chunks SQLite takes. */
  private List<Long> sandboxIds(Set<String> names) throws SQLException {
    List<Long> ids = new ArrayList<>();
    List<String> all = new ArrayList<>(names);
    for (int from = 0; from < all.size(); from += 500) {
      List<String> chunk = all.subList(from, Math.min(all.size(), from + 500));
      try (PreparedStatement ps =
          read.prepareStatement(
              "SELECT id FROM sandboxes WHERE name IN (" + marks(chunk.size()) + ")")) {
        for (int i = 0; i < chunk.size(); i++) {
          ps.setString(i + 1, chunk.get(i));
        }
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            ids.add(rs.getLong(1));
          }
        }
      }
    }
    return ids;
  }

  /** A string greater than every string starting with {@code prefix} (ids are ASCII). */
  private static String upper(String prefix) {
    return prefix + Character.MAX_VALUE;
  }

  private static String marks(int n) {
    return String.join(", ", Collections.nCopies(n, "?"));
  }

  /** GLOB's special characters as one-character classes. */
  private static String globEscape(String s) {
    StringBuilder sb = new StringBuilder(s.length() + 8);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '*' -> sb.append("[*]");
        case '?' -> sb.append("[?]");
        case '[' -> sb.append("[[]");
        default -> sb.append(c);
      }
    }
    return sb.toString();
  }

  @Override
  public synchronized void close() throws SQLException {
    try {
      insert.close();
      insertSearch.close();
      insertSandbox.close();
      sandboxId.close();
      read.close();
    } finally {
      write.close();
    }
  }
}
