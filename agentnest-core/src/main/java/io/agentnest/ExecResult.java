package io.agentnest;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The outcome of a shell command or a Python session call. A failing command or a Python error is a
 * result, not an exception: check {@link #ok()}, {@link #exitCode()} and {@link #error()}.
 *
 * <pre>{@code
 * ExecResult r = sandbox.runCode("1/0");
 * r.error().name();   // "ZeroDivisionError"
 * }</pre>
 *
 * @param exitCode process exit code (shell); 0 or 1 for Python calls (1 when {@link #error()} is
 *     set)
 * @param stdout standard output, decoded as UTF-8 (invalid bytes become U+FFFD)
 * @param stderr standard error, decoded the same way
 * @param result repr of the last expression's value (Python), or null
 * @param rich rich representations of that value (PNG, HTML, ...)
 * @param error the Python exception, or null
 * @param duration wall time inside the sandbox
 * @param limit the limit that stopped the execution, or null
 * @param truncated whether output was cut at the output cap
 * @param stateLost whether the Python session had to be restarted and lost its variables
 * @param redactions how many values were masked, by secret name or credential rule (never the
 *     values themselves)
 */
public record ExecResult(
    int exitCode,
    String stdout,
    String stderr,
    @Nullable String result,
    List<RichOutput> rich,
    @Nullable ExecError error,
    Duration duration,
    @Nullable Limit limit,
    boolean truncated,
    boolean stateLost,
    Map<String, Integer> redactions) {

  public ExecResult {
    rich = List.copyOf(rich);
    redactions = Map.copyOf(redactions);
  }

  /** Standard output; the same as {@link #stdout()}. */
  public String output() {
    return stdout;
  }

  /** True when the command exited 0, no Python error was raised and no limit was hit. */
  public boolean ok() {
    return exitCode == 0 && error == null && limit == null;
  }
}
