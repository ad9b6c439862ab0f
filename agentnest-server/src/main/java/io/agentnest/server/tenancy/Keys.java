package io.agentnest.server.tenancy;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HexFormat;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The shape of an API key and what every store keeps of it. A key is {@code ank_<id>_<secret>} with
 * 256 random bits of secret; only the SHA-256 of the whole key is stored. A fast hash is enough
 * here (unlike for passwords): the secret is random, not chosen by a person, so there is nothing to
 * guess from the hash.
 */
public final class Keys {
  private static final Pattern KEY = Pattern.compile("ank_([0-9a-f]{16})_([A-Za-z0-9_-]{43})");
  private static final SecureRandom RANDOM = new SecureRandom();

  private Keys() {}

  /** A new random key. */
  public record NewKey(String id, String key) {}

  /** A new random key and its id. */
  public static NewKey fresh() {
    byte[] idBytes = new byte[8];
    byte[] secret = new byte[32];
    RANDOM.nextBytes(idBytes);
    RANDOM.nextBytes(secret);
    String id = HexFormat.of().formatHex(idBytes);
    return new NewKey(
        id, "ank_" + id + "_" + Base64.getUrlEncoder().withoutPadding().encodeToString(secret));
  }

  /** The matcher of a presented key: its group 1 is the id. */
  public static Matcher match(String presented) {
    return KEY.matcher(presented);
  }

  /** The SHA-256 of a whole key, as stored, in hex. */
  public static String sha256(String key) {
    try {
      return HexFormat.of()
          .formatHex(
              MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Whether {@code presented} hashes to {@code storedHash}, in time independent of where. */
  public static boolean matches(String storedHash, String presented) {
    return MessageDigest.isEqual(
        storedHash.getBytes(StandardCharsets.US_ASCII),
        sha256(presented).getBytes(StandardCharsets.US_ASCII));
  }
}
