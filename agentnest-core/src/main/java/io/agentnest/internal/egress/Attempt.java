package io.agentnest.internal.egress;

import io.agentnest.NetworkEvent;
import io.agentnest.NetworkEvent.Decision;
import io.agentnest.spi.support.DaemonThreads;
import java.io.Closeable;
import java.io.OutputStream;
import java.net.Socket;
import java.time.Duration;
import java.time.Instant;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.commons.io.IOUtils;
import org.jspecify.annotations.Nullable;

/**
 * The mutable record of one proxy attempt (one client connection), turned into a {@link
 * NetworkEvent} at the end; also what cuts it short (a head deadline, the sandbox's end).
 */
final class Attempt {
  private static final ScheduledExecutorService DEADLINES =
      DaemonThreads.scheduler("agentnest-egress-deadline");

  static final String NO_REQUEST = "no request";
  final Instant time = Instant.now();
  final long startNanos = System.nanoTime();
  String method = "-";
  String host = "";
  int port;
  @Nullable String resolved;
  volatile Decision decision = Decision.DENIED;
  volatile @Nullable String rule;
  volatile String reason = NO_REQUEST;

  /** Bytes relayed so far, each way: live, so a connection cut short reports what it moved. */
  final AtomicLong up = new AtomicLong();

  final AtomicLong down = new AtomicLong();
  final AtomicBoolean emitted = new AtomicBoolean();
  private final Set<Closeable> onAbort = ConcurrentHashMap.newKeySet();
  private final AtomicReference<@Nullable ScheduledFuture<?>> deadline = new AtomicReference<>();
  private volatile @Nullable String expired;
  volatile boolean expiredBeforeHead;
  final AtomicReference<@Nullable Runnable> headRelease = new AtomicReference<>();
  Duration headDeadline = EgressProxy.HEAD_DEADLINE;
  @Nullable OutputStream clientOut;

  /** Closed when the attempt is cut short (a deadline passed, or the sandbox went away). */
  void closeOnAbort(Closeable c) {
    // Sockets already closed (a keep-alive tunnel's replaced upstreams) are let go.
    onAbort.removeIf(x -> x instanceof Socket s && s.isClosed());
    onAbort.add(c);
  }

  /** Closes what the attempt reads and writes: its blocked reads end at once. */
  void abort() {
    onAbort.forEach(IOUtils::closeQuietly);
  }

  /**
   * Until {@link #headRead()}, waits at most {@code limit} for {@code what} (a request head, a TLS
   * hello): past it, the attempt is noted as expired and aborted.
   */
  void awaitHead(Duration limit, String what) {
    ScheduledFuture<?> f =
        DEADLINES.schedule(
            () -> {
              expiredBeforeHead = headRelease.get() != null;
              expired =
                  "the "
                      + what
                      + " did not arrive within "
                      + limit.toMillis()
                      + " ms (the proxy waits that long for a request head)";
              abort();
            },
            limit.toMillis(),
            TimeUnit.MILLISECONDS);
    ScheduledFuture<?> old = deadline.getAndSet(f);
    if (old != null) {
      old.cancel(false);
    }
  }

  /** What was awaited arrived: the deadline is off, and the attempt no longer waits for a head. */
  void headRead() {
    ScheduledFuture<?> f = deadline.getAndSet(null);
    if (f != null) {
      f.cancel(false);
    }
    Runnable r = headRelease.getAndSet(null);
    if (r != null) {
      r.run();
    }
  }

  /** Why the attempt was cut short by a deadline; null when it was not. */
  @Nullable String expired() {
    return expired;
  }

  void deny(String code, String why) {
    decision = Decision.DENIED;
    rule = code;
    reason = HttpSyntax.printable(why);
  }

  void allow(String matched, String why) {
    decision = Decision.ALLOWED;
    rule = matched;
    reason = why;
  }

  void approve(String why) {
    decision = Decision.APPROVED;
    rule = "approval";
    reason = HttpSyntax.printable(why);
  }

  void approveRemembered(String why) {
    approve(why);
    rule = "approval-remembered";
  }

  /** Adds an outcome (e.g. an upstream failure) to the reason, keeping the decision. */
  void note(String what) {
    reason =
        reason.equals(NO_REQUEST)
            ? HttpSyntax.printable(what)
            : reason + "; " + HttpSyntax.printable(what);
  }
}
