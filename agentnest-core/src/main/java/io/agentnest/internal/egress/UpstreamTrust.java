package io.agentnest.internal.egress;

import java.security.NoSuchAlgorithmException;
import javax.net.ssl.SSLContext;
import org.jspecify.annotations.Nullable;

/**
 * The trust the egress proxy verifies real servers with when it re-encrypts an intercepted
 * connection: the JDK's default trust store, unless an integration test replaced it with its own
 * test CA (like {@link EgressResolvers}, no configuration or public API reaches the replacement).
 */
public final class UpstreamTrust {
  private static volatile @Nullable SSLContext replacement;

  private UpstreamTrust() {}

  /** The context for interceptions started now. */
  public static SSLContext context() {
    SSLContext r = replacement;
    if (r != null) {
      return r;
    }
    try {
      return SSLContext.getDefault();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no default TLS context", e);
    }
  }

  /** Integration tests only: verify upstream servers with {@code context}; null restores it. */
  public static void replaceForTests(@Nullable SSLContext context) {
    replacement = context;
  }
}
