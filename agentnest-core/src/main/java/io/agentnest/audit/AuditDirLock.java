package io.agentnest.audit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.FileLockInterruptionException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lock on {@code events.lock} of one directory, shared by every log of this JVM on it: the
 * monitor serialises appends in the JVM, the file lock across processes. The file lock is held as a
 * lease: taken by the first append, kept for up to {@link AuditLog#LEASE_MS}, then released by a
 * flusher (and kept free for a moment so a waiting process gets it).
 */
final class AuditDirLock {
  private static final Logger LOG = LoggerFactory.getLogger(AuditDirLock.class);

  /** Appends of one directory from this JVM share one lock (file locks are per JVM). */
  private static final ConcurrentHashMap<Path, AuditDirLock> DIR_LOCKS = new ConcurrentHashMap<>();

  private final Path path;
  private int refs;
  private @Nullable FileChannel channel;
  private @Nullable FileLock lock;
  private long since;
  @Nullable AuditLog lastWriter;

  private AuditDirLock(Path path) {
    this.path = path;
  }

  static AuditDirLock acquire(Path path) {
    AuditDirLock l = DIR_LOCKS.compute(path, (p, v) -> v == null ? new AuditDirLock(p) : v);
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
      try {
        channel.close();
      } catch (IOException e) {
        LOG.debug("close: {}", e.toString());
      }
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

  /** Releases a lease held for {@link AuditLog#LEASE_MS} and keeps the lock free for a moment. */
  synchronized void expireLease() {
    if (lock != null
        && System.nanoTime() - since >= TimeUnit.MILLISECONDS.toNanos(AuditLog.LEASE_MS)) {
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
