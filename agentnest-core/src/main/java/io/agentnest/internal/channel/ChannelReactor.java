package io.agentnest.internal.channel;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.Iterator;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One selector thread per JVM that watches the channels of all sandboxes whose backend offers a
 * selectable stream, so that an idle sandbox needs no platform thread of its own. The thread only
 * reads and decodes; what the frames trigger (completing calls, listeners of streamed output, the
 * egress tunnels) may block and runs on {@link #dispatcher()}, a pool whose threads exist only
 * while there is work.
 */
final class ChannelReactor {
  private static final Logger LOG = LoggerFactory.getLogger(ChannelReactor.class);
  private static final int SCRATCH = 64 * 1024;
  private static @Nullable ChannelReactor shared;
  private static @Nullable ExecutorService dispatcher;

  /** Called on the reactor thread. */
  interface Reader {
    /**
     * The channel has bytes (or its end) to read. Returns false to stop watching it. Must not
     * block; {@code scratch} is the reactor's and may be used only during the call.
     */
    boolean onReadable(ByteBuffer scratch);

    /** The reactor cannot watch the channel (it was closed before it could be registered). */
    void onUnwatchable(IOException e);

    /**
     * Reading this channel threw ({@link Error}s included: an OutOfMemoryError or a
     * StackOverflowError while decoding one sandbox's bytes); the reactor stops watching it and
     * carries on with every other channel. Must not throw.
     */
    void onCrash(Throwable e);
  }

  /** A watched channel: its reading can be paused (backpressure) and stopped from any thread. */
  final class Registration {
    private final SelectableChannel channel;
    private final Reader reader;
    private volatile @Nullable SelectionKey key;
    private volatile boolean cancelled;

    private Registration(SelectableChannel channel, Reader reader) {
      this.channel = channel;
      this.reader = reader;
    }

    /** Stops or restarts reading this channel; the caller keeps the two in order. */
    void reading(boolean on) {
      SelectionKey k = key;
      if (k == null) {
        return;
      }
      try {
        k.interestOps(on ? SelectionKey.OP_READ : 0);
      } catch (CancelledKeyException e) {
        return;
      }
      if (on) {
        selector.wakeup();
      }
    }

    /** Stops watching the channel for good; the channel itself stays open. */
    void cancel() {
      cancelled = true;
      SelectionKey k = key;
      if (k != null) {
        k.cancel();
        selector.wakeup();
      }
    }
  }

  private final Selector selector;
  private final ConcurrentLinkedQueue<Registration> incoming = new ConcurrentLinkedQueue<>();
  private final ByteBuffer scratch = ByteBuffer.allocateDirect(SCRATCH);

  private ChannelReactor() throws IOException {
    this.selector = Selector.open();
    Thread t = new Thread(this::run, "agentnest-reactor");
    t.setDaemon(true);
    t.start();
  }

  /** The JVM's reactor, started on first use. */
  static synchronized ChannelReactor shared() {
    ChannelReactor r = shared;
    if (r == null) {
      try {
        r = new ChannelReactor();
      } catch (IOException e) {
        throw new UncheckedIOException("cannot open a selector for the sandbox channels", e);
      }
      shared = r;
    }
    return r;
  }

  /**
   * The pool that runs what frames trigger. Unbounded in threads but each channel runs at most one
   * task at a time ({@link OrderedDispatch}), so it never holds more threads than channels with
   * work in hand, and none when all are idle.
   */
  static synchronized ExecutorService dispatcher() {
    ExecutorService d = dispatcher;
    if (d == null) {
      AtomicInteger n = new AtomicInteger();
      d =
          new ThreadPoolExecutor(
              0,
              Integer.MAX_VALUE,
              5,
              TimeUnit.SECONDS,
              new SynchronousQueue<>(),
              r -> {
                Thread t = new Thread(r, "agentnest-dispatch-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
              });
      dispatcher = d;
    }
    return d;
  }

  /** Starts watching {@code channel} (non-blocking) for reads. */
  Registration register(SelectableChannel channel, Reader reader) {
    Registration reg = new Registration(channel, reader);
    incoming.add(reg);
    selector.wakeup();
    return reg;
  }

  private void run() {
    long failures = 0;
    while (selector.isOpen()) {
      try {
        selector.select();
        addIncoming();
        Iterator<SelectionKey> it = selector.selectedKeys().iterator();
        while (it.hasNext()) {
          SelectionKey k = it.next();
          it.remove();
          serve(k);
        }
      } catch (IOException | RuntimeException | Error e) {
        // The loop must outlive any one channel's failure, Errors included (an OutOfMemoryError
        // landing here once stalled every sandbox of the process): every sandbox's reading
        // depends on this one thread.
        // Logged at 1, 2, 4, 8... failures and paced: a failure that repeats must neither spin
        // nor fill the log.
        failures++;
        if (Long.bitCount(failures) == 1) {
          LOG.warn("sandbox channel reactor (failure {}): {}", failures, e.toString(), e);
        }
        pause();
      }
    }
  }

  private static void pause() {
    try {
      Thread.sleep(10);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void addIncoming() {
    Registration reg;
    while ((reg = incoming.poll()) != null) {
      if (reg.cancelled) {
        continue;
      }
      try {
        reg.key = reg.channel.register(selector, SelectionKey.OP_READ, reg);
      } catch (ClosedChannelException e) {
        reg.reader.onUnwatchable(e);
      } catch (RuntimeException e) {
        reg.reader.onUnwatchable(new IOException("cannot watch the sandbox channel: " + e, e));
      }
    }
  }

  private void serve(SelectionKey k) {
    if (!k.isValid() || !(k.attachment() instanceof Registration reg)) {
      return;
    }
    boolean keep;
    try {
      keep = reg.reader.onReadable(scratch);
    } catch (RuntimeException | Error e) {
      // This sandbox's channel is closed with the reason; the others are read on as before. A
      // VirtualMachineError leaves the JVM in doubt, but what it hit here is one channel's work
      // (a parse, a buffer), released with it.
      keep = false;
      k.cancel();
      try {
        reg.reader.onCrash(e);
      } catch (RuntimeException | Error again) {
        e.addSuppressed(again);
      }
      try {
        LOG.warn(
            "sandbox channel reader failed; that sandbox's channel is closed: {}", e.toString());
      } catch (RuntimeException | Error ignored) {
        // logging itself may fail under memory pressure
      }
      scratch.clear();
    }
    if (!keep) {
      k.cancel();
    }
  }
}
