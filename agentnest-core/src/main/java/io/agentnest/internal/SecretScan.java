package io.agentnest.internal;

import java.util.Arrays;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Looks for secret values in a byte stream that arrives in chunks, also across chunk borders.
 * Values shorter than {@link io.agentnest.Secret#MIN_LENGTH} are not looked for.
 */
final class SecretScan {
  private final Map<String, byte[]> secrets;
  private final int keep;
  private byte[] tail = new byte[0];
  private @Nullable String found;

  SecretScan(Map<String, byte[]> secrets) {
    this.secrets = secrets;
    int longest = 0;
    for (byte[] v : secrets.values()) {
      longest = Math.max(longest, v.length);
    }
    this.keep = Math.max(0, longest - 1);
  }

  /** The name of the first secret seen, or null. */
  @Nullable String found() {
    return found;
  }

  void update(byte[] b, int off, int len) {
    if (found != null || secrets.isEmpty() || len == 0) {
      return;
    }
    byte[] window = new byte[tail.length + len];
    System.arraycopy(tail, 0, window, 0, tail.length);
    System.arraycopy(b, off, window, tail.length, len);
    for (Map.Entry<String, byte[]> e : secrets.entrySet()) {
      byte[] v = e.getValue();
      if (v.length >= io.agentnest.Secret.MIN_LENGTH && indexOf(window, v) >= 0) {
        found = e.getKey();
        return;
      }
    }
    tail = Arrays.copyOfRange(window, Math.max(0, window.length - keep), window.length);
  }

  static int indexOf(byte[] hay, byte[] needle) {
    byte first = needle[0];
    int last = hay.length - needle.length;
    for (int i = 0; i <= last; i++) {
      if (hay[i] != first) {
        continue;
      }
      int j = 1;
      while (j < needle.length && hay[i + j] == needle[j]) {
        j++;
      }
      if (j == needle.length) {
        return i;
      }
    }
    return -1;
  }
}
