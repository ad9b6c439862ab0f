package io.agentnest.internal.call;

import io.agentnest.RichOutput;
import io.agentnest.internal.redact.Redactor;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * A rich output (a value's image, HTML, JSON, ...) made fit to leave the sandbox. Text is masked
 * like any output. Other bytes cannot be masked without corrupting them, so they are scanned for
 * every form of a secret and for credential shapes, and an output that holds one is withheld: a
 * short text note takes its place. The MIME type is the sandbox's word, so it decides nothing: an
 * "image" made of text is scanned all the same.
 */
final class RichOutputs {
  private static final int MAX_MIME = 100;

  private RichOutputs() {}

  /** The output as it may be shown, and what was masked or found in it (by rule, never values). */
  record Redacted(RichOutput output, Map<String, Integer> redactions) {}

  static Redacted redacted(Redactor redactor, String mime, byte[] data) {
    Map<String, Integer> counts = new LinkedHashMap<>();
    Redactor.Counter counter = (rule, n) -> counts.merge(rule, n, Integer::sum);
    // Masked before it is cut, so that a cut never leaves part of a secret unmasked.
    String m =
        redactor.redact(
            mime.length() > 10 * MAX_MIME ? mime.substring(0, 10 * MAX_MIME) : mime, counter);
    m = m.length() > MAX_MIME ? m.substring(0, MAX_MIME) : m;
    if (isText(m)) {
      return new Redacted(new RichOutput(m, redactor.redact(data, counter)), counts);
    }
    Map<String, Integer> found = redactor.scan(data);
    if (found.isEmpty()) {
      return new Redacted(new RichOutput(m, data), counts);
    }
    found.forEach(counter::add);
    String note =
        "[REDACTED:"
            + String.join(",", found.keySet())
            + "] a "
            + m
            + " output of "
            + data.length
            + " bytes was withheld: its bytes contain a secret or a credential, which cannot be"
            + " masked in binary data without corrupting it";
    return new Redacted(
        new RichOutput("text/plain", note.getBytes(StandardCharsets.UTF_8)), counts);
  }

  private static boolean isText(String mime) {
    String m = mime.toLowerCase(Locale.ROOT);
    return m.startsWith("text/") || m.contains("json") || m.contains("svg") || m.contains("xml");
  }
}
