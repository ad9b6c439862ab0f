package io.agentnest.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import io.agentnest.audit.VerifyReport;
import io.agentnest.internal.support.HumanText;
import io.agentnest.internal.support.Json;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code agentnest audit}: query, follow and verify the audit trail. */
@Command(
    name = "audit",
    mixinStandardHelpOptions = true,
    description = {
      "Queries, follows and verifies the audit trail: every sandbox, exec, file, network,"
          + " approval, policy, limit and redaction event, hash-chained in"
          + " AGENTNEST_HOME/audit/events.jsonl and indexed in index.db (see docs/audit.md).",
      "Without a subcommand: query.",
      "  agentnest audit --since 1h --type network.attempt --decision deny",
      "  agentnest audit tail -f --json | vector --config vector.toml",
      "  agentnest audit verify"
    },
    subcommands = {
      AuditCommand.Query.class,
      AuditCommand.Tail.class,
      AuditCommand.Verify.class,
      CommandLine.HelpCommand.class
    })
final class AuditCommand implements Callable<Integer> {
  @Mixin Filter filter = new Filter();
  @Mixin Dir dir = new Dir();
  @Mixin Output output = new Output();
  @Mixin Page page = new Page();

  @Override
  public Integer call() {
    return Query.run(dir, filter, output, page);
  }

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

  /** {@code audit query}. */
  @Command(
      name = "query",
      mixinStandardHelpOptions = true,
      description = {
        "Prints the events matching every given filter, newest first, from the index (fast on"
            + " millions of events). Table columns: time (UTC), type, sandbox (12 characters),"
            + " summary.",
        "  agentnest audit query --sandbox 3f2a --since 30m",
        "  agentnest audit query --type exec.finished --text '\"exit\":1' --json"
      })
  static final class Query implements Callable<Integer> {
    @Mixin Filter filter = new Filter();
    @Mixin Dir dir = new Dir();
    @Mixin Output output = new Output();
    @Mixin Page page = new Page();

    @Override
    public Integer call() {
      return run(dir, filter, output, page);
    }

    static int run(Dir dir, Filter filter, Output output, Page page) {
      AuditQuery.Builder b = filter.builder().limit(Math.max(1, page.limit));
      if (page.oldestFirst) {
        b.oldestFirst();
      }
      List<AuditEvent> events;
      try (AuditLog log = AuditLog.open(dir.path())) {
        events = log.query(b.build());
      }
      if (output.json) {
        events.forEach(e -> System.out.println(e.toJson()));
      } else if (events.isEmpty()) {
        System.out.println("no events");
      } else {
        Table.header(System.out);
        events.forEach(e -> Table.row(System.out, e));
      }
      return ExitCodes.OK;
    }
  }

  /** {@code audit tail}. */
  @Command(
      name = "tail",
      mixinStandardHelpOptions = true,
      description = {
        "Prints the last N matching events, oldest first; with -f keeps following new events"
            + " (written by any process; the file is polled every 200 ms) until interrupted.",
        "  agentnest audit tail -f --type network.attempt",
        "  agentnest audit tail -f --json | vector --config vector.toml"
      })
  static final class Tail implements Callable<Integer> {
    @Mixin Filter filter = new Filter();
    @Mixin Dir dir = new Dir();
    @Mixin Output output = new Output();

    @Option(
        names = {"-n", "--lines"},
        paramLabel = "N",
        description = "Print the last N events first (default: ${DEFAULT-VALUE}; 0: none).",
        converter = LimitConverter.class,
        defaultValue = "10")
    int lines;

    @Option(
        names = {"-f", "--follow"},
        description = "Keep printing new events as they are written.")
    boolean follow;

    @Override
    public Integer call() {
      AuditQuery base = filter.builder().build();
      PrintStream out = System.out;
      try (AuditLog log = AuditLog.open(dir.path())) {
        long after = log.lastSeq();
        long printed = 0;
        if (lines > 0) {
          List<AuditEvent> last = new ArrayList<>(log.query(base.toBuilder().limit(lines).build()));
          Collections.reverse(last);
          if (!output.json && !last.isEmpty()) {
            Table.header(out);
          }
          for (AuditEvent e : last) {
            print(out, e, output.json);
            printed = Math.max(printed, e.seq());
          }
        }
        out.flush();
        if (!follow) {
          return ExitCodes.OK;
        }
        long skip = printed;
        log.tail(
            base,
            after,
            e -> {
              if (e.seq() > skip) {
                print(out, e, output.json);
                out.flush();
              }
            },
            () -> !Thread.currentThread().isInterrupted() && !out.checkError());
      }
      return ExitCodes.OK;
    }

    private static void print(PrintStream out, AuditEvent e, boolean json) {
      if (json) {
        out.println(e.toJson());
      } else {
        Table.row(out, e);
      }
    }
  }

  /** {@code audit verify}. */
  @Command(
      name = "verify",
      mixinStandardHelpOptions = true,
      description = {
        "Re-reads the trail from its first record, through every rotated file"
            + " (events-000001.jsonl, ...) and events.jsonl, recomputes every record's SHA-256 and"
            + " checks the chain. Exits 0 when intact (printing the last hash: keep it elsewhere as"
            + " an anchor); otherwise prints the first problem with its file, line and seq (an"
            + " edited, deleted, inserted or reordered record, a removed or reordered file, or a"
            + " truncated last line) and exits 1.",
        "  agentnest audit verify",
        "  agentnest audit verify --dir /backup/audit --json"
      })
  static final class Verify implements Callable<Integer> {
    @Mixin Dir dir = new Dir();

    @Option(names = "--json", description = "Print the report as a JSON object.")
    boolean json;

    @Override
    public Integer call() {
      Path d = dir.path();
      if (!AuditLog.exists(d)) {
        System.out.println(
            "no audit log in " + d + " (neither " + AuditLog.EVENTS_FILE + " nor rotated files)");
        return ExitCodes.FAILED;
      }
      VerifyReport r = AuditLog.verify(d);
      if (json) {
        ObjectNode o = Json.object();
        o.put("ok", r.ok()).put("checked", r.checked()).put("lastHash", r.lastHash());
        if (!r.ok()) {
          o.put("problem", r.problem()).put("line", r.line()).put("seq", r.seq());
        }
        System.out.println(o);
      } else if (r.ok()) {
        System.out.println(
            "ok: " + r.checked() + " records, chain intact; last hash " + r.lastHash());
      } else {
        System.out.println("FAILED: " + r.problem());
        System.out.println("(" + r.checked() + " records before it verified)");
      }
      return r.ok() ? ExitCodes.OK : ExitCodes.FAILED;
    }
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

  /** The human table. */
  static final class Table {
    private static final DateTimeFormatter TIME =
        DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS").withZone(ZoneOffset.UTC);
    private static final int SUMMARY_MAX = 120;

    private Table() {}

    static void header(PrintStream out) {
      out.printf("%-23s  %-18s  %-12s  %s%n", "TIME (UTC)", "TYPE", "SANDBOX", "SUMMARY");
    }

    /** One row; every field a sandbox may have chosen is escaped ({@link HumanText}). */
    static void row(PrintStream out, AuditEvent e) {
      String sb = e.sandboxId() == null ? "-" : e.sandboxId();
      out.printf(
          "%-23s  %-18s  %-12s  %s%n",
          TIME.format(e.time()),
          HumanText.line(e.type(), 40),
          HumanText.line(sb, 12),
          HumanText.line(summary(e)));
    }

    static String summary(AuditEvent e) {
      Map<String, Object> d = e.data();
      String s =
          switch (e.type()) {
            case AuditEvent.EXEC_STARTED -> str(d, "command");
            case AuditEvent.EXEC_FINISHED ->
                join(
                    d.containsKey("exit") ? "exit " + d.get("exit") : "",
                    d.containsKey("duration_ms") ? d.get("duration_ms") + " ms" : "",
                    d.containsKey("limit") ? "limit " + d.get("limit") : "",
                    str(d, "command"));
            case AuditEvent.FILE_READ, AuditEvent.FILE_WRITE, AuditEvent.FILE_DELETE ->
                join(str(d, "path"), d.containsKey("size") ? d.get("size") + " B" : "");
            case AuditEvent.NETWORK_ATTEMPT ->
                join(
                    str(d, "decision"),
                    str(d, "host") + (d.containsKey("port") ? ":" + d.get("port") : ""),
                    d.containsKey("rule") ? "rule " + d.get("rule") : "",
                    d.containsKey("bytes_up") ? "up " + d.get("bytes_up") + " B" : "",
                    d.containsKey("bytes_down") ? "down " + d.get("bytes_down") + " B" : "");
            case AuditEvent.SECRET_REDACTED ->
                join(str(d, "rule"), d.containsKey("count") ? "x" + d.get("count") : "");
            case AuditEvent.LIMIT_HIT -> join(str(d, "limit"), str(d, "command"));
            case AuditEvent.APPROVAL_DECIDED ->
                join(
                    str(d, "decision"),
                    str(d, "action"),
                    d.containsKey("by") ? "by " + d.get("by") : "");
            default -> "";
          };
      if (s.isBlank()) {
        s = pairs(d);
      }
      return s.length() > SUMMARY_MAX ? s.substring(0, SUMMARY_MAX - 3) + "..." : s;
    }

    private static String str(Map<String, Object> d, String key) {
      Object v = d.get(key);
      return v == null ? "" : v.toString();
    }

    private static String join(String... parts) {
      StringBuilder sb = new StringBuilder();
      for (String p : parts) {
        if (!p.isEmpty()) {
          if (sb.length() > 0) {
            sb.append("  ");
          }
          sb.append(p);
        }
      }
      return sb.toString();
    }

    private static String pairs(Map<String, Object> d) {
      StringBuilder sb = new StringBuilder();
      for (Map.Entry<String, Object> en : d.entrySet()) {
        if (sb.length() > 0) {
          sb.append(' ');
        }
        sb.append(en.getKey()).append('=').append(en.getValue());
      }
      return sb.toString();
    }
  }
}
