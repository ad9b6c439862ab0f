package io.agentnest.audit;

import io.agentnest.AuditTrail;
import io.agentnest.ConfigException;
import io.agentnest.Sizes;
import io.agentnest.audit.AuditSegments.Segment;
import io.agentnest.spi.support.AgentNestHome;
import io.agentnest.spi.support.DiskGuard;
import io.agentnest.spi.support.HostProcess;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.sql.SQLException;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.apache.commons.io.IOUtils;
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
 *
 * <p>This class is the append path and the public face; the rest has a class each: {@link
 * AuditWriter} (the writer thread, index inserts, sinks), {@link AuditDirLock} (the lease on {@code
 * events.lock}), {@link ChainTail} (where a file's chain ends), {@link IndexCatchUp} (the index
 * after a crash), {@link AuditFollower} (tail), {@link AuditVerifier} (verify) and {@link
 * AuditSegments} (rotated file names). It stays at about 600 lines because the append, the chain
 * state and rotation share fields guarded by one lock: split further, the lock would span classes.
 */
public final class AuditLog implements AuditTrail, AutoCloseable {
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

  private final Path dir;
  private final Path events;
  private final AuditDirLock appendLock;
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
  private final AuditWriter writer;
  private final Thread flusher;

  // guarded by appendLock
  private long lastSeq;
  private String lastHash = AuditEvent.GENESIS;
  private long knownSize;
  private long enqueued;

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
    this.appendLock = AuditDirLock.acquire(dir.toRealPath().resolve(LOCK_FILE));
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
      IndexCatchUp.run(idx, dir, lastSeq, lastHash);
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
    this.writer = new AuditWriter(idx, events);
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

  /**
   * The process-wide default audit log ({@link #openDefault()}), opened on first use and closed at
   * JVM exit; every sandbox of this process records there. A front-end records its own events (e.g.
   * a configuration file it loaded) in it with {@link #record}.
   *
   * @throws io.agentnest.AgentNestException when it cannot be opened, naming the directory and the
   *     fix
   */
  public static AuditLog shared() {
    return SharedAuditLog.get();
  }

  /** {@code AGENTNEST_HOME/audit}. */
  public static Path defaultDir() {
    return AgentNestHome.dir().resolve("audit");
  }

  @Override
  public Path dir() {
    return dir;
  }

  /** Registers a sink; it receives every record written from now on, in seq order. */
  public void addSink(AuditSink sink) {
    writer.addSink(Objects.requireNonNull(sink, "sink"));
  }

  /** Unregisters a sink and closes it. */
  public void removeSink(AuditSink sink) {
    writer.removeSink(sink);
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
    if (writer.isCurrentThread()) {
      throw new IllegalStateException("an audit sink must not record (it runs on the writer)");
    }
    AuditJson.Data d = AuditJson.normalize(data);
    boolean interrupted = Thread.interrupted();
    try {
      synchronized (appendLock) {
        if (closed) {
          throw new IllegalStateException("the audit log " + dir + " is closed");
        }
        AuditWriter.Pending p;
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
              new AuditWriter.Pending(
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
        interrupted |= writer.put(p);
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
    writer.awaitProcessed(target, Long.MAX_VALUE);
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
    writer.awaitProcessed(target, TimeUnit.SECONDS.toNanos(30));
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
    new AuditFollower(dir, index).tail(filter, afterSeq, onEvent, keepGoing);
  }

  /** Stops the writer after it has drained the queue, fsyncs and closes files, index and sinks. */
  @Override
  public void close() {
    if (writer.isCurrentThread()) {
      throw new IllegalStateException("an audit sink must not close the log");
    }
    synchronized (appendLock) {
      if (closed) {
        return;
      }
      closed = true;
      writer.stop();
    }
    boolean interrupted = writer.awaitStopped();
    flusher.interrupt();
    sync();
    try {
      index.close();
    } catch (SQLException e) {
      LOG.warn("closing the audit index: {}", e.getMessage());
    }
    writer.closeSinks();
    IOUtils.closeQuietly(out, AuditLog::closeFailed);
    IOUtils.closeQuietly(sizer, AuditLog::closeFailed);
    appendLock.releaseRef(this);
    if (interrupted) {
      Thread.currentThread().interrupt();
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

  // ---- chain state ----

  /** Reads the chain state from the end of the file. Caller holds both locks. */
  private void reloadTail(long size) throws UncheckedIOException {
    try {
      ChainTail t = ChainTail.read(events, size);
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
          ChainTail before = ChainTail.read(last, Files.size(last));
          t = new ChainTail(before.seq(), before.hash(), t.torn());
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
    IOUtils.closeQuietly(out, AuditLog::closeFailed);
    IOUtils.closeQuietly(sizer, AuditLog::closeFailed);
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

  private static void closeFailed(Exception e) {
    LOG.debug("close: {}", e.toString());
  }

  /** The actor id, computed once (host name lookup). */
  private static final class Actor {
    static final String ID = HostProcess.ownerId();
  }
}
