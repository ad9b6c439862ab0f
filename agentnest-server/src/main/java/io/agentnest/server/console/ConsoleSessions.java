package io.agentnest.server.console;

import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Tokens;
import io.agentnest.server.store.MemorySessionBook;
import io.agentnest.server.store.SessionBook;
import io.agentnest.server.tenancy.KeyRole;
import io.javalin.http.Context;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * The web console's sign-in sessions: a tenant key, checked once, becomes a random session id in an
 * HttpOnly, SameSite=Strict cookie (Secure under TLS) and a CSRF token the page sends back in a
 * header on every state-changing request. The key itself is never stored or sent again, only its
 * id: a session lasts only while the key that opened it does (revoked or expired, the session's
 * next request is refused). Sessions end after an hour idle or eight hours in all, on sign-out, and
 * when the tenant is removed; their number is bounded (the oldest goes first). They are kept in a
 * {@link SessionBook}: this server's memory, or the store every server shares.
 */
public final class ConsoleSessions {
  static final String COOKIE = "agentnest_console";
  static final String CSRF_HEADER = "X-CSRF-Token";
  static final Duration IDLE = Duration.ofHours(1);
  static final Duration ABSOLUTE = Duration.ofHours(8);
  static final int MAX_SESSIONS = 10_000;

  /**
   * The tenant field of a session signed in with an admin key: no tenant name can be this (names
   * are lower-case letters, digits and '-'), so no tenant-scoped lookup ever matches it.
   */
  public static final String ADMIN = "*admin";

  /**
   * Who a key signed in: a tenant, or ({@link #ADMIN}) an admin; {@code keyId} is the id of the key
   * that signed in (a tenant's or an admin key), whose state every request of the session checks;
   * {@code role} is that key's ({@link KeyRole#AGENT} for an admin key, which has its own scope).
   */
  public record SignedIn(String tenant, String keyId, KeyRole role) {}

  /** How stale a session's last use may be in the store: a lookup within it writes nothing. */
  static final Duration TOUCH = Duration.ofMinutes(1);

  /** One signed-in browser. */
  public static final class Session {
    final String id;

    /** The tenant signed in, or {@link #ADMIN}. */
    public final String tenant;

    /** The id of the key that signed in: the session ends when it is revoked or expires. */
    public final String keyId;

    /** The role of that key: an approver's session lists and answers approvals only. */
    public final KeyRole role;

    final String csrf;
    final Instant created;
    volatile Instant seen;

    Session(String id, SignedIn who, String csrf, Instant created) {
      this.id = id;
      this.tenant = who.tenant();
      this.keyId = who.keyId();
      this.role = who.role();
      this.csrf = csrf;
      this.created = created;
      this.seen = created;
    }

    Session(SessionBook.Entry e) {
      this(
          e.id(),
          new SignedIn(e.tenant(), e.keyId(), KeyRole.parse(e.role())),
          e.csrf(),
          e.created());
      this.seen = e.seen();
    }

    SessionBook.Entry entry() {
      return new SessionBook.Entry(id, tenant, keyId, role.label(), csrf, created, seen);
    }

    public boolean admin() {
      return ADMIN.equals(tenant);
    }
  }

  private final SessionBook book;
  private final Clock clock;
  private final boolean secure;
  private final Predicate<String> adminKeyActive;
  private final Predicate<String> tenantKeyActive;

  /** Sessions in this server's memory. */
  public ConsoleSessions(
      Clock clock,
      boolean secure,
      Predicate<String> adminKeyActive,
      Predicate<String> tenantKeyActive) {
    this(new MemorySessionBook(), clock, secure, adminKeyActive, tenantKeyActive);
  }

  /** Sessions in {@code book}: shared with other servers when it is the PostgreSQL store's. */
  public ConsoleSessions(
      SessionBook book,
      Clock clock,
      boolean secure,
      Predicate<String> adminKeyActive,
      Predicate<String> tenantKeyActive) {
    this.book = book;
    this.clock = clock;
    this.secure = secure;
    this.adminKeyActive = adminKeyActive;
    this.tenantKeyActive = tenantKeyActive;
  }

  /** Signs {@code tenant} (or {@link #ADMIN}) in: a new session, its cookie set on the response. */
  Session open(Context ctx, SignedIn who) {
    Session s = new Session(Tokens.random(), who, Tokens.random(), clock.instant());
    book.put(s.entry(), IDLE, MAX_SESSIONS);
    ctx.header(
        "Set-Cookie",
        COOKIE
            + "="
            + s.id
            + "; Path=/; HttpOnly; SameSite=Strict; Max-Age="
            + ABSOLUTE.toSeconds()
            + (secure ? "; Secure" : ""));
    return s;
  }

  /** The session of the request's cookie, if valid and not expired. */
  public @Nullable Session of(Context ctx) {
    String id = ctx.cookie(COOKIE);
    if (id == null || id.length() > 64) {
      return null;
    }
    SessionBook.Entry e = book.get(id);
    if (e == null) {
      return null;
    }
    Session s = new Session(e);
    Instant now = clock.instant();
    // A session lasts only while its key does: revoking the key (from the CLI, another process)
    // ends it on its next request, a tenant's session as an admin's.
    if (now.isAfter(s.seen.plus(IDLE))
        || now.isAfter(s.created.plus(ABSOLUTE))
        || !(s.admin() ? adminKeyActive : tenantKeyActive).test(s.keyId)) {
      book.remove(id);
      return null;
    }
    if (now.isAfter(s.seen.plus(TOUCH))) {
      book.touch(id, now);
    }
    s.seen = now;
    return s;
  }

  /**
   * A state-changing request on a session must carry its CSRF token: a page of another site can
   * make the browser send the cookie (where SameSite does not hold) but cannot read the token.
   */
  public static void checkCsrf(Context ctx, Session s) {
    if (!Tokens.same(ctx.header(CSRF_HEADER), s.csrf)) {
      throw new ApiException(
          403,
          ErrorCode.CSRF,
          "the " + CSRF_HEADER + " header is missing or wrong",
          "send the csrf token the console's sign-in returned (the console page does)");
    }
  }

  /** Signs out: the session ends and the cookie is cleared. */
  void close(Context ctx, Session s) {
    book.remove(s.id);
    ctx.header(
        "Set-Cookie",
        COOKIE + "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0" + (secure ? "; Secure" : ""));
  }
}
