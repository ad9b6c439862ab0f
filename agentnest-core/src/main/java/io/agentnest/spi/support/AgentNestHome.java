package io.agentnest.spi.support;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Where host-side state lives: {@code AGENTNEST_HOME}, or the {@code agentnest.home} system
 * property, or {@code ~/.agentnest}. Tests and second installations point it elsewhere.
 */
public final class AgentNestHome {
  private AgentNestHome() {}

  public static Path dir() {
    String prop = System.getProperty("agentnest.home");
    if (prop != null && !prop.isBlank()) {
      return Path.of(prop);
    }
    String env = System.getenv("AGENTNEST_HOME");
    if (env != null && !env.isBlank()) {
      return Path.of(env);
    }
    return Path.of(System.getProperty("user.home"), ".agentnest");
  }

  /** A short stable name of this home (the first 16 hex digits of its path's SHA-256). */
  public static String id() {
    try {
      byte[] d =
          MessageDigest.getInstance("SHA-256")
              .digest(
                  dir().toAbsolutePath().normalize().toString().getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(d).substring(0, 16);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  public static Path sandboxes() {
    return dir().resolve("sandboxes");
  }
}
