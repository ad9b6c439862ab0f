package io.agentnest.audit;

import io.agentnest.internal.AgentNestHome;
import io.agentnest.internal.SecurityPolicy;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.FileLockInterruptionException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.sql.SQLException;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The audit trail: an append-only, hash-chained {@code events.jsonl} plus a SQLite index ({@code
 * index.db}) in one directory. Thread-safe; several processes may append to the same directory.
 *
 * <p>{@link #record} assigns seq, time, actor, prevHash and hash, writes the line to {@code
 * events.jsonl} (one {@code write} per record, so it is in the OS once {@code record} returns; an
 * fsync follows within {@value #FSYNC_INTERVAL_MS} ms, from a background flusher, and on {@link
 * #close()}), then hands it to a bounded queue ({@value #QUEUE_CAPACITY} records). One writer
 * thread drains the queue, inserts batches into the index in one transaction each and then calls
 * the sinks. Callers never wait for SQLite; when the queue is full, {@code record} blocks until
 * there is room (backpressure): records are never dropped.
 *
 * <p>Appends take an exclusive lock on {@code events.lock} (and a lock shared by every log of the
 * same directory in this JVM). The file lock is kept as a lease of up to {@value #LEASE_MS} ms
 * across appends, so another process waits at most about that long. A log that takes the lock and
 * finds the file longer than it left it (another process appended) re-reads the last line and
 * continues the chain from there. Records still queued when a process dies are in {@code
 * events.jsonl} but not yet in the index: the next {@link #open} indexes them.
 *
 * <p>{@link #query} reads the index only (after waiting for this log's own queued records); {@link
 * #verify()} and {@link #tail} read the file.
 */
public final class AuditLog implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(AuditLog.class);

  public static final String EVENTS_FILE = "events.jsonl";
  public static final String INDEX_FILE = "index.db";
  public static final String LOCK_FILE = "events.lock";

  /** Capacity of the queue between {@link #record} and the writer thread. */
  public static final int QUEUE_CAPACITY = 65_536;

  /** Longest delay between a write and its fsync. */
  public static final int FSYNC_INTERVAL_MS = 100;

  static final int BATCH = 16_384;
  static final long TAIL_POLL_MS = 200;

  /**
   * How long a log keeps the file lock between appends before letting other processes have it.
   * Within a lease appends cost one {@code write}; another process waits at most this long.
   */
  static final long LEASE_MS = 50;

  /** Appends of one directory from this JVM share one lock (file locks are per JVM). */
  private static final ConcurrentHashMap<Path, DirLock> DIR_LOCKS = new ConcurrentHashMap<>();

  private static final Pending STOP =
      new Pending(
          new AuditEvent(
              0, Instant.EPOCH, "", null, "", Map.of(), AuditEvent.GENESIS, AuditEvent.GENESIS, 1),
          new byte[1],
          0);

  /** A written record on its way to the index: the line's bytes include the newline. */
  @SuppressWarnings("ArrayRecordComponent") // internal, never compared
  private record Pending(AuditEvent event, byte[] line, long offset) {
    String text() {
      return new String(line, 0, line.length - 1, StandardCharsets.UTF_8);
    }
  }

  private final Path dir;
  private final Path events;
  private final DirLock appendLock;
  private final String actor;
  private final MessageDigest sha = AuditJson.sha256();
  private final FileOutputStream out;
  private final RandomAccessFile sizer;
  private final AuditIndex index;
  private final ArrayBlockingQueue<Pending> queue = new ArrayBlockingQueue<>(QUEUE_CAPACITY);
  private final CopyOnWriteArrayList<AuditSink> sinks = new CopyOnWriteArrayList<>();
  private final Thread writer;
  private final Thread flusher;
  private final Object progress = new Object();

  // guarded by appendLock
  private long lastSeq;
  private String lastHash = AuditEvent.GENESIS;
  private long knownSize;
  private long enqueued;

  // guarded by progress
  private long processed;

  private volatile boolean closed;
  private volatile boolean dirty;

  private AuditLog(Path dir) throws IOException, SQLException {
    this.dir = dir;
    Files.createDirectories(dir);
    this.events = dir.resolve(EVENTS_FILE);
    this.appendLock = DirLock.acquire(dir.toRealPath().resolve(LOCK_FILE));
    this.actor = Actor.ID;
    AuditIndex idx = null;
    FileOutputStream o = null;
    RandomAccessFile sz = null;
    try {
      o = new FileOutputStream(events.toFile(), true);
      sz = new RandomAccessFile(events.toFile(), "r");
      this.out = o;
      this.sizer = sz;
      synchronized (appendLock) {
        appendLock.lease();
        reloadTail(sizer.length());
        appendLock.lastWriter = this;
      }
      idx = new AuditIndex(dir.resolve(INDEX_FILE));
      catchUp(idx);
    } catch (IOException | SQLException | RuntimeException e) {
      if (idx != null) {
        idx.close();
      }
      if (o != null) {
        o.close();
      }
      if (sz != null) {
        sz.close();
      }
      appendLock.releaseRef(this);
      throw e;
    }
    this.index = idx;
    this.writer = new Thread(this::writeLoop, "agentnest-audit-writer");
    writer.setDaemon(true);
    this.flusher = new Thread(this::flushLoop, "agentnest-audit-fsync");
    flusher.setDaemon(true);
    writer.start();
    flusher.start();
  }

  /**
   * Opens (creating when missing) the audit log in {@code dir}; an existing log continues its chain
   * and its index catches up with records it lacks.
   *
   * @throws UncheckedIOException when the directory or the index cannot be opened
   */
  public static AuditLog open(Path dir) {
    try {
      return new AuditLog(dir.toAbsolutePath().normalize());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open the audit log in " + dir, e);
    } catch (SQLException e) {
      throw new UncheckedIOException(
          "cannot open the audit index " + dir.resolve(INDEX_FILE) + ": " + e.getMessage(),
          new IOException(e));
    }
  }

  /** The default audit log: {@code AGENTNEST_HOME/audit}. */
  public static AuditLog openDefault() {
    return open(defaultDir());
  }

  /** {@code AGENTNEST_HOME/audit}. */
  public static Path defaultDir() {
    return AgentNestHome.dir().resolve("audit");
  }

  public Path dir() {
    return dir;
  }

  /** Registers a sink; it receives every record written from now on, in seq order. */
  public void addSink(AuditSink sink) {
    sinks.add(Objects.requireNonNull(sink, "sink"));
  }

  /** Unregisters a sink and closes it. */
  public void removeSink(AuditSink sink) {
    if (sinks.remove(sink)) {
      closeSink(sink);
    }
  }

  /**
   * Appends a record and returns it. Blocks only while the file lock is held by another writer or
   * the queue is full.
   *
   * @param type one of {@link AuditEvent#TYPES}
   * @param sandboxId the sandbox; null only for {@link AuditEvent#CONFIG_LOADED}
   * @param data type-specific fields (see docs/audit.md); never pass secret values
   * @throws IllegalArgumentException for an unknown type, a missing sandbox id or data that is not
   *     plain JSON values
   * @throws IllegalStateException when the log is closed
   * @throws UncheckedIOException when the file cannot be written
   */
  public AuditEvent record(String type, @Nullable String sandboxId, @Nullable Map<String, ?> data) {
    if (!AuditEvent.TYPES.contains(type)) {
      throw new IllegalArgumentException(
          "unknown audit event type '" + type + "': use one of " + AuditEvent.TYPES);
    }
    if (sandboxId == null && !AuditEvent.CONFIG_LOADED.equals(type)) {
      throw new IllegalArgumentException(type + " needs a sandbox id");
    }
    if (Thread.currentThread() == writer) {
      throw new IllegalStateException("an audit sink must not record (it runs on the writer)");
    }
    AuditJson.Data d = AuditJson.normalize(data);
    boolean interrupted = Thread.interrupted();
    try {
      synchronized (appendLock) {
        if (closed) {
          throw new IllegalStateException("the audit log " + dir + " is closed");
        }
        Pending p;
        try {
          // within one lease and with this log the last writer, nobody else appended
          if (appendLock.lease() || appendLock.lastWriter != this) {
            long size = sizer.length();
            if (size != knownSize) {
              reloadTail(size);
            }
            appendLock.lastWriter = this;
          }
          long seq = lastSeq + 1;
          Instant time = Instant.now().truncatedTo(ChronoUnit.MICROS);
          String prev = lastHash;
          AuditJson.Sealed sealed =
              AuditJson.seal(
                  AuditJson.head(seq, time, type, sandboxId, actor, d.json()), prev, sha);
          byte[] bytes = sealed.line();
          out.write(bytes);
          long offset = knownSize;
          knownSize += bytes.length;
          lastSeq = seq;
          lastHash = sealed.hash();
          dirty = true;
          p =
              new Pending(
                  new AuditEvent(
                      seq, time, type, sandboxId, actor, d.map(), prev, sealed.hash(), 1),
                  bytes,
                  offset);
        } catch (IOException e) {
          knownSize = -1;
          appendLock.lastWriter = null;
          throw new UncheckedIOException("cannot append to " + events, e);
        }
        interrupted |= putUninterruptibly(p);
        enqueued++;
        return p.event();
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Seq of the last record this log wrote or saw (0 for an empty log). */
  public long lastSeq() {
    synchronized (appendLock) {
      return lastSeq;
    }
  }

  /** Hash of the last record this log wrote or saw: an anchor to keep elsewhere. */
  public String lastHash() {
    synchronized (appendLock) {
      return lastHash;
    }
  }

  /**
   * Waits until every record this log has written is indexed and delivered to the sinks, then
   * fsyncs {@code events.jsonl}.
   */
  public void flush() {
    long target;
    synchronized (appendLock) {
      target = enqueued;
    }
    awaitProcessed(target, Long.MAX_VALUE);
    sync();
  }

  /**
   * Records matching {@code q}, from the index (the JSONL file is not read). Records this log wrote
   * before the call are included.
   */
  public List<AuditEvent> query(AuditQuery q) {
    long target;
    synchronized (appendLock) {
      target = enqueued;
    }
    awaitProcessed(target, TimeUnit.SECONDS.toNanos(30));
    try {
      return index.query(q);
    } catch (SQLException e) {
      throw new UncheckedIOException("audit query failed: " + e.getMessage(), new IOException(e));
    }
  }

  /** Re-reads {@code events.jsonl} and checks every record's hash and the chain. */
  public VerifyReport verify() {
    sync();
    return verify(dir);
  }

  /** Verifies the log in {@code dir} without opening it (nothing is created or indexed). */
  public static VerifyReport verify(Path dir) {
    return AuditVerifier.verify(dir.resolve(EVENTS_FILE));
  }

  /**
   * Follows records appended after this call (by any process), polling the file every {@value
   * #TAIL_POLL_MS} ms, and passes those matching {@code filter} (its limit and order are ignored)
   * to {@code onEvent} until {@code keepGoing} returns false or the thread is interrupted.
   */
  public void tail(AuditQuery filter, Consumer<AuditEvent> onEvent, BooleanSupplier keepGoing) {
    tail(filter, -1, onEvent, keepGoing);
  }

  /**
   * Like {@link #tail(AuditQuery, Consumer, BooleanSupplier)}, starting after the record {@code
   * afterSeq} instead of at the end of the file ({@code -1}: the end), so that nothing falls
   * between a query and the tail that follows it.
   */
  public void tail(
      AuditQuery filter, long afterSeq, Consumer<AuditEvent> onEvent, BooleanSupplier keepGoing) {
    long start;
    long skipUpTo = -1;
    try {
      if (afterSeq < 0) {
        start = sizer.length();
      } else {
        AuditIndex.Located at = afterSeq == 0 ? null : index.locate(afterSeq);
        if (at != null) {
          start = at.offset();
          skipUpTo = afterSeq;
        } else {
          start = 0;
          skipUpTo = afterSeq;
        }
      }
      follow(filter, start, skipUpTo, onEvent, keepGoing);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + events, e);
    } catch (SQLException e) {
      throw new UncheckedIOException("audit index failed: " + e.getMessage(), new IOException(e));
    }
  }

  private void follow(
      AuditQuery filter,
      long start,
      long skipUpTo,
      Consumer<AuditEvent> onEvent,
      BooleanSupplier keepGoing)
      throws IOException {
    long pos = start;
    try (JsonlReader r = new JsonlReader(events, pos)) {
      while (keepGoing.getAsBoolean()) {
        long size = Files.size(events);
        if (size < pos) {
          LOG.warn("{} shrank from {} to {} bytes: following from its start", events, pos, size);
          pos = 0;
          r.seek(0);
        }
        String line;
        while (keepGoing.getAsBoolean() && (line = r.next()) != null) {
          if (!r.terminated()) {
            r.seek(r.lineStart());
            break;
          }
          pos = r.position();
          AuditEvent e;
          try {
            e = AuditJson.parse(line);
          } catch (IllegalArgumentException ex) {
            LOG.warn("{}: skipping a malformed line at offset {}", events, r.lineStart());
            continue;
          }
          if (e.seq() > skipUpTo && filter.matches(e, line)) {
            onEvent.accept(e);
          }
        }
        try {
          Thread.sleep(TAIL_POLL_MS);
        } catch (InterruptedException ex) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  /** Stops the writer after it has drained the queue, fsyncs and closes files, index and sinks. */
  @Override
  public void close() {
    if (Thread.currentThread() == writer) {
      throw new IllegalStateException("an audit sink must not close the log");
    }
    synchronized (appendLock) {
      if (closed) {
        return;
      }
      closed = true;
      putUninterruptibly(STOP);
    }
    boolean interrupted = false;
    while (writer.isAlive()) {
      try {
        writer.join();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    flusher.interrupt();
    sync();
    try {
      index.close();
    } catch (SQLException e) {
      LOG.warn("closing the audit index: {}", e.getMessage());
    }
    for (AuditSink s : sinks) {
      closeSink(s);
    }
    sinks.clear();
    closeQuietly(out);
    closeQuietly(sizer);
    appendLock.releaseRef(this);
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  // ---- writer thread ----

  @SuppressWarnings("ReferenceEquality") // STOP is a sentinel instance
  private void writeLoop() {
    List<Pending> batch = new ArrayList<>(BATCH);
    List<AuditIndex.Row> rows = new ArrayList<>(BATCH);
    boolean stop = false;
    while (!stop) {
      try {
        batch.add(queue.take());
      } catch (InterruptedException e) {
        continue;
      }
      queue.drainTo(batch, BATCH - 1);
      rows.clear();
      for (Pending p : batch) {
        if (p == STOP) {
          stop = true;
        } else {
          rows.add(AuditIndex.Row.of(p.event(), p.text(), p.offset()));
        }
      }
      if (!rows.isEmpty()) {
        try {
          index.insert(rows);
        } catch (SQLException | RuntimeException e) {
          LOG.error(
              "audit index insert failed for {} records (they are in {}; the next open indexes"
                  + " them): {}",
              rows.size(),
              events,
              e.toString());
        }
        for (AuditSink s : sinks) {
          for (Pending p : batch) {
            if (p != STOP) {
              try {
                s.accept(p.event());
              } catch (RuntimeException e) {
                LOG.warn("audit sink {} failed: {}", s, e.toString());
              }
            }
          }
        }
      }
      synchronized (progress) {
        processed += rows.size();
        progress.notifyAll();
      }
      batch.clear();
    }
  }

  private void flushLoop() {
    long lastSync = System.nanoTime();
    while (!closed) {
      try {
        Thread.sleep(LEASE_MS / 2);
      } catch (InterruptedException e) {
        return;
      }
      appendLock.expireLease();
      if (System.nanoTime() - lastSync >= TimeUnit.MILLISECONDS.toNanos(FSYNC_INTERVAL_MS - 30)) {
        sync();
        lastSync = System.nanoTime();
      }
    }
  }

  private void sync() {
    if (!dirty) {
      return;
    }
    dirty = false;
    try {
      out.getFD().sync();
    } catch (IOException e) {
      dirty = true;
      LOG.warn("fsync of {} failed: {}", events, e.getMessage());
    }
  }

  private void awaitProcessed(long target, long timeoutNanos) {
    if (Thread.currentThread() == writer) {
      return; // called from a sink: the writer cannot wait for itself
    }
    long deadline = System.nanoTime() + timeoutNanos;
    boolean interrupted = false;
    synchronized (progress) {
      while (processed < target && writer.isAlive()) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          LOG.warn("audit index is behind ({} of {} records)", processed, target);
          break;
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(progress, Math.min(left, TimeUnit.SECONDS.toNanos(1)));
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private boolean putUninterruptibly(Pending p) {
    boolean interrupted = false;
    while (true) {
      try {
        queue.put(p);
        return interrupted;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
  }

  // ---- file lock and chain state ----

  /**
   * The lock on {@code events.lock} of one directory, shared by every log of this JVM on it: the
   * monitor serialises appends in the JVM, the file lock across processes. The file lock is held as
   * a lease: taken by the first append, kept for up to {@link #LEASE_MS}, then released by a
   * flusher (and kept free for a moment so a waiting process gets it).
   */
  private static final class DirLock {
    private final Path path;
    private int refs;
    private @Nullable FileChannel channel;
    private @Nullable FileLock lock;
    private long since;
    @Nullable AuditLog lastWriter;

    private DirLock(Path path) {
      this.path = path;
    }

    static DirLock acquire(Path path) {
      DirLock l = DIR_LOCKS.compute(path, (p, v) -> v == null ? new DirLock(p) : v);
      synchronized (l) {
        if (l.refs < 0) {
          // closed concurrently: make a new one
          DIR_LOCKS.remove(path, l);
          return acquire(path);
        }
        l.refs++;
      }
      return l;
    }

    synchronized void releaseRef(AuditLog log) {
      if (lastWriter == log) {
        lastWriter = null;
      }
      if (--refs > 0) {
        return;
      }
      refs = -1;
      lastWriter = null;
      releaseLock();
      if (channel != null) {
        closeQuietly(channel);
        channel = null;
      }
      DIR_LOCKS.remove(path, this);
    }

    /** Makes sure the file lock is held; true when it was just taken. Caller holds the monitor. */
    boolean lease() {
      if (lock != null && lock.isValid()) {
        return false;
      }
      boolean interrupted = Thread.interrupted();
      try {
        for (int attempt = 0; ; attempt++) {
          try {
            FileChannel ch = channel;
            if (ch == null || !ch.isOpen()) {
              ch = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
              channel = ch;
            }
            lock = ch.lock();
            since = System.nanoTime();
            return true;
          } catch (FileLockInterruptionException | ClosedChannelException e) {
            // an interrupt closed the channel: reopen it and try again
            interrupted |= Thread.interrupted();
            channel = null;
            if (attempt > 100) {
              throw new UncheckedIOException("cannot lock " + path, e);
            }
          } catch (IOException e) {
            throw new UncheckedIOException("cannot lock " + path, e);
          }
        }
      } finally {
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
      }
    }

    /** Releases a lease held for {@link #LEASE_MS} and keeps the lock free for a moment. */
    synchronized void expireLease() {
      if (lock != null && System.nanoTime() - since >= TimeUnit.MILLISECONDS.toNanos(LEASE_MS)) {
        releaseLock();
        try {
          // holding the monitor: this JVM's appenders wait while a waiting process takes the lock
          Thread.sleep(1);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }

    private void releaseLock() {
      FileLock l = lock;
      lock = null;
      if (l != null) {
        try {
          l.release();
        } catch (ClosedChannelException e) {
          // the channel closed (interrupt): the lock went with it
        } catch (IOException e) {
          LOG.warn("releasing the audit file lock: {}", e.getMessage());
        }
      }
    }
  }

  /** Reads the chain state from the end of the file. Caller holds both locks. */
  private void reloadTail(long size) throws UncheckedIOException {
    try {
      Tail t = readTail(events, size);
      if (t.torn()) {
        LOG.warn(
            "{} ends with an incomplete line (interrupted write?): terminating it; verify will"
                + " report it",
            events);
        out.write('\n');
        size++;
        dirty = true;
      }
      lastSeq = t.seq();
      lastHash = t.hash();
      knownSize = size;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the end of " + events, e);
    }
  }

  record Tail(long seq, String hash, boolean torn) {}

  /** The last well-formed record of the file (seq 0 and genesis for none). */
  static Tail readTail(Path file, long size) throws IOException {
    if (size == 0) {
      return new Tail(0, AuditEvent.GENESIS, false);
    }
    try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
      f.seek(size - 1);
      boolean torn = f.read() != '\n';
      int window = 1 << 16;
      while (true) {
        long from = Math.max(0, size - window);
        byte[] b = new byte[(int) (size - from)];
        f.seek(from);
        f.readFully(b);
        int end = b.length;
        if (torn) {
          int nl = lastIndexOf(b, end - 1);
          end = nl < 0 ? 0 : nl + 1;
        }
        // walk complete lines backwards
        int lineEnd = end - 1;
        while (lineEnd > 0) {
          int nl = lastIndexOf(b, lineEnd - 1);
          if (nl < 0 && from > 0) {
            break; // the line starts before the window
          }
          String line = new String(b, nl + 1, lineEnd - nl - 1, StandardCharsets.UTF_8);
          try {
            AuditEvent e = AuditJson.parse(line);
            return new Tail(e.seq(), e.hash(), torn);
          } catch (IllegalArgumentException ex) {
            lineEnd = nl;
          }
        }
        if (from == 0) {
          return new Tail(0, AuditEvent.GENESIS, torn);
        }
        if (window >= (1 << 26)) {
          throw new IOException("no well-formed record in the last 64 MiB of " + file);
        }
        window *= 4;
      }
    }
  }

  private static int lastIndexOf(byte[] b, int from) {
    for (int i = from; i >= 0; i--) {
      if (b[i] == '\n') {
        return i;
      }
    }
    return -1;
  }

  // ---- index catch-up ----

  /** Indexes records of the file the index lacks (a crash, a deleted index, another file). */
  private void catchUp(AuditIndex idx) throws IOException, SQLException {
    long fileLast;
    String fileHash;
    synchronized (appendLock) {
      fileLast = lastSeq;
      fileHash = lastHash;
    }
    long max = idx.maxSeq();
    if (max == 0 && fileLast == 0) {
      return;
    }
    long from;
    if (max > fileLast) {
      from = 0;
    } else {
      long count = idx.count();
      if (count == max) {
        from = max;
      } else {
        long lo = Math.max(0, max - 2L * QUEUE_CAPACITY);
        from = lo > 0 && idx.countUpTo(lo) == lo ? lo : 0;
      }
    }
    if (from == fileLast && from > 0) {
      AuditIndex.Located at = idx.locate(from);
      if (at != null && fileHash.equals(at.hash())) {
        return;
      }
      from = 0;
    }
    long offset = 0;
    if (from > 0) {
      AuditIndex.Located at = idx.locate(from);
      offset = at == null ? -1 : afterLine(from, at.offset(), at.hash());
      if (offset < 0) {
        from = 0;
        offset = 0;
      }
    }
    if (from == 0 && max > 0) {
      LOG.warn("{} does not match {}: rebuilding the index", dir.resolve(INDEX_FILE), events);
      idx.clear();
    }
    long t0 = System.nanoTime();
    long n = 0;
    List<AuditIndex.Row> rows = new ArrayList<>(BATCH);
    try (JsonlReader r = new JsonlReader(events, offset)) {
      String line;
      while ((line = r.next()) != null && r.terminated()) {
        try {
          rows.add(AuditIndex.Row.of(AuditJson.parse(line), line, r.lineStart()));
        } catch (IllegalArgumentException e) {
          LOG.warn("{}: not indexing a malformed line at offset {}", events, r.lineStart());
          continue;
        }
        if (rows.size() == BATCH) {
          idx.insert(rows);
          n += rows.size();
          rows.clear();
        }
      }
    }
    if (!rows.isEmpty()) {
      idx.insert(rows);
      n += rows.size();
    }
    if (n > 0) {
      LOG.info(
          "indexed {} audit records from {} in {} ms",
          n,
          events,
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
    }
  }

  /** Offset after the line at {@code offset} when it is record {@code seq} with {@code hash}. */
  private long afterLine(long seq, long offset, String hash) throws IOException {
    try (JsonlReader r = new JsonlReader(events, offset)) {
      String line = r.next();
      if (line == null || !r.terminated()) {
        return -1;
      }
      try {
        AuditEvent e = AuditJson.parse(line);
        return e.seq() == seq && e.hash().equals(hash) ? r.position() : -1;
      } catch (IllegalArgumentException e) {
        return -1;
      }
    }
  }

  private void closeSink(AuditSink s) {
    try {
      s.close();
    } catch (RuntimeException e) {
      LOG.warn("closing audit sink {}: {}", s, e.toString());
    }
  }

  private static void closeQuietly(AutoCloseable c) {
    try {
      c.close();
    } catch (Exception e) {
      LOG.debug("close: {}", e.toString());
    }
  }

  /** The actor id, computed once (host name lookup). */
  private static final class Actor {
    static final String ID = SecurityPolicy.ownerId();
  }
}
