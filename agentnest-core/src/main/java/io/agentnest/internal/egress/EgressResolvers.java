package io.agentnest.internal.egress;

import org.jspecify.annotations.Nullable;

/**
 * The name resolver of every sandbox's egress proxy: the system's, unless an integration test
 * replaced it to map test names to loopback servers. The replacement is not reachable through the
 * public API, and the main code of other modules may not use {@code io.agentnest.internal} at all
 * (their ArchUnit boundary tests), so only test code can set it.
 */
public final class EgressResolvers {
  private static volatile @Nullable Resolver replacement;

  private EgressResolvers() {}

  /** The resolver for a proxy started now. */
  public static Resolver current() {
    Resolver r = replacement;
    return r != null ? r : SystemResolver.INSTANCE;
  }

  /**
   * Integration tests only: proxies of sandboxes created afterwards resolve through {@code
   * resolver}; {@code null} restores the system resolver.
   */
  public static void replaceForTests(@Nullable Resolver resolver) {
    replacement = resolver;
  }
}
