package io.agentnest.internal.state;

import io.agentnest.AgentNestException;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.FramedStream;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.context.SandboxContext;
import io.agentnest.spi.support.DaemonThreads;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.function.BiFunction;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Carries one bulk stream of a fork from the parent's connection to each copy's. Framed (a
 * session's state, checked as it passes by {@link FramedStream}): up to its END. Raw (a tar):
 * whatever comes until the parent closes. Either way within the fork's {@link StateBudget} (a
 * multiple of the sandbox's memory limit: its state cannot honestly be more).
 *
 * <p>What arrives waits in a {@link RelayBuffer} of {@link #BUFFER} bytes: the parent works on
 * while the copies start, up to that much; then it waits for them, and from then on for the slowest
 * of them. Host memory for a stream is the buffer's bound, never the stream's size.
 */
final class StateRelay implements AutoCloseable {
  /** What one stream may hold on the host at once. */
  static final long BUFFER = 32L << 20;

  static final Duration TIMEOUT = Duration.ofMinutes(3);
  private static final ExecutorService WRITERS = DaemonThreads.pool("agentnest-bulk-writer");

  private final String what;
  private final SocketChannel from;
  private final boolean framed;
  private final StateBudget budget;
  private final RelayBuffer buffer;
  private final List<SocketChannel> to = new CopyOnWriteArrayList<>();
  private final List<CompletableFuture<Void>> writers = new ArrayList<>();
  private long relayed;

  StateRelay(
      String what, SocketChannel from, boolean framed, StateBudget budget, long bufferBytes) {
    this.what = what;
    this.from = from;
    this.framed = framed;
    this.budget = budget;
    this.buffer = new RelayBuffer(bufferBytes);
  }

  /** Bytes carried so far. */
  long relayed() {
    return relayed;
  }

  /** The most this stream held on the host at once. */
  long highWater() {
    return buffer.highWater();
  }

  /**
   * Reads the whole stream and has every copy read it; returns once every copy has answered.
   *
   * @param copiesReady whether the copies have started (asked often: keep it cheap)
   * @param copies the copies (may block until they have started)
   * @param startCopy asks a copy to read, presenting the given token; its answer
   */
  void run(
      BooleanSupplier copiesReady,
      Supplier<List<SandboxState.Copy>> copies,
      BiFunction<SandboxState.Copy, String, CompletableFuture<Frame>> startCopy,
      long deadline)
      throws IOException {
    List<CompletableFuture<Frame>> answers = new ArrayList<>();
    Runnable connect = () -> connect(copies.get(), startCopy, answers, deadline);
    FramedStream frames = framed ? new FramedStream(what) : null;
    try {
      while (frames == null || !frames.done()) {
        ByteBuffer b = room(copiesReady, connect, deadline);
        int n = from.read(b);
        if (n < 0) {
          buffer.giveBack(b);
          if (frames != null) {
            throw new EOFException("the bulk link ended early");
          }
          break;
        }
        b.flip();
        if (frames != null) {
          // Nothing after the stream's END is passed on.
          b.limit(b.position() + frames.accept(b));
        }
        try {
          budget.take(b.remaining(), what);
        } catch (AgentNestException e) {
          buffer.giveBack(b);
          throw e;
        }
        relayed += b.remaining();
        buffer.append(b);
      }
      buffer.complete();
    } catch (IOException | RuntimeException | Error e) {
      buffer.fail(
          e instanceof RuntimeException re
              ? re
              : new AgentNestException("moving " + what + " failed: " + e, e));
      throw e;
    }
    connect.run();
    List<SandboxState.Copy> targets = copies.get();
    for (int i = 0; i < targets.size(); i++) {
      DaemonThreads.join(writers.get(i));
      SandboxContext copy = targets.get(i).sandbox();
      Frame f = copy.channel().await(answers.get(i), TIMEOUT, "move " + what + " in");
      if (f.ev().equals(Ops.EV_ERROR)) {
        throw copy.agentError(f.header());
      }
    }
  }

  /**
   * A chunk to read the next bytes into, once there is room; connects the copies when they have
   * started, or when the buffer is full and nothing else can empty it.
   */
  private ByteBuffer room(BooleanSupplier copiesReady, Runnable connect, long deadline) {
    if (writers.isEmpty() && copiesReady.getAsBoolean()) {
      connect.run();
    }
    if (!buffer.awaitRoom(deadline)) {
      connect.run(); // full and no copy reads yet: wait for them to start
      buffer.awaitRoom(deadline);
    }
    return buffer.obtain();
  }

  /** Has every copy read from its link, each fed by its own writer. */
  private void connect(
      List<SandboxState.Copy> copies,
      BiFunction<SandboxState.Copy, String, CompletableFuture<Frame>> startCopy,
      List<CompletableFuture<Frame>> answers,
      long deadline) {
    if (!writers.isEmpty()) {
      return;
    }
    List<RelayBuffer.Reader> readers = new ArrayList<>();
    for (int i = 0; i < copies.size(); i++) {
      readers.add(buffer.reader());
    }
    for (int i = 0; i < copies.size(); i++) {
      SandboxState.Copy c = copies.get(i);
      String t = c.link().expect();
      CompletableFuture<Frame> done = startCopy.apply(c, t);
      answers.add(done);
      SocketChannel ch = c.link().accept(t, deadline, done::isDone);
      if (ch == null) {
        throw answeredWithoutReading(c.sandbox(), done);
      }
      to.add(ch);
      RelayBuffer.Reader r = readers.get(i);
      writers.add(CompletableFuture.runAsync(() -> feed(ch, r), WRITERS));
    }
  }

  private AgentNestException answeredWithoutReading(
      SandboxContext target, CompletableFuture<Frame> done) {
    Frame f = target.channel().await(done, TIMEOUT, "move " + what + " in");
    return f.ev().equals(Ops.EV_ERROR)
        ? target.agentError(f.header())
        : new AgentNestException(
            "copy " + target.id() + " answered for " + what + " without reading it");
  }

  private void feed(SocketChannel ch, RelayBuffer.Reader r) {
    try {
      ByteBuffer b;
      while ((b = r.take()) != null) {
        while (b.hasRemaining()) {
          ch.write(b);
        }
      }
      ch.shutdownOutput();
    } catch (IOException e) {
      AgentNestException failed =
          new AgentNestException("the bulk link to a copy failed: " + e.getMessage(), e);
      buffer.fail(failed);
      throw failed;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      AgentNestException failed = new AgentNestException("interrupted while moving " + what, e);
      buffer.fail(failed);
      throw failed;
    } finally {
      r.finish();
    }
  }

  /** Ends the stream: unblocks everything waiting on it and frees its memory. */
  @Override
  public void close() {
    closeQuietly(from);
    to.forEach(StateRelay::closeQuietly);
    buffer.fail(new AgentNestException("moving " + what + " was stopped"));
  }

  static void closeQuietly(SocketChannel c) {
    try {
      c.close();
    } catch (IOException e) {
      // closing to unblock or to finish: nothing more to do
    }
  }
}
