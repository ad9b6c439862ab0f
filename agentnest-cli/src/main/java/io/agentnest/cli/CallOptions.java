package io.agentnest.cli;

import io.agentnest.AgentNestException;
import io.agentnest.Backpressure;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.OutputChunk;
import io.agentnest.spi.support.ExitHooks;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Option;

/**
 * How {@code exec} and {@code code} run one call in a sandbox made earlier and show it: as {@code
 * run} does (streamed, control sequences shown rather than obeyed on a terminal, or one JSON
 * object), with a per-call timeout.
 */
final class CallOptions {
  @Option(
      names = "--json",
      description = "Print the result as one JSON object (as 'run --json') instead of streaming.")
  boolean json;

  @Option(
      names = "--raw",
      description =
          "Write the sandbox's output to the terminal byte for byte (by default control sequences"
              + " are shown, ESC as ^[, when stdout or stderr is a terminal).")
  boolean raw;

  @Option(
      names = "--timeout",
      paramLabel = "DURATION",
      description = "Wall-time limit of this call, e.g. 30s, 2m (default: the sandbox's).")
  @Nullable String timeout;

  /** Where the output goes; {@link #outIsTerminal()} says whether stdout is defused. */
  TerminalOutput terminal() {
    return new TerminalOutput(
        System.out, System.err, outIsTerminal(), !raw && Terminals.isTerminal(2));
  }

  boolean outIsTerminal() {
    return !raw && Terminals.isTerminal(1);
  }

  ExecOptions options(TerminalOutput terminal) {
    // The output reaches the terminal through onOutput; nobody reads the event stream, which
    // must then never make the sandbox wait.
    ExecOptions.Builder b = ExecOptions.builder().backpressure(Backpressure.DROP);
    if (!json) {
      b.onOutput(c -> terminal.write(c.stream() == OutputChunk.Stream.STDERR, c.data()));
    }
    if (timeout != null) {
      b.timeout(Durations.parse("--timeout", timeout));
    }
    return b.build();
  }

  /**
   * Starts a call with {@code start} and returns its result. If this process is ended meanwhile
   * (^C, SIGTERM), the call is stopped in the sandbox first (a command's process tree;
   * KeyboardInterrupt in a Python session, which keeps its variables), rather than left to run to
   * its timeout. The exit task is in place before the call starts: a signal that comes while it
   * starts still stops it.
   */
  static ExecResult run(Supplier<Execution> start) {
    AtomicReference<@Nullable Execution> current = new AtomicReference<>();
    AtomicBoolean starting = new AtomicBoolean(true);
    ExitHooks.add(ExitHooks.SANDBOXES, () -> stopAtExit(current, starting));
    Execution ex;
    try {
      ex = start.get();
      current.set(ex);
    } finally {
      starting.set(false);
    }
    try {
      return ex.result().get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      ex.cancel();
      throw new AgentNestException("interrupted while waiting for the call; it was stopped");
    } catch (ExecutionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      if (cause instanceof CompletionException ce && ce.getCause() != null) {
        cause = ce.getCause();
      }
      if (cause instanceof RuntimeException re) {
        throw re;
      }
      throw new AgentNestException("the call failed: " + cause, cause);
    }
  }

  private static void stopAtExit(
      AtomicReference<@Nullable Execution> current, AtomicBoolean starting) {
    try {
      // Started on the main thread, which runs on during shutdown: wait (bounded) for the handle.
      for (int i = 0; current.get() == null && starting.get() && i < 100; i++) {
        Thread.sleep(20);
      }
      Execution ex = current.get();
      if (ex != null && !ex.result().isDone()) {
        ex.cancel();
        ex.result().get(STOP_WAIT_SECONDS, TimeUnit.SECONDS);
      }
    } catch (ExecutionException | TimeoutException | CancellationException e) {
      // Stopping was asked for; the sandbox's own timeout is the backstop.
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** How long an exiting CLI waits for a call it stopped to end. */
  static final long STOP_WAIT_SECONDS = 3;
}
