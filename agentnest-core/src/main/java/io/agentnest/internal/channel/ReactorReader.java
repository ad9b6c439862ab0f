package io.agentnest.internal.channel;

import io.agentnest.spi.SelectableAgentStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;

/**
 * Reads one connection of an {@link AgentChannel} on the shared {@link ChannelReactor}: decodes
 * frames as bytes arrive and hands them, in order, to the channel on the dispatch pool. When the
 * channel's listeners fall behind, reading pauses (the agent then blocks on its full pipe), so a
 * sandbox that floods cannot make the host queue more than a bounded amount.
 */
final class ReactorReader implements ChannelReactor.Reader {
  /** Queued, undelivered frame bytes above which reading pauses, and below which it resumes. */
  static final long PAUSE_AT = 4L << 20;

  static final long RESUME_AT = 1L << 20;

  // Reads per readiness event before the reactor turns to the other channels.
  private static final int TURNS = 16;

  /** What the channel does with what this reader found, called on the dispatch pool, in order. */
  interface Sink {
    /** Returns false once this reader's connection is no longer the channel's. */
    boolean frame(int gen, Frame f);

    void end(int gen);

    void failed(int gen, IOException e);

    void crashed(Throwable e);
  }

  private final int gen;
  private final SelectableAgentStream stream;
  private final Sink sink;
  private final OrderedDispatch dispatch;
  private final FrameDecoder decoder = new FrameDecoder();
  private final ChannelReactor.Registration registration;
  private long queued; // guarded by this
  private boolean paused; // guarded by this
  private volatile boolean stopped;

  ReactorReader(int gen, SelectableAgentStream stream, Sink sink, OrderedDispatch dispatch) {
    this.gen = gen;
    this.stream = stream;
    this.sink = sink;
    this.dispatch = dispatch;
    this.registration = ChannelReactor.shared().register(stream.channel(), this);
  }

  /** Stops reading for good (the channel closed or moved to another connection). */
  void stop() {
    stopped = true;
    registration.cancel();
  }

  @Override
  public boolean onReadable(ByteBuffer scratch) {
    if (stopped) {
      return false;
    }
    try {
      for (int i = 0; i < TURNS && !isPaused(); i++) {
        int n = stream.read(scratch, this::decode);
        if (n < 0) {
          decoder.end();
          dispatch.submit(() -> sink.end(gen));
          return false;
        }
        if (n == 0) {
          return true;
        }
      }
      return true;
    } catch (UncheckedIOException e) {
      IOException cause = e.getCause() != null ? e.getCause() : new IOException(e);
      dispatch.submit(() -> sink.failed(gen, cause));
      return false;
    } catch (IOException e) {
      dispatch.submit(() -> sink.failed(gen, e));
      return false;
    } catch (RuntimeException e) {
      dispatch.submit(() -> sink.crashed(e));
      return false;
    }
    // An Error goes to the reactor, which stops watching this channel and calls onCrash.
  }

  @Override
  public void onCrash(Throwable e) {
    stopped = true;
    // The decoder's partial frame (what may have caused the Error) is dropped with the channel.
    decoder.discard();
    dispatch.submit(() -> sink.crashed(e));
  }

  @Override
  public void onUnwatchable(IOException e) {
    dispatch.submit(() -> sink.failed(gen, e));
  }

  private void decode(ByteBuffer stdout) {
    try {
      decoder.feed(stdout, this::queue);
    } catch (ProtocolException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void queue(Frame f) {
    long size = f.payload().length + 64L;
    synchronized (this) {
      queued += size;
      if (!paused && queued > PAUSE_AT) {
        paused = true;
        registration.reading(false);
      }
    }
    dispatch.submit(
        () -> {
          try {
            if (!sink.frame(gen, f)) {
              stop();
            }
          } catch (RuntimeException | Error e) {
            // An Error (OutOfMemoryError above all) fails every pending call now; the pool thread
            // carries on with other channels' work.
            sink.crashed(e);
          } finally {
            delivered(size);
          }
        });
  }

  private void delivered(long size) {
    synchronized (this) {
      queued -= size;
      if (paused && queued <= RESUME_AT && !stopped) {
        paused = false;
        registration.reading(true);
      }
    }
  }

  private synchronized boolean isPaused() {
    return paused;
  }
}
