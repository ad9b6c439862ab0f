package io.agentnest.internal.channel;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.internal.audit.Budget;
import io.agentnest.internal.egress.EgressProxy;
import io.agentnest.internal.support.Json;
import io.agentnest.spi.support.BlockInputStream;
import io.agentnest.spi.support.DaemonThreads;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The host end of the sandbox's egress tunnels: each TCP connection that code in the sandbox opens
 * to its local proxy port arrives here over the agent channel and is served by the {@link
 * EgressProxy}. Credit-based flow control (a window per direction) bounds every buffer; a sandbox
 * that sends beyond its credit or opens too many tunnels loses the tunnel, never host memory.
 */
public final class EgressTunnels implements Consumer<Frame> {
  private static final Logger LOG = LoggerFactory.getLogger(EgressTunnels.class);
  static final int WINDOW = 1 << 20;
  static final int MAX_TUNNELS = 256;
  private static final int MAX_FRAME = 256 * 1024;
  private static final ExecutorService POOL = DaemonThreads.pool("agentnest-egress");

  private final AgentChannel channel;
  private final EgressProxy proxy;
  private final Budget budget;
  private final Runnable overBudget;
  private final Map<Long, HostTunnel> tunnels = new ConcurrentHashMap<>();

  /**
   * @param budget how many tunnels the sandbox may open; past it an open is closed at once, with no
   *     proxy attempt and so no record of its own
   * @param overBudget called once when the sandbox keeps opening past its budget (destroy it)
   */
  public EgressTunnels(
      AgentChannel channel, EgressProxy proxy, Budget budget, Runnable overBudget) {
    this.channel = channel;
    this.proxy = proxy;
    this.budget = budget;
    this.overBudget = overBudget;
  }

  @Override
  public void accept(Frame f) {
    long tid = f.header().path("tid").asLong(-1);
    if (tid <= 0) {
      return;
    }
    switch (f.ev()) {
      case Ops.EV_TCP_OPEN -> open(tid);
      case Ops.EV_TCP_DATA -> {
        HostTunnel t = tunnels.get(tid);
        if (t != null) {
          t.in.push(f.payload());
        }
      }
      case Ops.EV_TCP_EOF -> {
        HostTunnel t = tunnels.get(tid);
        if (t != null) {
          t.in.eof();
        }
      }
      case Ops.EV_TCP_ACK -> {
        HostTunnel t = tunnels.get(tid);
        if (t != null) {
          t.out.credit(f.header().path("n").asInt(0));
        }
      }
      case Ops.EV_TCP_CLOSE -> {
        HostTunnel t = tunnels.get(tid);
        if (t != null) {
          t.abort();
        }
      }
      default -> {}
    }
  }

  private void open(long tid) {
    if (tunnels.size() >= MAX_TUNNELS || tunnels.containsKey(tid)) {
      send(Json.object().put(Ops.OP, Ops.OP_TCP_CLOSE).put("tid", tid), new byte[0]);
      return;
    }
    Budget.Decision d = budget.take();
    if (d != Budget.Decision.ADMIT) {
      send(Json.object().put(Ops.OP, Ops.OP_TCP_CLOSE).put("tid", tid), new byte[0]);
      if (d == Budget.Decision.DESTROY) {
        overBudget.run();
      }
      return;
    }
    HostTunnel t = new HostTunnel(tid);
    tunnels.put(tid, t);
    POOL.execute(
        () -> {
          try {
            proxy.handle(t.in, t.out);
          } finally {
            tunnels.remove(tid);
            send(Json.object().put(Ops.OP, Ops.OP_TCP_CLOSE).put("tid", tid), new byte[0]);
          }
        });
  }

  private void send(ObjectNode h, byte[] payload) {
    try {
      channel.send(h, payload);
    } catch (RuntimeException e) {
      LOG.debug("egress tunnel frame not sent: {}", e.toString());
    }
  }

  /** Everything open is aborted when the sandbox goes away. */
  public void closeAll() {
    tunnels.values().forEach(HostTunnel::abort);
    tunnels.clear();
  }

  private final class HostTunnel {
    final long tid;
    final Inbound in = new Inbound();
    final Outbound out = new Outbound();

    HostTunnel(long tid) {
      this.tid = tid;
    }

    void abort() {
      in.eof();
      out.abort();
    }

    /** Bytes from the sandbox, bounded by the credit the host granted. */
    final class Inbound extends BlockInputStream {
      private final ArrayDeque<byte[]> queue = new ArrayDeque<>();
      private byte @Nullable [] current;
      private int pos;
      private long buffered;
      private int unacked;
      private boolean eof;

      synchronized void push(byte[] data) {
        if (eof) {
          return;
        }
        buffered += data.length;
        if (buffered > WINDOW) {
          // Beyond the credit we gave: a misbehaving sandbox. Drop the tunnel.
          LOG.warn("egress tunnel {} exceeded its window; closing it", tid);
          eof = true;
          queue.clear();
          notifyAll();
          out.abort();
          return;
        }
        queue.add(data);
        notifyAll();
      }

      synchronized void eof() {
        eof = true;
        notifyAll();
      }

      /** The proxy tears the tunnel down: wake a blocked read, drop what is queued. */
      @Override
      public synchronized void close() {
        eof = true;
        queue.clear();
        current = null;
        notifyAll();
      }

      @Override
      protected int readBlock(byte[] b, int off, int len) throws IOException {
        int n;
        synchronized (this) {
          while ((current == null || pos >= current.length) && queue.isEmpty() && !eof) {
            try {
              wait();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              throw new InterruptedIOException();
            }
          }
          if (current == null || pos >= current.length) {
            current = queue.poll();
            pos = 0;
            if (current == null) {
              return -1;
            }
          }
          n = Math.min(len, current.length - pos);
          System.arraycopy(current, pos, b, off, n);
          pos += n;
          buffered -= n;
          unacked += n;
        }
        if (unacked >= 64 * 1024
            || (queue.isEmpty() && (current == null || pos >= current.length))) {
          int ack;
          synchronized (this) {
            ack = unacked;
            unacked = 0;
          }
          if (ack > 0) {
            send(
                Json.object().put(Ops.OP, Ops.OP_TCP_ACK).put("tid", tid).put("n", ack),
                new byte[0]);
          }
        }
        return n;
      }
    }

    /** Bytes to the sandbox, sent only within the credit the agent granted. */
    final class Outbound extends OutputStream {
      private long credit = WINDOW;
      private boolean closed;

      synchronized void credit(int n) {
        credit = Math.min(WINDOW, credit + Math.max(0, n));
        notifyAll();
      }

      synchronized void abort() {
        closed = true;
        notifyAll();
      }

      @Override
      public void write(int b) throws IOException {
        write(new byte[] {(byte) b}, 0, 1);
      }

      @Override
      public void write(byte[] b, int off, int len) throws IOException {
        while (len > 0) {
          int n;
          synchronized (this) {
            while (credit <= 0 && !closed) {
              try {
                wait();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException();
              }
            }
            if (closed) {
              throw new IOException("egress tunnel closed by the sandbox");
            }
            n = (int) Math.min(Math.min(len, credit), MAX_FRAME);
            credit -= n;
          }
          send(
              Json.object().put(Ops.OP, Ops.OP_TCP_DATA).put("tid", tid),
              Arrays.copyOfRange(b, off, off + n));
          off += n;
          len -= n;
        }
      }

      @Override
      public void close() {
        boolean wasClosed;
        synchronized (this) {
          wasClosed = closed;
          closed = true;
          notifyAll();
        }
        if (!wasClosed) {
          send(Json.object().put(Ops.OP, Ops.OP_TCP_EOF).put("tid", tid), new byte[0]);
        }
      }
    }
  }
}
