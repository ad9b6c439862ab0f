package io.agentnest.internal.channel;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.internal.support.Json;
import io.agentnest.spi.support.BlockInputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The host end of one TCP connection carried on the channel (an egress tunnel or a connection to an
 * exposed port): {@link #in} are the bytes from the sandbox, {@link #out} the bytes to it. Credit
 * flow control bounds both: the sandbox may have at most {@code window} bytes unread here (more
 * drops the connection, never grows host memory), and the host sends only within the credit the
 * agent granted.
 */
public final class ChannelTunnel {
  private static final Logger LOG = LoggerFactory.getLogger(ChannelTunnel.class);
  static final int MAX_FRAME = 256 * 1024;
  private static final int ACK_EVERY = 64 * 1024;

  private final AgentChannel channel;
  private final long tid;
  private final int window;
  private final AtomicLong bytesIn = new AtomicLong();
  private final AtomicLong bytesOut = new AtomicLong();
  private volatile boolean aborted;

  /** Bytes from the sandbox. */
  public final Inbound in;

  /** Bytes to the sandbox. */
  public final Outbound out;

  public ChannelTunnel(AgentChannel channel, long tid, int window) {
    if (window < 2 * ACK_EVERY) {
      throw new IllegalArgumentException("a tunnel window must be at least " + 2 * ACK_EVERY);
    }
    this.channel = channel;
    this.tid = tid;
    this.window = window;
    // After the window: the streams read it when they are made.
    this.in = new Inbound();
    this.out = new Outbound();
  }

  public long tid() {
    return tid;
  }

  /** Bytes the sandbox may have in flight to the host on this connection. */
  public int window() {
    return window;
  }

  /** Bytes the sandbox sent on this connection. */
  public long bytesIn() {
    return bytesIn.get();
  }

  /** Bytes the host sent on this connection. */
  public long bytesOut() {
    return bytesOut.get();
  }

  /** Ends both directions at once, without a word to the agent. */
  public void abort() {
    aborted = true;
    in.eof();
    out.abort();
  }

  /** Whether the connection was dropped (by either side) rather than ended in order. */
  public boolean aborted() {
    return aborted;
  }

  /** Tells the agent this connection is over (it delivers what it has queued, then closes). */
  public void sendClose() {
    send(Json.object().put(Ops.OP, Ops.OP_TCP_CLOSE).put("tid", tid), new byte[0]);
  }

  /** Routes one tunnel frame of the agent ({@code tcp_data}, {@code tcp_eof}, ...) here. */
  public void accept(Frame f) {
    switch (f.ev()) {
      case Ops.EV_TCP_DATA -> in.push(f.payload());
      case Ops.EV_TCP_EOF -> in.eof();
      case Ops.EV_TCP_ACK -> out.credit(f.header().path("n").asInt(0));
      case Ops.EV_TCP_CLOSE -> abort();
      default -> {}
    }
  }

  private void send(ObjectNode h, byte[] payload) {
    try {
      channel.send(h, payload);
    } catch (RuntimeException e) {
      LOG.debug("tunnel frame not sent: {}", e.toString());
    }
  }

  /** Bytes from the sandbox, bounded by the credit the host granted. */
  public final class Inbound extends BlockInputStream {
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
      if (buffered > window) {
        // Beyond the credit we gave: a misbehaving sandbox. Drop the connection.
        LOG.warn("tunnel {} exceeded its window; closing it", tid);
        eof = true;
        queue.clear();
        notifyAll();
        aborted = true;
        out.abort();
        return;
      }
      bytesIn.addAndGet(data.length);
      queue.add(data);
      notifyAll();
    }

    synchronized void eof() {
      eof = true;
      notifyAll();
    }

    /** The reader tears the connection down: wake a blocked read, drop what is queued. */
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
      // Credit goes back in batches: every window here is far larger than ACK_EVERY, so the
      // agent never waits for one, and a small request costs no frame of its own.
      if (unacked >= ACK_EVERY) {
        int ack;
        synchronized (this) {
          ack = unacked;
          unacked = 0;
        }
        if (ack > 0) {
          send(
              Json.object().put(Ops.OP, Ops.OP_TCP_ACK).put("tid", tid).put("n", ack), new byte[0]);
        }
      }
      return n;
    }
  }

  /** Bytes to the sandbox, sent only within the credit the agent granted. */
  public final class Outbound extends OutputStream {
    private long credit;
    private boolean closed;

    Outbound() {
      this.credit = window;
    }

    synchronized void credit(int n) {
      credit = Math.min(window, credit + Math.max(0, n));
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
            throw new IOException("tunnel closed by the sandbox");
          }
          n = (int) Math.min(Math.min(len, credit), MAX_FRAME);
          credit -= n;
        }
        send(
            Json.object().put(Ops.OP, Ops.OP_TCP_DATA).put("tid", tid),
            Arrays.copyOfRange(b, off, off + n));
        bytesOut.addAndGet(n);
        off += n;
        len -= n;
      }
    }

    /** The host's half-close: the agent shuts down the sandbox socket's writing side. */
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
