package io.agentnest.server.tenancy;

import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * A stored API key (never the key itself: only its id and hash are kept).
 *
 * @param id the public part of the key, shown in listings and audit
 * @param tenant the tenant the key belongs to
 * @param created when it was issued
 * @param expires when it stops working, or null
 * @param revoked when it was revoked, or null
 * @param role what the key may do ({@link KeyRole#AGENT} for keys stored before roles existed)
 */
public record ApiKey(
    String id,
    String tenant,
    Instant created,
    @Nullable Instant expires,
    @Nullable Instant revoked,
    KeyRole role) {

  /** An agent key (what every key was before roles). */
  public ApiKey(
      String id,
      String tenant,
      Instant created,
      @Nullable Instant expires,
      @Nullable Instant revoked) {
    this(id, tenant, created, expires, revoked, KeyRole.AGENT);
  }
}
