package io.agentnest.cli;

import io.agentnest.ExecOptions;
import io.agentnest.OutputChunk;
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
    ExecOptions.Builder b = ExecOptions.builder();
    if (!json) {
      b.onOutput(c -> terminal.write(c.stream() == OutputChunk.Stream.STDERR, c.data()));
    }
    if (timeout != null) {
      b.timeout(Durations.parse("--timeout", timeout));
    }
    return b.build();
  }
}
