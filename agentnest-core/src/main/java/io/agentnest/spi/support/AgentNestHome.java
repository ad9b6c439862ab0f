package io.agentnest.spi.support;

import java.nio.file.Path;

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

  public static Path sandboxes() {
    return dir().resolve("sandboxes");
  }
}
