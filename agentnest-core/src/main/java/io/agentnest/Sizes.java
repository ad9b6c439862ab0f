package io.agentnest;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses human sizes such as {@code 512m}, {@code 2GiB}, {@code 100k}, the way the config file and
 * the CLI write them; a bad size is a {@link ConfigException} naming the field and the fix. Part of
 * the API (the configuration's values parse with it, and the configuration sits above the API).
 */
public final class Sizes {
  private static final Pattern SIZE =
      Pattern.compile("([0-9]+(?:\\.[0-9]+)?)\\s*([kmgt]?)(i?b)?", Pattern.CASE_INSENSITIVE);

  private Sizes() {}

  public static long parse(String field, String text) {
    Matcher m = SIZE.matcher(text.trim());
    if (!m.matches()) {
      throw new ConfigException(
          field + " '" + text + "' is not a size: use a number with k, m, g or t, e.g. 512m");
    }
    double n = Double.parseDouble(m.group(1));
    String unit = m.group(2).toLowerCase(Locale.ROOT);
    int shift =
        switch (unit) {
          case "k" -> 10;
          case "m" -> 20;
          case "g" -> 30;
          case "t" -> 40;
          default -> 0;
        };
    double bytes = n * (1L << shift);
    if (bytes > Long.MAX_VALUE / 2) {
      throw new ConfigException(field + " '" + text + "' is too large");
    }
    return (long) bytes;
  }

  public static String format(long bytes) {
    if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) {
      return (bytes >> 30) + "g";
    }
    if (bytes >= 1L << 20 && bytes % (1L << 20) == 0) {
      return (bytes >> 20) + "m";
    }
    if (bytes >= 1L << 10 && bytes % (1L << 10) == 0) {
      return (bytes >> 10) + "k";
    }
    return Long.toString(bytes);
  }
}
