package io.agentnest.internal.redact;

import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * Test oracle, independent of the redactor's own list of forms: does a text give a secret away to a
 * reader who decodes it? It decodes every run of base64 characters in the text from every start (so
 * every alignment), line breaks ignored, standard and URL-safe, and looks for the secret's bytes in
 * what comes out.
 */
final class Leaks {
  private Leaks() {}

  static boolean raw(String text, String secret) {
    return text.contains(secret);
  }

  static boolean base64(String text, String secret) {
    String flat = text.replace("\r", "").replace("\n", "");
    byte[] s = secret.getBytes(StandardCharsets.UTF_8);
    return decodesTo(flat, s, "+/") || decodesTo(flat, s, "-_");
  }

  /**
   * Whether the secret's bytes stand in the text as hex, in either case, with any separators a dump
   * puts between digits (spaces, tabs, colons, dashes, line breaks) removed first.
   */
  static boolean hex(String text, String secret) {
    StringBuilder digits = new StringBuilder(text.length());
    for (char c : text.toCharArray()) {
      if (" \t:-\r\n".indexOf(c) < 0) {
        digits.append(Character.toLowerCase(c));
      }
    }
    StringBuilder want = new StringBuilder();
    for (byte b : secret.getBytes(StandardCharsets.UTF_8)) {
      want.append(String.format("%02x", b & 0xff));
    }
    return digits.indexOf(want.toString()) >= 0;
  }

  static boolean any(String text, String secret) {
    return raw(text, secret) || base64(text, secret);
  }

  private static boolean decodesTo(String text, byte[] secret, String extra) {
    int n = text.length();
    for (int i = 0; i < n; i++) {
      int j = i;
      while (j < n && isBase64(text.charAt(j), extra)) {
        j++;
      }
      int len = j - i;
      if (len % 4 == 1) {
        len--;
      }
      if (len >= 4) {
        String run = text.substring(i, i + len);
        if (!extra.equals("+/")) {
          run = run.replace('-', '+').replace('_', '/');
        }
        byte[] decoded;
        try {
          decoded = Base64.getDecoder().decode(run);
        } catch (IllegalArgumentException e) {
          continue;
        }
        if (indexOf(decoded, secret) >= 0) {
          return true;
        }
      }
    }
    return false;
  }

  private static boolean isBase64(char c, String extra) {
    return (c >= 'A' && c <= 'Z')
        || (c >= 'a' && c <= 'z')
        || (c >= '0' && c <= '9')
        || extra.indexOf(c) >= 0;
  }

  static int indexOf(byte[] hay, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= hay.length; i++) {
      for (int k = 0; k < needle.length; k++) {
        if (hay[i + k] != needle[k]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }
}
