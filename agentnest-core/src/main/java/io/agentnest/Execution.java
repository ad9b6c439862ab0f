package io.agentnest;

import java.util.Iterator;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;

/**
 * A running execution whose events stream as they are produced. Consume it once: either as a {@link
 * Flow.Publisher} (one subscriber, demand respected) or by iterating (blocking). {@link #result()}
 * completes in either case; cancelling it, or {@link #cancel()}, stops the execution in the sandbox
 * (the process tree for shell commands, KeyboardInterrupt for Python).
 */
public interface Execution extends Flow.Publisher<ExecEvent>, Iterable<ExecEvent> {
  /** Completes with the result; {@code cancel(true)} stops the execution. */
  CompletableFuture<ExecResult> result();

  /** Stops the execution in the sandbox; the result then has limit {@link Limit#CANCELLED}. */
  void cancel();

  /** Blocking iteration over the events, ending after {@link ExecEvent.Finished}. */
  @Override
  Iterator<ExecEvent> iterator();
}
