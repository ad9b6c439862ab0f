package io.agentnest.escapes.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.ExecResult;
import java.io.IOException;
import java.util.Optional;

/** Reads the verdict line a probe script printed. Its output is hostile: bounded, validated. */
public final class Verdicts {
  static final String PREFIX = "AGENTNEST-VERDICT ";
  static final String ERROR_PREFIX = "AGENTNEST-PROBE-ERROR ";
  static final int MAX_LINE = 4 << 20;
  static final int MAX_DETAIL = 600;

  private Verdicts() {}

  /** The last verdict in {@code stdout}, or empty when there is none or it is malformed. */
  public static Optional<Judgement> parse(String stdout) {
    int at = stdout.lastIndexOf(PREFIX);
    if (at < 0 || (at > 0 && stdout.charAt(at - 1) != '\n')) {
      return Optional.empty();
    }
    int end = stdout.indexOf('\n', at);
    String line = stdout.substring(at + PREFIX.length(), end < 0 ? stdout.length() : end);
    if (line.length() > MAX_LINE) {
      return Optional.empty();
    }
    try {
      JsonNode n = ProbeJson.MAPPER.readTree(line);
      if (n == null || !n.isObject() || !n.path("through").isBoolean()) {
        return Optional.empty();
      }
      return Optional.of(
          new Judgement(
              n.path("through").asBoolean(), clean(n.path("detail").asText("")), n.path("data")));
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /** Why a script gave no verdict, from what it printed. */
  public static String noVerdict(ExecResult r) {
    String out = r.stdout();
    int at = out.lastIndexOf(ERROR_PREFIX);
    String why =
        at >= 0
            ? out.substring(at + ERROR_PREFIX.length())
            : "exit " + r.exitCode() + (r.limit() != null ? " (" + r.limit() + ")" : "");
    String err = r.stderr().strip();
    if (!err.isEmpty()) {
      why += "; stderr: " + err.substring(Math.max(0, err.length() - 200));
    }
    return "no verdict: " + clean(why);
  }

  /** Printable, single-line and bounded. */
  public static String clean(String s) {
    StringBuilder b = new StringBuilder(Math.min(s.length(), MAX_DETAIL));
    for (int i = 0; i < s.length() && b.length() < MAX_DETAIL; i++) {
      char c = s.charAt(i);
      b.append(c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) ? ' ' : c);
    }
    if (s.length() > MAX_DETAIL) {
      b.append("...");
    }
    return b.toString();
  }
}
