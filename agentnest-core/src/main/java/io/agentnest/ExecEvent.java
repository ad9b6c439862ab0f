package io.agentnest;

/**
 * What a streamed execution produces, in order: output chunks and rich results as they happen, then
 * exactly one {@link Finished}.
 *
 * <pre>{@code
 * for (ExecEvent e : sandbox.start("make", ExecOptions.defaults())) {
 *   if (e instanceof ExecEvent.Output o) System.out.print(o.chunk().text());
 *   if (e instanceof ExecEvent.Finished f) exit = f.result().exitCode();
 * }
 * }</pre>
 */
public sealed interface ExecEvent {
  /** A chunk of stdout or stderr (already redacted). */
  record Output(OutputChunk chunk) implements ExecEvent {}

  /** A rich representation of the last expression's value (Python). */
  record Rich(RichOutput output) implements ExecEvent {}

  /** The output cap was reached; later output of this execution is not delivered. */
  record Truncated(long deliveredBytes) implements ExecEvent {}

  /** With {@link Backpressure#DROP}: this many bytes were dropped because the consumer lagged. */
  record Dropped(long bytes) implements ExecEvent {}

  /** The end: the full result (its stdout/stderr hold everything up to the output cap). */
  record Finished(ExecResult result) implements ExecEvent {}
}
