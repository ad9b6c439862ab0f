package io.agentnest.cli;

import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * The options {@code audit} and its subcommands share (picocli mixins): where the trail is, the
 * filters, the output form and the page, with converters that name a bad value and its fix.
 */
final class AuditOptions {
  private AuditOptions() {}

  /** How many events and in which order; {@code audit} and {@code audit query} share it. */
  static final class Page {
    @Option(
        names = {"-n", "--limit"},
        paramLabel = "N",
        description = "At most N events (default: ${DEFAULT-VALUE}).",
        converter = LimitConverter.class,
        defaultValue = "100")
    int limit;

    @Option(names = "--oldest-first", description = "Oldest first (default: newest first).")
    boolean oldestFirst;
  }

  /** --dir. */
  static final class Dir {
    @Option(
        names = "--dir",
        paramLabel = "DIR",
        description = "Audit directory (default: AGENTNEST_HOME/audit, i.e. ~/.agentnest/audit).")
    @Nullable Path dir;

    Path path() {
      return dir != null ? dir : AuditLog.defaultDir();
    }
  }

  /** --json. */
  static final class Output {
    @Option(
        names = "--json",
        description = "One JSON object per line: the stored record (for jq, Vector, Fluent Bit).")
    boolean json;
  }

  /** The filters shared by query and tail. */
  static final class Filter {
    @Option(names = "--sandbox", paramLabel = "ID", description = "Sandbox id or a prefix of it.")
    @Nullable String sandbox;

    @Option(
        names = "--type",
        paramLabel = "TYPE",
        split = ",",
        converter = TypeConverter.class,
        description =
            "Event type, repeatable (any matches): sandbox.created, sandbox.destroyed,"
                + " sandbox.expired, exec.started, exec.finished, file.read, file.write,"
                + " file.delete, network.attempt, approval.requested, approval.decided,"
                + " policy.violation, limit.hit, secret.redacted, config.loaded.")
    List<String> types = new ArrayList<>();

    @Option(
        names = "--decision",
        paramLabel = "DECISION",
        description = "data.decision of network and approval events, e.g. allow, deny.")
    @Nullable String decision;

    @Option(
        names = "--since",
        paramLabel = "WHEN",
        converter = WhenConverter.class,
        description =
            "From this time on: an age (30s, 30m, 1h, 2d, 1w) or an ISO instant, date-time (UTC)"
                + " or date.")
    @Nullable Instant since;

    @Option(
        names = "--until",
        paramLabel = "WHEN",
        converter = WhenConverter.class,
        description = "Before this time (same forms as --since).")
    @Nullable Instant until;

    @Option(
        names = "--text",
        paramLabel = "TEXT",
        description =
            "Case-insensitive substring of the event's type and data JSON, e.g. pypi.org or"
                + " '\"exit\":1'.")
    @Nullable String text;

    AuditQuery.Builder builder() {
      return AuditQuery.builder()
          .sandbox(sandbox)
          .types(types)
          .decision(decision)
          .since(since)
          .until(until)
          .text(text);
    }
  }

  /** An event type, checked against {@link AuditEvent#TYPES}. */
  static final class TypeConverter implements CommandLine.ITypeConverter<String> {
    @Override
    public String convert(String value) {
      String t = value.trim();
      if (!AuditEvent.TYPES.contains(t)) {
        List<String> all = new ArrayList<>(AuditEvent.TYPES);
        Collections.sort(all);
        throw new CommandLine.TypeConversionException(
            "unknown event type '" + value + "': use one of " + String.join(", ", all));
      }
      return t;
    }
  }

  /** A limit: 1 to 1,000,000. */
  static final class LimitConverter implements CommandLine.ITypeConverter<Integer> {
    @Override
    public Integer convert(String value) {
      int n;
      try {
        n = Integer.parseInt(value.trim());
      } catch (NumberFormatException e) {
        throw new CommandLine.TypeConversionException("'" + value + "' is not a number");
      }
      if (n < 0 || n > 1_000_000) {
        throw new CommandLine.TypeConversionException("must be 0..1000000, got " + n);
      }
      return n;
    }
  }

  /** Parses --since/--until: an age before now, or an ISO instant, date-time (UTC) or date. */
  static final class WhenConverter implements CommandLine.ITypeConverter<Instant> {
    private static final Pattern AGE = Pattern.compile("([0-9]+)\\s*(s|m|h|d|w)");

    @Override
    public Instant convert(String value) {
      return parse(value, Instant.now());
    }

    static Instant parse(String value, Instant now) {
      String v = value.trim();
      Matcher m = AGE.matcher(v.toLowerCase(Locale.ROOT));
      if (m.matches()) {
        long n = Long.parseLong(m.group(1));
        Duration d =
            switch (m.group(2)) {
              case "s" -> Duration.ofSeconds(n);
              case "m" -> Duration.ofMinutes(n);
              case "h" -> Duration.ofHours(n);
              case "d" -> Duration.ofDays(n);
              default -> Duration.ofDays(7 * n);
            };
        return now.minus(d);
      }
      try {
        return Instant.parse(v);
      } catch (DateTimeParseException e) {
        // try the other forms
      }
      try {
        return LocalDateTime.parse(v).toInstant(ZoneOffset.UTC);
      } catch (DateTimeParseException e) {
        // try a date
      }
      try {
        return LocalDate.parse(v).atStartOfDay(ZoneOffset.UTC).toInstant();
      } catch (DateTimeParseException e) {
        throw new CommandLine.TypeConversionException(
            "'"
                + value
                + "' is not a time: use an age (30m, 1h, 2d) or an ISO instant"
                + " (2025-06-01T12:00:00Z), date-time (UTC) or date (2025-06-01)");
      }
    }
  }
}
