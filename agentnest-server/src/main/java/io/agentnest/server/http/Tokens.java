package io.agentnest.server.http;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import org.jspecify.annotations.Nullable;

/**
 * Bearer secrets the server issues itself (E2B sandbox access tokens, console sessions and CSRF
 * tokens): 256 random bits, URL-safe, and compared in constant time so that response times do not
 * tell a guesser how much of a token was right.
 */
public final class Tokens {
  private static final SecureRandom RANDOM = new SecureRandom();

  private Tokens() {}

  public static String random() {
    byte[] b = new byte[32];
    RANDOM.nextBytes(b);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
  }

  public static boolean same(@Nullable String given, String expected) {
    return given != null
        && MessageDigest.isEqual(
            given.getBytes(StandardCharsets.UTF_8), expected.getBytes(StandardCharsets.UTF_8));
  }
}
