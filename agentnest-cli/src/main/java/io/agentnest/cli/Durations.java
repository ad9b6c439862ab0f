package io.agentnest.cli;

import io.agentnest.ConfigException;
import java.time.Duration;

/** CLI options' durations, in the house's one syntax ({@link io.agentnest.config.Durations}). */
final class Durations {
  private Durations() {}

  static Duration parse(String field, String text) {
    Duration d =
        io.agentnest.config.Durations.parse(text)
            .orElseThrow(
                () ->
                    new ConfigException(
                        field
                            + " '"
                            + text
                            + "' is not a duration: use e.g. "
                            + io.agentnest.config.Durations.EXAMPLES));
    if (d.isZero()) {
      throw new ConfigException(field + " must be positive, got '" + text + "'");
    }
    return d;
  }
}
