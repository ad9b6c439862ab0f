package io.agentnest.server.http;

import java.util.Map;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Bounded pools for the threads streams hold beside the request threads (issue 42, LOW 11: a cached
 * pool grew by a thread per execution whose client had gone). A full pool refuses the next task
 * ({@link java.util.concurrent.RejectedExecutionException}); the caller answers 503 naming it
 * instead of growing without end.
 */
public final class StreamThreads {
  /** WebSocket and E2B pumps at most: each moves one running execution's events. */
  public static final int MAX_PUMPS = 256;

  /** Keep-alive writers at most: each writes one stream's comment line, bounded by its timeout. */
  public static final int MAX_PINGS = 64;

  private StreamThreads() {}

  public static ThreadPoolExecutor pool(String name, int max) {
    AtomicInteger n = new AtomicInteger();
    return new ThreadPoolExecutor(
        0,
        max,
        30,
        TimeUnit.SECONDS,
        new SynchronousQueue<>(),
        r -> {
          Thread t = new Thread(r, name + "-" + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        },
        new ThreadPoolExecutor.AbortPolicy());
  }

  public static ApiException full(String what, int max) {
    return new ApiException(
        503,
        ErrorCode.QUOTA,
        "the server's " + what + " threads are all in use (" + max + ")",
        "retry after the Retry-After seconds; end streams you no longer read",
        Map.of("quota", what + "_threads", "limit", max, "used", max));
  }
}
