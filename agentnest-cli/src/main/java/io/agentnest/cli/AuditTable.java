package io.agentnest.cli;

import io.agentnest.audit.AuditEvent;
import io.agentnest.text.HumanText;
import java.io.PrintStream;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Map;

/** The human table of audit events ({@code audit}, {@code audit query}, {@code audit tail}). */
final class AuditTable {
  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS").withZone(ZoneOffset.UTC);
  private static final int SUMMARY_MAX = 120;

  private AuditTable() {}

  static void header(PrintStream out) {
    out.printf("%-23s  %-24s  %-12s  %s%n", "TIME (UTC)", "TYPE", "SANDBOX", "SUMMARY");
  }

  /** One row; every field a sandbox may have chosen is escaped ({@link HumanText}). */
  static void row(PrintStream out, AuditEvent e) {
    String sb = e.sandboxId() == null ? "-" : e.sandboxId();
    // The id's first 12 characters, as docker ps and agentnest ls show it (any prefix selects).
    String shortId =
        sb.codePointCount(0, sb.length()) > 12 ? sb.substring(0, sb.offsetByCodePoints(0, 12)) : sb;
    out.printf(
        "%-23s  %-24s  %-12s  %s%n",
        TIME.format(e.time()),
        HumanText.line(e.type(), 40),
        HumanText.line(shortId),
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
