package io.agentnest.internal.audit.shipping;

import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.ShippingSink;
import io.agentnest.audit.ShippingStats;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A shipping sink: {@link #accept} (on the audit writer's thread) only offers the record to a
 * bounded queue; one daemon thread takes batches and hands them to the {@link Transport}. What does
 * not fit, and every batch the transport fails to send, is dropped and counted; before the next
 * batch that goes out, the collector gets one {@link Gap} record naming how many and which seqs.
 * After a failure the sender waits (200 ms doubling up to 30 s) before it tries again, so a dead
 * collector costs a connection attempt now and then, never a busy loop; while it waits the queue
 * holds what arrives, up to its capacity.
 */
final class Shipper implements ShippingSink {
  private static final Logger LOG = LoggerFactory.getLogger(Shipper.class);

  static final int BATCH = 256;
  static final Duration MIN_BACKOFF = Duration.ofMillis(200);
  static final Duration MAX_BACKOFF = Duration.ofSeconds(30);
  // Sandboxes whose tenant is remembered; a record of an older one ships without its tenant.
  private static final int TENANTS = 16_384;

  private final String target;
  private final Transport transport;
  private final int capacity;
  private final Duration flushTimeout;
  private final Duration maxBackoff;
  private final ArrayBlockingQueue<Shipment> queue;
  private final TenantMemory tenants = new TenantMemory(TENANTS);
  private final AtomicLong sent = new AtomicLong();
  private final AtomicLong dropped = new AtomicLong();
  private final AtomicLong gaps = new AtomicLong();
  private final AtomicInteger inFlight = new AtomicInteger();
  private final CountDownLatch closing = new CountDownLatch(1);
  private final Thread sender;

  // Drops not yet reported to the collector; guarded by this.
  private long pendingCount;
  private long pendingFirst = Long.MAX_VALUE;
  private long pendingLast = Long.MIN_VALUE;
  private boolean warnedDropping;

  private volatile boolean connected;
  private volatile @Nullable String lastError;
  private volatile long closeDeadline;

  Shipper(String target, Transport transport, int capacity, Duration flushTimeout) {
    this(target, transport, capacity, flushTimeout, MAX_BACKOFF);
  }

  Shipper(
      String target,
      Transport transport,
      int capacity,
      Duration flushTimeout,
      Duration maxBackoff) {
    this.target = target;
    this.transport = transport;
    this.capacity = capacity;
    this.flushTimeout = flushTimeout;
    this.maxBackoff = maxBackoff;
    this.queue = new ArrayBlockingQueue<>(capacity);
    this.sender = new Thread(this::run, "agentnest-audit-ship " + target);
    sender.setDaemon(true);
    sender.start();
  }

  @Override
  public void accept(AuditEvent e) {
    String tenant = tenants.tenantOf(e);
    if (closing.getCount() == 0) {
      dropped(e.seq(), e.seq(), 1, "the sink is closed");
    } else if (!queue.offer(new Shipment(e, tenant))) {
      dropped(e.seq(), e.seq(), 1, "queue full (" + capacity + " records)");
    }
  }

  @Override
  public ShippingStats stats() {
    return new ShippingStats(
        target,
        sent.get(),
        dropped.get(),
        gaps.get(),
        queue.size() + inFlight.get(),
        connected,
        lastError);
  }

  @Override
  public void close() {
    if (closing.getCount() == 0) {
      return;
    }
    closeDeadline = System.nanoTime() + flushTimeout.toNanos();
    closing.countDown();
    try {
      sender.join(flushTimeout.toMillis() + 2_000);
      if (sender.isAlive()) {
        // Stuck in a write to a collector that does not read: closing the socket ends the write.
        transport.close();
        sender.join(2_000);
      }
    } catch (InterruptedException ie) {
      Thread.currentThread().interrupt();
    }
    ShippingStats s = stats();
    LOG.info(
        "audit shipping to {} stopped: {} sent, {} dropped, {} gap records",
        target,
        s.sent(),
        s.dropped(),
        s.gaps());
  }

  private void dropped(long first, long last, long n, String why) {
    dropped.addAndGet(n);
    boolean warn;
    synchronized (this) {
      pendingCount += n;
      pendingFirst = Math.min(pendingFirst, first);
      pendingLast = Math.max(pendingLast, last);
      warn = !warnedDropping;
      warnedDropping = true;
    }
    if (warn) {
      LOG.warn(
          "audit shipping to {}: dropping records ({}); the local audit log keeps them and the"
              + " collector gets a gap record when delivery resumes",
          target,
          why);
    }
  }

  private synchronized @Nullable Gap takeGap() {
    if (pendingCount == 0) {
      return null;
    }
    Gap g = new Gap(pendingCount, pendingFirst, pendingLast, Instant.now());
    pendingCount = 0;
    pendingFirst = Long.MAX_VALUE;
    pendingLast = Long.MIN_VALUE;
    return g;
  }

  private synchronized void restoreGap(Gap g) {
    pendingCount += g.dropped();
    pendingFirst = Math.min(pendingFirst, g.firstSeq());
    pendingLast = Math.max(pendingLast, g.lastSeq());
  }

  private boolean closingAndDone() {
    if (closing.getCount() != 0) {
      return false;
    }
    boolean nothingLeft;
    synchronized (this) {
      nothingLeft = queue.isEmpty() && pendingCount == 0;
    }
    return nothingLeft || System.nanoTime() - closeDeadline > 0;
  }

  private void run() {
    long backoffMs = MIN_BACKOFF.toMillis();
    boolean failing = false;
    List<Shipment> batch = new ArrayList<>(BATCH);
    while (!closingAndDone()) {
      Gap gap = null;
      batch.clear();
      try {
        if (!connected) {
          transport.open();
          connected = true;
        }
        Shipment first = queue.poll(closing.getCount() == 0 ? 0 : 500, TimeUnit.MILLISECONDS);
        if (first != null) {
          batch.add(first);
          queue.drainTo(batch, BATCH - 1);
          inFlight.set(batch.size());
        }
        gap = takeGap();
        if (batch.isEmpty() && gap == null) {
          continue;
        }
        transport.send(batch, gap);
        sent.addAndGet(batch.size());
        inFlight.set(0);
        if (gap != null) {
          gaps.incrementAndGet();
          synchronized (this) {
            warnedDropping = pendingCount > 0;
          }
          LOG.warn(
              "audit shipping to {}: delivering again; told the collector that {} records"
                  + " (seq {}..{}) were dropped",
              target,
              gap.dropped(),
              gap.firstSeq(),
              gap.lastSeq());
        }
        if (failing) {
          LOG.info("audit shipping to {}: the collector takes records again", target);
          failing = false;
        }
        backoffMs = MIN_BACKOFF.toMillis();
        lastError = null;
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
        break;
      } catch (Exception ex) {
        connected = false;
        transport.close();
        String why = ex.getMessage() == null ? ex.getClass().getSimpleName() : ex.getMessage();
        lastError = why;
        if (gap != null) {
          restoreGap(gap);
        }
        inFlight.set(0);
        if (!batch.isEmpty()) {
          dropped(
              batch.get(0).event().seq(),
              batch.get(batch.size() - 1).event().seq(),
              batch.size(),
              "collector unreachable: " + why);
        }
        if (!failing) {
          LOG.warn("audit shipping to {} failed ({}): retrying with backoff", target, why);
          failing = true;
        }
        if (closing.getCount() == 0) {
          break;
        }
        try {
          closing.await(backoffMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          break;
        }
        backoffMs = Math.min(backoffMs * 2, maxBackoff.toMillis());
      }
    }
    List<Shipment> rest = new ArrayList<>();
    queue.drainTo(rest);
    if (!rest.isEmpty()) {
      dropped(
          rest.get(0).event().seq(),
          rest.get(rest.size() - 1).event().seq(),
          rest.size(),
          "closed before they could be sent");
    }
    connected = false;
    transport.shutdown();
  }
}
