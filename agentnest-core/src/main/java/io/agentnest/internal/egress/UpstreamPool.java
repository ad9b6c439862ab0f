package io.agentnest.internal.egress;

import java.io.BufferedInputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import org.apache.commons.io.IOUtils;
import org.jspecify.annotations.Nullable;

/**
 * Verified TLS connections to intercepted hosts, kept open between the sandbox's connections: a new
 * tunnel to the same host reuses one instead of paying a TCP connect and a second TLS handshake.
 * One pool per sandbox proxy, so connections never cross sandboxes; a connection is only pooled
 * after a complete response on it that left it open, and is dropped after {@link #IDLE_NANOS} idle.
 */
final class UpstreamPool implements AutoCloseable {
  static final long IDLE_NANOS = 20_000_000_000L;
  static final int MAX_PER_TARGET = 4;
  static final int MAX_TOTAL = 64;

  /** One verified upstream connection and its streams. */
  record Upstream(Socket socket, BufferedInputStream in, OutputStream out, long since) {
    Upstream idleNow() {
      return new Upstream(socket, in, out, System.nanoTime());
    }

    void close() {
      IOUtils.closeQuietly(socket);
    }
  }

  private final Map<String, Deque<Upstream>> idle = new HashMap<>();
  private int total;
  private boolean closed;

  /** An idle connection to {@code target} (host:port) that has not timed out; null when none. */
  synchronized @Nullable Upstream take(String target) {
    Deque<Upstream> q = idle.get(target);
    long now = System.nanoTime();
    while (q != null && !q.isEmpty()) {
      Upstream u = q.pollLast();
      total--;
      if (now - u.since() < IDLE_NANOS && !u.socket().isClosed()) {
        return u;
      }
      u.close();
    }
    return null;
  }

  /** Keeps {@code u} for the next tunnel to {@code target}, or closes it when the pool is full. */
  void offer(String target, Upstream u) {
    Upstream dropped = null;
    synchronized (this) {
      Deque<Upstream> q = idle.computeIfAbsent(target, t -> new ArrayDeque<>());
      if (closed || q.size() >= MAX_PER_TARGET || total >= MAX_TOTAL) {
        dropped = u;
      } else {
        q.addLast(u.idleNow());
        total++;
      }
    }
    if (dropped != null) {
      dropped.close();
    }
  }

  /** Closes every idle connection; later offers are closed at once. */
  @Override
  public void close() {
    synchronized (this) {
      closed = true;
      idle.values().forEach(q -> q.forEach(Upstream::close));
      idle.clear();
      total = 0;
    }
  }
}
