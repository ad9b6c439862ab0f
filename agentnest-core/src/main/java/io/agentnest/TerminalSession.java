package io.agentnest;

import java.util.concurrent.CompletableFuture;

/**
 * A program running on a pseudo-terminal in a sandbox ({@link Sandbox#terminal}), for a person at a
 * terminal on the host: an interactive shell, an editor, a REPL. What the person types goes in with
 * {@link #type}, the window size with {@link #resize}; the output (one stream, as the terminal
 * shows it; redacted and capped like any other call's) arrives through {@link
 * ExecOptions.Builder#onOutput}. It is a call like {@link Sandbox#exec}: approved, audited, bounded
 * by the call's timeout and output cap.
 *
 * <pre>{@code
 * try (TerminalSession t = sandbox.terminal(List.of("/bin/sh", "-i"), 24, 80,
 *     ExecOptions.builder().onOutput(c -> screen.write(c.data())).build())) {
 *   t.type("ls\n".getBytes(UTF_8));
 *   t.resize(40, 120);
 *   t.type("exit\n".getBytes(UTF_8));
 *   t.result().join().exitCode();
 * }
 * }</pre>
 */
public interface TerminalSession extends AutoCloseable {
  /** Bytes typed at the terminal (keys, pasted text; {@code ^C} is byte 3). */
  void type(byte[] keys);

  /** The window is now {@code rows} by {@code cols}; the program gets SIGWINCH. */
  void resize(int rows, int cols);

  /** Whether the program has started: false while an approval it needs is still open. */
  boolean started();

  /** Completes when the program has exited (its status, or the limit that stopped it). */
  CompletableFuture<ExecResult> result();

  /** Hangs up: stops the program and what it started, if still running. Idempotent. */
  @Override
  void close();
}
