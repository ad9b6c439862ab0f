package io.agentnest;

import java.util.concurrent.CompletableFuture;

/**
 * A long-lived Python interpreter inside a sandbox. Variables, imports and definitions persist
 * between calls.
 *
 * <pre>{@code
 * PythonSession s = sandbox.pythonSession("analysis");
 * s.run("import statistics; xs = [1, 2, 3]");
 * s.run("statistics.mean(xs)").result();   // "2"
 * }</pre>
 */
public interface PythonSession {
  String name();

  /** {@link #run(String, ExecOptions)} with the default options. */
  default ExecResult run(String code) {
    return run(code, ExecOptions.defaults());
  }

  ExecResult run(String code, ExecOptions options);

  /** Starts code whose output streams as events. */
  Execution start(String code, ExecOptions options);

  /** Async call; cancelling the future interrupts the code (KeyboardInterrupt). */
  CompletableFuture<ExecResult> runAsync(String code, ExecOptions options);

  /** Ends the interpreter; the next call starts a fresh one. */
  void close();
}
