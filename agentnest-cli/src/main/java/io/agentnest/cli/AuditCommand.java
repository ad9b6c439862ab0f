package io.agentnest.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import io.agentnest.audit.VerifyReport;
import io.agentnest.cli.AuditOptions.Dir;
import io.agentnest.cli.AuditOptions.Filter;
import io.agentnest.cli.AuditOptions.LimitConverter;
import io.agentnest.cli.AuditOptions.Output;
import io.agentnest.cli.AuditOptions.Page;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Callable;
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
        AuditTable.header(System.out);
        events.forEach(e -> AuditTable.row(System.out, e));
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
            AuditTable.header(out);
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
        AuditTable.row(out, e);
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
        ObjectNode o = CliJson.object();
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
}
