package io.agentnest.cli;

import io.agentnest.ConfigException;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses {@code 500ms}, {@code 30s}, {@code 2m}, {@code 1h}; a bare number means seconds. */
final class Durations {
  private static final Pattern P = Pattern.compile("([0-9]+)(ms|s|m|h)?");

  private Durations() {}

  static Duration parse(String field, String text) {
    Matcher m = P.matcher(text.trim());
    if (!m.matches()) {
      throw new ConfigException(
          field + " '" + text + "' is not a duration: use e.g. 500ms, 30s, 2m or 1h");
    }
    long n = Long.parseLong(m.group(1));
    String unit = m.group(2) == null ? "s" : m.group(2);
    Duration d =
        switch (unit) {
          case "ms" -> Duration.ofMillis(n);
          case "m" -> Duration.ofMinutes(n);
          case "h" -> Duration.ofHours(n);
          default -> Duration.ofSeconds(n);
        };
    if (d.isZero()) {
      throw new ConfigException(field + " must be positive, got '" + text + "'");
    }
    return d;
  }
}
