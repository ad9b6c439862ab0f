package io.agentnest.server.tenancy;

import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Tenants, their API keys (only hashes: {@link Keys}), admin keys and which tenant each sandbox
 * belonged to. One machine keeps them in a SQLite file ({@link SqliteTenantStore}, {@link #open});
 * several servers share them in PostgreSQL ({@code store.postgres} in server.yaml), where a key
 * made or revoked through one server is seen by every other.
 */
public interface TenantStore extends AutoCloseable {
  /** Where the SQLite store lives below AGENTNEST_HOME. */
  String FILE = "server/tenants.db";

  /** Opens (creating) the SQLite store at {@code file}. */
  static TenantStore open(Path file, Clock clock) {
    return SqliteTenantStore.open(file, clock);
  }

  /** Checks a tenant name; the message says what is allowed. */
  static String checkName(String name) {
    if (!Tenant.NAME.matcher(name).matches()) {
      throw new IllegalArgumentException(
          "tenant name '"
              + name
              + "' is invalid: use lower-case letters, digits and '-' (at most 63), e.g. search");
    }
    return name;
  }

  /** The id part of a well-formed key (what listings and revocation use). */
  static String keyId(String key) {
    var m = Keys.match(key);
    if (!m.matches()) {
      throw new IllegalArgumentException("not a key: keys look like ank_<16 hex>_<43 characters>");
    }
    return m.group(1);
  }

  /** Why a presented key does not authenticate. */
  enum Refusal {
    MALFORMED,
    UNKNOWN,
    REVOKED,
    EXPIRED
  }

  /** The outcome of checking a key: the tenant and the key's role, or why not. */
  record Check(
      @Nullable Tenant tenant, @Nullable String keyId, @Nullable Refusal refusal, KeyRole role) {
    public Check(@Nullable Tenant tenant, @Nullable String keyId, @Nullable Refusal refusal) {
      this(tenant, keyId, refusal, KeyRole.AGENT);
    }
  }

  /**
   * Which store this is, for the label a server writes on its sandboxes: a server adopts only the
   * sandboxes of its own store (two servers with two stores on one engine never take each other's).
   */
  String storeId();

  /** Records that sandbox {@code id} is {@code tenant}'s (idempotent). */
  void recordSandbox(String tenant, String id);

  /** The ids of {@code tenant}'s sandboxes, alive or gone, newest first, at most {@code max}. */
  List<String> sandboxIds(String tenant, int max);

  /** Adds a tenant and issues its first key; the key is returned once and never stored. */
  String add(Tenant tenant, @Nullable Instant expires);

  /**
   * Sets whether only approver keys answer {@code tenant}'s approval questions; false when there is
   * no such tenant.
   */
  boolean requireApproverRole(String tenant, boolean required);

  /** A new agent key for an existing tenant; returned once. */
  default String issueKey(String tenant, @Nullable Instant expires) {
    return issueKey(tenant, expires, KeyRole.AGENT);
  }

  /** A new key of {@code role} for an existing tenant; returned once. */
  String issueKey(String tenant, @Nullable Instant expires, KeyRole role);

  /** Checks a presented key against the stored hashes. */
  Check authenticate(String presented);

  /**
   * Whether tenant key {@code id} still authenticates: it exists, is not revoked and has not
   * expired. Asked on every request a console session or an E2B access token makes, since both were
   * obtained with a key and must end with it.
   */
  boolean keyActive(String id);

  /**
   * Revokes a key by its id (or the whole key), a tenant's or an admin key; false when there is no
   * such key.
   */
  boolean revoke(String keyOrId);

  /**
   * Issues an admin key: the web console signed in with it shows every tenant's sandboxes,
   * approvals and audit, and answers any tenant's questions (as {@code console:admin}). It is no
   * tenant's key: the API refuses it. Returned once; only its hash is kept, like a tenant key's.
   */
  String issueAdminKey();

  /** Checks a presented admin key: null when it is a valid one, else why not. */
  @Nullable Refusal checkAdminKey(String presented);

  /** Whether admin key {@code id} exists and is not revoked. */
  boolean adminKeyActive(String id);

  /** The admin keys (ids and dates, never secrets); their tenant is shown as {@code *admin}. */
  List<ApiKey> adminKeys();

  /** A tenant by name. */
  Optional<Tenant> find(String name);

  /** Every tenant, by name. */
  List<Tenant> tenants();

  /** Every key of a tenant (ids and dates, never secrets). */
  List<ApiKey> keys(String tenant);

  /** How the quota use of this store's tenants is shared between servers. */
  default QuotaLedger quota() {
    return QuotaLedger.NONE;
  }

  @Override
  void close();
}
