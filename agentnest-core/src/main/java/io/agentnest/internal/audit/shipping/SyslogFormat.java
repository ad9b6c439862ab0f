package io.agentnest.internal.audit.shipping;

import io.agentnest.audit.AuditEvent;
import java.io.ByteArrayOutputStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import org.jspecify.annotations.Nullable;

/**
 * RFC 5424 messages for audit records:
 *
 * <pre>{@code
 * <86>1 2026-12-04T21:00:00.123456Z host agentnest 4242 exec.started
 *   [agentnest@32473 seq="17" sandbox="3f2a..." tenant="acme" hash="9c1e..."] BOM{"seq":17,...}
 * }</pre>
 *
 * <p>Sandbox-controlled text reaches the message only through the JSON line and the SD-PARAM
 * values. Neither can carry a raw control character (C0, DEL, C1, U+2028/U+2029): in the JSON they
 * become {@code \}{@code uXXXX} escapes (valid JSON inside a string), in SD-PARAM values likewise
 * after {@code "}, {@code \} and {@code ]} are escaped as §6.3.3 says. So no record can split into
 * two messages or forge a second one, whatever the framing.
 */
final class SyslogFormat {
  static final String APP_NAME = "agentnest";

  /** Our SD-ID: a name at a private enterprise number, as RFC 5424 §7.2.2 asks of custom IDs. */
  static final String SD_ID = "agentnest@32473";

  static final int MAX_PARAM_CHARS = 128;
  private static final byte[] BOM = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};
  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'").withZone(ZoneOffset.UTC);

  private final int facility;
  private final String hostname;
  private final String procId;

  SyslogFormat(int facility, String hostname, long pid) {
    this.facility = facility;
    this.hostname = printable(hostname, 255);
    this.procId = String.valueOf(pid);
  }

  /** For this host and process. */
  static SyslogFormat local(int facility) {
    return new SyslogFormat(facility, localHostName(), ProcessHandle.current().pid());
  }

  /** One message (no framing), at most {@code maxBytes} long. */
  byte[] message(Shipment s, int maxBytes) {
    AuditEvent e = s.event();
    StringBuilder h = header(SyslogSeverity.of(e), e.time(), e.type());
    h.append('[').append(SD_ID);
    param(h, "seq", String.valueOf(e.seq()));
    if (e.sandboxId() != null) {
      param(h, "sandbox", e.sandboxId());
    }
    if (s.tenant() != null) {
      param(h, "tenant", s.tenant());
    }
    param(h, "hash", e.hash());
    h.append("] ");
    return withMsg(h, e.toJson(), maxBytes);
  }

  /** The synthetic record that tells the collector about dropped records. */
  byte[] gap(Gap g, int maxBytes) {
    StringBuilder h = header(SyslogSeverity.WARNING, g.time(), Gap.TYPE);
    h.append('[').append(SD_ID);
    param(h, "dropped", String.valueOf(g.dropped()));
    param(h, "first_seq", String.valueOf(g.firstSeq()));
    param(h, "last_seq", String.valueOf(g.lastSeq()));
    h.append("] ");
    return withMsg(h, g.toJson(), maxBytes);
  }

  /** RFC 6587 §3.4.1 octet counting: {@code MSG-LEN SP SYSLOG-MSG}. */
  static byte[] octetCounted(byte[] message) {
    byte[] len = (message.length + " ").getBytes(StandardCharsets.US_ASCII);
    byte[] out = new byte[len.length + message.length];
    System.arraycopy(len, 0, out, 0, len.length);
    System.arraycopy(message, 0, out, len.length, message.length);
    return out;
  }

  private StringBuilder header(SyslogSeverity sev, Instant time, String msgId) {
    StringBuilder h = new StringBuilder(256);
    h.append('<').append(facility * 8 + sev.code).append(">1 ");
    h.append(TIME.format(time)).append(' ');
    h.append(hostname).append(' ');
    h.append(APP_NAME).append(' ');
    h.append(procId).append(' ');
    h.append(printable(msgId, 32)).append(' ');
    return h;
  }

  private static byte[] withMsg(StringBuilder header, String json, int maxBytes) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(header.length() + json.length() + 8);
    out.writeBytes(header.toString().getBytes(StandardCharsets.UTF_8));
    out.writeBytes(BOM);
    out.writeBytes(escapeControls(json).getBytes(StandardCharsets.UTF_8));
    byte[] b = out.toByteArray();
    return b.length <= maxBytes ? b : cut(b, maxBytes);
  }

  // Cuts on a UTF-8 character boundary, so a collector that checks UTF-8 keeps the message.
  private static byte[] cut(byte[] b, int maxBytes) {
    int n = maxBytes;
    while (n > 0 && (b[n] & 0xC0) == 0x80) {
      n--;
    }
    byte[] out = new byte[n];
    System.arraycopy(b, 0, out, 0, n);
    return out;
  }

  private static void param(StringBuilder h, String name, String value) {
    h.append(' ').append(name).append("=\"");
    int n = Math.min(value.length(), MAX_PARAM_CHARS);
    if (n < value.length() && Character.isHighSurrogate(value.charAt(n - 1))) {
      n--;
    }
    for (int i = 0; i < n; i++) {
      char c = value.charAt(i);
      if (c == '"' || c == '\\' || c == ']') {
        h.append('\\').append(c);
      } else if (isControl(c)) {
        appendU(h, c);
      } else {
        h.append(c);
      }
    }
    h.append('"');
  }

  /** Control characters as JSON-style escapes: the JSON line stays valid JSON. */
  static String escapeControls(String s) {
    StringBuilder b = null;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (isControl(c)) {
        if (b == null) {
          b = new StringBuilder(s.length() + 16).append(s, 0, i);
        }
        appendU(b, c);
      } else if (b != null) {
        b.append(c);
      }
    }
    return b == null ? s : b.toString();
  }

  static boolean isControl(char c) {
    return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x2028 || c == 0x2029;
  }

  private static void appendU(StringBuilder b, char c) {
    b.append("\\u").append(String.format("%04x", (int) c));
  }

  /** PRINTUSASCII (33..126) only, 1..max characters, {@code -} (NILVALUE) when nothing is left. */
  static String printable(@Nullable String s, int max) {
    if (s == null) {
      return "-";
    }
    StringBuilder b = new StringBuilder(Math.min(s.length(), max));
    for (int i = 0; i < s.length() && b.length() < max; i++) {
      char c = s.charAt(i);
      b.append(c >= 33 && c <= 126 ? c : '_');
    }
    return b.length() == 0 ? "-" : b.toString();
  }

  static String localHostName() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (Exception e) {
      String env = System.getenv("HOSTNAME");
      return env == null ? "-" : env;
    }
  }
}
