package io.agentnest.mcp;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import org.jspecify.annotations.Nullable;

/**
 * Checks an {@code Authorization: Bearer ...} header against the server's token without telling an
 * attacker, through timing, how much of a guess was right: both sides are hashed to SHA-256 first,
 * so the comparison ({@link MessageDigest#isEqual}, constant time) always runs over 32 bytes,
 * whatever the lengths of the guess and the token.
 */
final class TokenCheck {
  private final byte[] expected;

  TokenCheck(String token) {
    this.expected = digest(token);
  }

  /** Whether the header carries the token ({@code Bearer} scheme, case-insensitive). */
  boolean matches(@Nullable String authorization) {
    String given =
        authorization != null && authorization.regionMatches(true, 0, "Bearer ", 0, 7)
            ? authorization.substring(7).strip()
            : "";
    return MessageDigest.isEqual(digest(given), expected);
  }

  static byte[] digest(String s) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java runtime has SHA-256", e);
    }
  }
}
