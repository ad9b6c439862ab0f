package io.agentnest.audit;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The audit log's writer thread: takes records that are already in {@code events.jsonl} from a
 * bounded queue, inserts them into the index in batches (one transaction each) and then hands them
 * to the sinks, in seq order. Callers never wait for SQLite; a full queue blocks them
 * (backpressure), so records are never dropped.
 */
final class AuditWriter {
  private static final Logger LOG = LoggerFactory.getLogger(AuditWriter.class);

  private static final Pending STOP =
      new Pending(
          new AuditEvent(
              0, Instant.EPOCH, "", null, "", Map.of(), AuditEvent.GENESIS, AuditEvent.GENESIS, 1),
          new byte[1],
          0);

  /** A written record on its way to the index: the line's bytes include the newline. */
  @SuppressWarnings("ArrayRecordComponent") // internal, never compared
  record Pending(AuditEvent event, byte[] line, long offset) {
    String text() {
      return new String(line, 0, line.length - 1, StandardCharsets.UTF_8);
    }
  }

  private final AuditIndex index;
  private final Path events;
  private final ArrayBlockingQueue<Pending> queue =
      new ArrayBlockingQueue<>(AuditLog.QUEUE_CAPACITY);
  private final CopyOnWriteArrayList<AuditSink> sinks = new CopyOnWriteArrayList<>();
  private final Thread thread;
  private final Object progress = new Object();

  // guarded by progress
  private long processed;

  /** {@code events} names the file in log lines only. */
  AuditWriter(AuditIndex index, Path events) {
    this.index = index;
    this.events = events;
    this.thread = new Thread(this::loop, "agentnest-audit-writer");
    thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  /** Whether the caller is the writer thread itself (a sink): it must not record or wait. */
  boolean isCurrentThread() {
    return Thread.currentThread() == thread;
  }

  void addSink(AuditSink sink) {
    sinks.add(sink);
  }

  /** Unregisters a sink and closes it. */
  void removeSink(AuditSink sink) {
    if (sinks.remove(sink)) {
      closeSink(sink);
    }
  }

  void closeSinks() {
    for (AuditSink s : sinks) {
      closeSink(s);
    }
    sinks.clear();
  }

  /** Lets the thread end once it has drained what is queued before this call. */
  void stop() {
    put(STOP);
  }

  /** Waits for the thread to end; true when an interrupt came meanwhile (kept for later). */
  boolean awaitStopped() {
    boolean interrupted = false;
    while (thread.isAlive()) {
      try {
        thread.join();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    return interrupted;
  }

  @SuppressWarnings("ReferenceEquality") // STOP is a sentinel instance
  private void loop() {
    List<Pending> batch = new ArrayList<>(AuditLog.BATCH);
    List<AuditIndex.Row> rows = new ArrayList<>(AuditLog.BATCH);
    boolean stop = false;
    while (!stop) {
      try {
        batch.add(queue.take());
      } catch (InterruptedException e) {
        continue;
      }
      queue.drainTo(batch, AuditLog.BATCH - 1);
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

  void awaitProcessed(long target, long timeoutNanos) {
    if (Thread.currentThread() == thread) {
      return; // called from a sink: the writer cannot wait for itself
    }
    long deadline = System.nanoTime() + timeoutNanos;
    boolean interrupted = false;
    synchronized (progress) {
      while (processed < target && thread.isAlive()) {
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

  /** Queues {@code p}, waiting for room; true when an interrupt came meanwhile (kept for later). */
  boolean put(Pending p) {
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

  private static void closeSink(AuditSink s) {
    try {
      s.close();
    } catch (RuntimeException e) {
      LOG.warn("closing audit sink {}: {}", s, e.toString());
    }
  }
}
