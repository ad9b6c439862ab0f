package io.agentnest.internal.audit.shipping;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A strict reader of what the shipping sinks send: octet-counted frames and RFC 5424 messages. */
final class SyslogFrames {
  private SyslogFrames() {}

  static final int MAX_FRAME = 1 << 20;

  /** Parsed message: PRI, MSGID, SD params of our SD-ID, and MSG (after the BOM). */
  record Message(int pri, String hostname, String msgId, Map<String, String> params, String msg) {}

  private static final Pattern HEADER =
      Pattern.compile(
          "<([0-9]{1,3})>1 ([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z)"
              + " ([!-~]{1,255}) ([!-~]{1,48}) ([!-~]{1,128}) ([!-~]{1,32}) ");

  /** Reads one octet-counted frame; null at a clean end of stream. */
  static byte[] readFrame(InputStream in) throws IOException {
    int len = 0;
    int digits = 0;
    while (true) {
      int c = in.read();
      if (c < 0) {
        if (digits == 0) {
          return null;
        }
        throw new EOFException("stream ended inside a frame length");
      }
      if (c == ' ' && digits > 0) {
        break;
      }
      if (c < '0' || c > '9' || digits >= 7) {
        throw new IOException("bad frame length byte " + c);
      }
      len = len * 10 + (c - '0');
      digits++;
    }
    if (len > MAX_FRAME) {
      throw new IOException("frame too long: " + len);
    }
    byte[] b = in.readNBytes(len);
    if (b.length != len) {
      throw new EOFException("stream ended inside a frame");
    }
    return b;
  }

  /** Splits a byte string that must hold exactly whole octet-counted frames. */
  static List<byte[]> frames(byte[] all) throws IOException {
    InputStream in = new ByteArrayInputStream(all);
    List<byte[]> out = new ArrayList<>();
    for (int i = 0; i < 10_000; i++) {
      byte[] f = readFrame(in);
      if (f == null) {
        return out;
      }
      out.add(f);
    }
    throw new IOException("too many frames");
  }

  /** Parses one RFC 5424 message as our formatter writes it; throws when it is not well-formed. */
  static Message parse(byte[] raw) {
    for (byte b : raw) {
      if ((b & 0xff) < 0x20 || b == 0x7f) {
        throw new IllegalArgumentException("control byte " + (b & 0xff) + " in message");
      }
    }
    String s = new String(raw, StandardCharsets.UTF_8);
    Matcher m = HEADER.matcher(s);
    if (!m.lookingAt()) {
      throw new IllegalArgumentException("bad header: " + s);
    }
    int i = m.end();
    Map<String, String> params = new LinkedHashMap<>();
    if (!s.startsWith("[" + SyslogFormat.SD_ID, i)) {
      throw new IllegalArgumentException("no SD element at " + i + ": " + s);
    }
    i += 1 + SyslogFormat.SD_ID.length();
    while (s.charAt(i) == ' ') {
      i++;
      int eq = s.indexOf("=\"", i);
      String name = s.substring(i, eq);
      if (!name.matches("[!-~&&[^= \\]\"]]{1,32}")) {
        throw new IllegalArgumentException("bad param name " + name);
      }
      i = eq + 2;
      StringBuilder v = new StringBuilder();
      while (true) {
        char c = s.charAt(i++);
        if (c == '\\' && "\"\\]".indexOf(s.charAt(i)) >= 0) {
          v.append(s.charAt(i++));
        } else if (c == '"') {
          break;
        } else if (c == ']') {
          throw new IllegalArgumentException("unescaped ] in a param value");
        } else {
          v.append(c);
        }
      }
      params.put(name, v.toString());
    }
    if (s.charAt(i) != ']' || s.charAt(i + 1) != ' ') {
      throw new IllegalArgumentException("SD element not closed at " + i + ": " + s);
    }
    String rest = s.substring(i + 2);
    if (!rest.startsWith("\uFEFF")) {
      throw new IllegalArgumentException("MSG has no BOM");
    }
    return new Message(
        Integer.parseInt(m.group(1)), m.group(3), m.group(6), params, rest.substring(1));
  }

  /** Reads everything (bounded) from a stream until it ends. */
  static byte[] readAll(InputStream in, int max) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] buf = new byte[8192];
    int n;
    while ((n = in.read(buf)) > 0 && out.size() < max) {
      out.write(buf, 0, n);
    }
    return out.toByteArray();
  }
}
