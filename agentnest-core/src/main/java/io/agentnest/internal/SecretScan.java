package io.agentnest.internal;

import io.agentnest.Secret;
import io.agentnest.internal.redact.RedactingStream;
import io.agentnest.internal.redact.Redactor;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Looks for secret values in a byte stream that arrives in chunks, also across chunk borders, in
 * every form the redactor masks in output (raw, base64 at any alignment and wrapped into lines,
 * hex, URL-encoded): what output may not show, a snapshot may not store either. Values shorter than
 * {@link Secret#MIN_LENGTH} are not looked for.
 */
public final class SecretScan {
  private final @Nullable RedactingStream scan;
  private @Nullable String found;

  public SecretScan(Map<String, byte[]> secrets) {
    Map<String, String> values = new LinkedHashMap<>();
    secrets.forEach(
        (name, v) -> {
          if (v.length >= Secret.MIN_LENGTH) {
            values.put(name, new String(v, StandardCharsets.UTF_8));
          }
        });
    this.scan = values.isEmpty() ? null : Redactor.secretsOnly(values).scanner();
  }

  /** The name of the first secret seen, or null. */
  public @Nullable String found() {
    return found;
  }

  public void update(byte[] b, int off, int len) {
    RedactingStream s = scan;
    if (found != null || s == null || len == 0) {
      return;
    }
    s.feed(b, off, len);
    Iterator<String> seen = s.counts().keySet().iterator();
    if (seen.hasNext()) {
      found = seen.next();
    }
  }
}
