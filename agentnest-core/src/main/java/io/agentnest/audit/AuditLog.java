package io.agentnest.audit;

import io.agentnest.ConfigException;
import io.agentnest.audit.AuditSegments.Segment;
import io.agentnest.config.Sizes;
import io.agentnest.internal.audit.DiskGuard;
import io.agentnest.internal.lifecycle.SecurityPolicy;
import io.agentnest.internal.support.AgentNestHome;
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
import java.nio.file.StandardCopyOption;
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
 * #verify()} and {@link #tail} read the files.
 *
 * <p>Once {@code events.jsonl} reaches {@link Options#maxFileBytes()} it is renamed to the next
 * {@code events-NNNNNN.jsonl} and a new one begins; the chain runs on across the files ({@link
 * AuditSegments}). A write that would leave less than {@link Options#minFreeBytes()} free on the
 * filesystem is refused with an error that says so ({@link DiskGuard}).
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

  /** Environment variable: size at which {@code events.jsonl} is rotated (e.g. {@code 128m}). */
  public static final String ENV_MAX_FILE_SIZE = "AGENTNEST_AUDIT_MAX_FILE_SIZE";

  /** Environment variable: free disk space below which records are refused (e.g. {@code 512m}). */
  public static final String ENV_MIN_FREE_DISK = "AGENTNEST_AUDIT_MIN_FREE_DISK";

  /**
   * How the trail is kept on disk.
   *
   * @param maxFileBytes {@code events.jsonl} is rotated once it reaches this size (64 KiB to 64
   *     GiB; default 128 MiB)
   * @param minFreeBytes a record that would leave less free space on the filesystem is refused
   *     (default 512 MiB; 0 turns the guard off)
   */
  public record Options(long maxFileBytes, long minFreeBytes) {
    public static final long DEFAULT_MAX_FILE_BYTES = 128L << 20;
    public static final long DEFAULT_MIN_FREE_BYTES = 512L << 20;

    public Options {
      if (maxFileBytes < (64L << 10) || maxFileBytes > (64L << 30)) {
        throw new ConfigException(
            "the audit file size limit must be from 64k to 64g, got "
                + maxFileBytes
                + " bytes: e.g. 128m ("
                + ENV_MAX_FILE_SIZE
                + ")");
      }
      if (minFreeBytes < 0) {
        throw new ConfigException(
            "the audit free-disk reserve must be >= 0, got "
                + minFreeBytes
                + ": e.g. 512m, or 0 to turn it off ("
                + ENV_MIN_FREE_DISK
                + ")");
      }
    }

    public static Options defaults() {
      return new Options(DEFAULT_MAX_FILE_BYTES, DEFAULT_MIN_FREE_BYTES);
    }

    /**
     * The defaults, with {@value #ENV_MAX_FILE_SIZE} and {@value #ENV_MIN_FREE_DISK} applied when
     * set.
     *
     * @throws ConfigException naming the variable when a value is not a valid size
     */
    public static Options fromEnvironment(Map<String, String> env) {
      long max = DEFAULT_MAX_FILE_BYTES;
      long free = DEFAULT_MIN_FREE_BYTES;
      String m = env.get(ENV_MAX_FILE_SIZE);
      if (m != null && !m.isBlank()) {
        max = Sizes.parse(ENV_MAX_FILE_SIZE, m);
      }
      String f = env.get(ENV_MIN_FREE_DISK);
      if (f != null && !f.isBlank()) {
        free = Sizes.parse(ENV_MIN_FREE_DISK, f);
      }
      return new Options(max, free);
    }
  }

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
  private final Options options;
  private final DiskGuard disk;
  private final MessageDigest sha = AuditJson.sha256();
  // guarded by appendLock; replaced when events.jsonl is rotated
  private volatile FileOutputStream out;
  private RandomAccessFile sizer;
  private long activeNumber;
  private @Nullable Object activeKey;
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

  private AuditLog(
      Path dir, Options options, DiskGuard.FreeSpace freeSpace, boolean probeEachRecord)
      throws IOException, SQLException {
    this.dir = dir;
    this.options = options;
    Files.createDirectories(dir);
    this.events = dir.resolve(EVENTS_FILE);
    this.disk =
        new DiskGuard(
            dir,
            options.minFreeBytes(),
            freeSpace,
            "audit records in " + dir + " are refused",
            "free disk space, or move AGENTNEST_HOME to a larger filesystem (the reserve is "
                + ENV_MIN_FREE_DISK
                + ")",
            probeEachRecord ? 0 : 4L << 20,
            probeEachRecord ? 0 : TimeUnit.SECONDS.toNanos(1));
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
        activeKey = AuditSegments.fileKey(events);
        activeNumber = AuditSegments.activeNumber(AuditSegments.rotated(dir));
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
    return open(dir, Options.defaults());
  }

  /** {@link #open(Path)} with rotation and free-disk settings of its own. */
  public static AuditLog open(Path dir, Options options) {
    return open(dir, options, DiskGuard.FILESYSTEM, false);
  }

  /** For tests: the free space as {@code freeSpace} says, asked before every record. */
  static AuditLog open(Path dir, Options options, DiskGuard.FreeSpace freeSpace) {
    return open(dir, options, freeSpace, true);
  }

  private static AuditLog open(
      Path dir, Options options, DiskGuard.FreeSpace freeSpace, boolean probeEachRecord) {
    try {
      return new AuditLog(dir.toAbsolutePath().normalize(), options, freeSpace, probeEachRecord);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open the audit log in " + dir, e);
    } catch (SQLException e) {
      throw new UncheckedIOException(
          "cannot open the audit index " + dir.resolve(INDEX_FILE) + ": " + e.getMessage(),
          new IOException(e));
    }
  }

  /**
   * The default audit log: {@code AGENTNEST_HOME/audit}, with {@link Options#fromEnvironment(Map)}.
   */
  public static AuditLog openDefault() {
    return open(defaultDir(), Options.fromEnvironment(System.getenv()));
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
            followRotation();
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
          disk.beforeWrite(bytes.length);
          out.write(bytes);
          long offset = AuditSegments.position(activeNumber, knownSize);
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
        } catch (DiskGuard.DiskFullException e) {
          throw new UncheckedIOException(e.getMessage(), e);
        } catch (IOException e) {
          knownSize = -1;
          appendLock.lastWriter = null;
          throw new UncheckedIOException("cannot append to " + events, e);
        }
        interrupted |= putUninterruptibly(p);
        enqueued++;
        if (knownSize >= options.maxFileBytes()) {
          rotate();
        }
        return p.event();
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Fails when the filesystem of the log has less free space than the reserve: records would be
   * refused. Checked before a sandbox is created, so that none runs unaudited.
   *
   * @throws UncheckedIOException saying how much is free and what to do
   */
  public void requireRoom() {
    if (!disk.hasRoom()) {
      try {
        disk.beforeWrite(0);
      } catch (DiskGuard.DiskFullException e) {
        throw new UncheckedIOException(e.getMessage(), e);
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

  /** Whether {@code dir} holds an audit trail (the active file or rotated ones). */
  public static boolean exists(Path dir) {
    return !AuditSegments.all(dir).isEmpty();
  }

  /**
   * Verifies the log in {@code dir} without opening it (nothing is created or indexed): every
   * rotated file and the active one, as one chain.
   */
  public static VerifyReport verify(Path dir) {
    return AuditVerifier.verify(dir);
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
    try {
      long number;
      long offset;
      long skipUpTo = -1;
      if (afterSeq < 0) {
        number = -1; // the end of the active file
        offset = Files.exists(events) ? Files.size(events) : 0;
      } else {
        AuditIndex.Located at = afterSeq == 0 ? null : index.locate(afterSeq);
        skipUpTo = afterSeq;
        if (at != null) {
          // The record's file by number: rotated by now or still the active one, follow() sees.
          number = AuditSegments.number(at.offset());
          offset = AuditSegments.offset(at.offset());
        } else {
          List<Segment> all = AuditSegments.all(dir);
          number = all.isEmpty() || all.get(0).active() ? -1 : all.get(0).number();
          offset = 0;
        }
      }
      follow(filter, number, offset, skipUpTo, onEvent, keepGoing);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + events, e);
    } catch (SQLException e) {
      throw new UncheckedIOException("audit index failed: " + e.getMessage(), new IOException(e));
    }
  }

  /**
   * Reads from file {@code number} (rotated by now, or still the active one; -1: the active one) at
   * {@code offset}, then each later file, then keeps following the active file; when it is rotated
   * meanwhile, reads the old one to its end and goes on with the files after it.
   */
  private void follow(
      AuditQuery filter,
      long number,
      long offset,
      long skipUpTo,
      Consumer<AuditEvent> onEvent,
      BooleanSupplier keepGoing)
      throws IOException {
    long current = number;
    long pos = offset;
    while (keepGoing.getAsBoolean()) {
      Path numbered = current < 0 ? null : dir.resolve(AuditSegments.rotatedName(current));
      if (numbered != null && Files.exists(numbered)) {
        try (JsonlReader r = new JsonlReader(numbered, pos)) {
          drain(r, pos, filter, skipUpTo, onEvent, keepGoing);
        }
        current = after(current);
        pos = 0;
        continue;
      }
      // The active file: opened only when the name still means the same file afterwards, so that
      // a rotation in between cannot make us read one file believing it is another.
      Object key = AuditSegments.fileKey(events);
      JsonlReader opened = key == null ? null : new JsonlReader(events, pos);
      boolean wrongFile =
          opened != null
              && numbered != null
              && Files.exists(numbered)
              && !AuditSegments.sameFile(key, AuditSegments.fileKey(numbered));
      if (opened == null
          || wrongFile
          || !AuditSegments.sameFile(key, AuditSegments.fileKey(events))) {
        // Not there yet, or file `current` was rotated just before the open: look again (it is
        // then read as a rotated file).
        if (opened != null) {
          opened.close();
        }
        if (!wrongFile && !pause()) {
          return;
        }
        continue;
      }
      boolean rotated = false;
      try (JsonlReader r = opened) {
        while (keepGoing.getAsBoolean()) {
          pos = drain(r, pos, filter, skipUpTo, onEvent, keepGoing);
          if (!AuditSegments.sameFile(key, AuditSegments.fileKey(events))) {
            // Rotated under us: what was appended before the rename is still to read.
            drain(r, pos, filter, skipUpTo, onEvent, keepGoing);
            rotated = true;
            break;
          }
          // The length of the file we have open (the name may mean another file by now).
          long size = r.length();
          if (size < pos) {
            LOG.warn("{} shrank from {} to {} bytes: following from its start", events, pos, size);
            pos = 0;
            r.seek(0);
          }
          if (!pause()) {
            return;
          }
        }
      }
      if (!rotated) {
        return;
      }
      // Go on after the file just read, which now has a number (several rotations may have
      // happened since: their files come first).
      long was = -1;
      for (Segment seg : AuditSegments.rotated(dir)) {
        if (AuditSegments.sameFile(key, AuditSegments.fileKey(seg.path()))) {
          was = seg.number();
        }
      }
      current = was < 0 ? -1 : after(was);
      pos = 0;
    }
  }

  /**
   * The number of the file after {@code number}: the first rotated one after it, else the one after
   * it, which is the active file now (named by number, not as "whatever is active": more rotations
   * may come before it is opened, and their files must be read first).
   */
  private long after(long number) {
    for (Segment seg : AuditSegments.rotated(dir)) {
      if (seg.number() > number) {
        return seg.number();
      }
    }
    return number + 1;
  }

  /** Passes the lines up to the end of {@code r} on; the position after the last whole line. */
  private long drain(
      JsonlReader r,
      long pos,
      AuditQuery filter,
      long skipUpTo,
      Consumer<AuditEvent> onEvent,
      BooleanSupplier keepGoing)
      throws IOException {
    long at = pos;
    String line;
    while (keepGoing.getAsBoolean() && (line = r.next()) != null) {
      if (!r.terminated()) {
        r.seek(r.lineStart());
        break;
      }
      at = r.position();
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
    return at;
  }

  /** Sleeps one poll interval; false when interrupted. */
  private static boolean pause() {
    try {
      Thread.sleep(TAIL_POLL_MS);
      return true;
    } catch (InterruptedException ex) {
      Thread.currentThread().interrupt();
      return false;
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
    FileOutputStream o = out;
    try {
      o.getFD().sync();
    } catch (IOException e) {
      if (o == out) {
        dirty = true;
        LOG.warn("fsync of {} failed: {}", events, e.getMessage());
      } // else rotated meanwhile: the rotation synced the old file
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
      if (t.seq() == 0) {
        // Nothing in the active file yet (it was just rotated): the chain goes on from the end
        // of the last rotated file.
        List<Segment> rotated = AuditSegments.rotated(dir);
        if (!rotated.isEmpty()) {
          Path last = rotated.get(rotated.size() - 1).path();
          Tail before = readTail(last, Files.size(last));
          t = new Tail(before.seq(), before.hash(), t.torn());
        }
      }
      lastSeq = t.seq();
      lastHash = t.hash();
      knownSize = size;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the end of " + events, e);
    }
  }

  /**
   * Reopens {@code events.jsonl} when the name no longer means the file this log writes to: another
   * log (of this process or another) rotated it. Caller holds both locks.
   */
  private void followRotation() throws IOException {
    if (!AuditSegments.sameFile(activeKey, AuditSegments.fileKey(events))) {
      reopenActive();
    }
  }

  /** Opens (creating it when missing) {@code events.jsonl} afresh. Caller holds both locks. */
  private void reopenActive() throws IOException {
    closeQuietly(out);
    closeQuietly(sizer);
    out = new FileOutputStream(events.toFile(), true);
    sizer = new RandomAccessFile(events.toFile(), "r");
    activeKey = AuditSegments.fileKey(events);
    activeNumber = AuditSegments.activeNumber(AuditSegments.rotated(dir));
    knownSize = -1; // the next append re-reads the chain's end
  }

  /**
   * Renames the full {@code events.jsonl} to the next {@code events-NNNNNN.jsonl} and starts a new
   * one; the chain goes on in it. A failure leaves the current file in place (retried on the next
   * record). Caller holds both locks.
   */
  private void rotate() {
    try {
      out.getFD().sync();
      long number = AuditSegments.activeNumber(AuditSegments.rotated(dir));
      if (number != activeNumber) {
        // Index positions of this file's records name the number it was opened with: the next
        // open finds them wrong and re-indexes. Rotating under the expected name matters more.
        LOG.warn("audit file numbering moved from {} to {} in {}", activeNumber, number, dir);
      }
      Files.move(
          events, dir.resolve(AuditSegments.rotatedName(number)), StandardCopyOption.ATOMIC_MOVE);
      long seq = lastSeq;
      String hash = lastHash;
      reopenActive();
      lastSeq = seq;
      lastHash = hash;
      knownSize = 0;
    } catch (IOException | RuntimeException e) {
      LOG.warn("cannot rotate {} (it goes on growing): {}", events, e.toString());
      appendLock.lastWriter = null;
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
    List<Segment> segments = AuditSegments.all(dir);
    int start = 0;
    long offset = 0;
    if (from > 0) {
      AuditIndex.Located at = idx.locate(from);
      start = at == null ? -1 : indexOf(segments, AuditSegments.number(at.offset()));
      offset =
          at == null || start < 0
              ? -1
              : afterLine(
                  segments.get(start).path(), from, AuditSegments.offset(at.offset()), at.hash());
      if (offset < 0) {
        from = 0;
        start = 0;
        offset = 0;
      }
    }
    if (from == 0 && max > 0) {
      LOG.warn("{} does not match {}: rebuilding the index", dir.resolve(INDEX_FILE), events);
      idx.clear();
    }
    if (segments.isEmpty()) {
      return;
    }
    long t0 = System.nanoTime();
    long n = 0;
    List<AuditIndex.Row> rows = new ArrayList<>(BATCH);
    try (ChainReader r = new ChainReader(segments, start, offset)) {
      String line;
      while ((line = r.next()) != null && r.terminated()) {
        try {
          rows.add(
              AuditIndex.Row.of(
                  AuditJson.parse(line),
                  line,
                  AuditSegments.position(r.segment().number(), r.lineStart())));
        } catch (IllegalArgumentException e) {
          LOG.warn(
              "{}: not indexing a malformed line at offset {}", r.segment().path(), r.lineStart());
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
          dir,
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
    }
  }

  private static int indexOf(List<Segment> segments, long number) {
    for (int i = 0; i < segments.size(); i++) {
      if (segments.get(i).number() == number) {
        return i;
      }
    }
    return -1;
  }

  /** Offset after the line at {@code offset} of {@code file} when it is record {@code seq}. */
  private static long afterLine(Path file, long seq, long offset, String hash) throws IOException {
    try (JsonlReader r = new JsonlReader(file, offset)) {
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
