package io.agentnest.server.store;

import java.time.Duration;
import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * Where the web console's sign-in sessions are kept: this server's memory ({@link
 * MemorySessionBook}), or PostgreSQL so that a browser signed in through one server is signed in on
 * every server of the deployment. Looked up by the session id the cookie carries.
 */
public interface SessionBook {
  /**
   * A session as stored.
   *
   * @param tenant the tenant signed in, or {@code *admin}
   * @param keyId the key that signed in: the session ends with it
   * @param role that key's role label ({@code agent} or {@code approver})
   */
  record Entry(
      String id,
      String tenant,
      String keyId,
      String role,
      String csrf,
      Instant created,
      Instant seen) {}

  /**
   * Keeps {@code e}; sessions idle past {@code idle} go first, and past {@code max} sessions the
   * least recently seen go too.
   */
  void put(Entry e, Duration idle, int max);

  /** The session with this id, or null. */
  @Nullable Entry get(String id);

  /** The session was used at {@code seen}. */
  void touch(String id, Instant seen);

  /** The session ends (idempotent). */
  void remove(String id);
}
