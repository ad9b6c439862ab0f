package io.agentnest.config;

import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one duration syntax of the house: YAML values and CLI options alike ({@code 500ms}, {@code
 * 30s}, {@code 2m}, {@code 1h}, {@code 1d}; a bare number means seconds).
 */
public final class Durations {
  /** The syntax, for messages: what to write instead. */
  public static final String EXAMPLES = "500ms, 30s, 2m, 1h or 1d";

  static final Pattern SYNTAX =
      Pattern.compile("\\s*([0-9]{1,12})\\s*(ms|s|m|h|d)?\\s*", Pattern.CASE_INSENSITIVE);

  private Durations() {}

  /** The duration {@code text} names, or empty when it is not one. */
  public static Optional<Duration> parse(String text) {
    Matcher m = SYNTAX.matcher(text);
    if (!m.matches()) {
      return Optional.empty();
    }
    long n = Long.parseLong(m.group(1));
    String unit = m.group(2) == null ? "s" : m.group(2).toLowerCase(Locale.ROOT);
    return Optional.of(
        switch (unit) {
          case "ms" -> Duration.ofMillis(n);
          case "m" -> Duration.ofMinutes(n);
          case "h" -> Duration.ofHours(n);
          case "d" -> Duration.ofDays(n);
          default -> Duration.ofSeconds(n);
        });
  }
}
