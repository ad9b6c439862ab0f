package io.agentnest.server.tenancy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TenantStoreTest {
  @TempDir Path dir;

  static Tenant tenant(String name) {
    return new Tenant(name, 2, 1L << 30, 2, 10, null, null);
  }

  @Test
  void aKeyAuthenticatesItsTenantAndOnlyItsHashIsStored() throws Exception {
    Path db = dir.resolve("t.db");
    String key;
    try (TenantStore s = TenantStore.open(db, Clock.systemUTC())) {
      key = s.add(tenant("search"), null);
      assertThat(key).matches("ank_[0-9a-f]{16}_[A-Za-z0-9_-]{43}");
      TenantStore.Check c = s.authenticate(key);
      assertThat(c.refusal()).isNull();
      assertThat(c.tenant().name()).isEqualTo("search");
    }
    String secret = key.substring("ank_".length() + 16 + 1);
    assertThat(new String(Files.readAllBytes(db), StandardCharsets.ISO_8859_1))
        .doesNotContain(secret);
  }

  @Test
  void aChangedSecretARevokedKeyAndAnExpiredKeyAreRefused() {
    Instant now = Instant.parse("2026-12-04T12:00:00Z");
    try (TenantStore s = TenantStore.open(dir.resolve("t.db"), Clock.fixed(now, ZoneOffset.UTC))) {
      String key = s.add(tenant("a"), null);
      String forged = key.substring(0, key.length() - 1) + (key.endsWith("A") ? "B" : "A");
      assertThat(s.authenticate(forged).refusal()).isEqualTo(TenantStore.Refusal.UNKNOWN);
      assertThat(s.authenticate("garbage").refusal()).isEqualTo(TenantStore.Refusal.MALFORMED);
      assertThat(s.revoke(key)).isTrue();
      assertThat(s.revoke(key)).isFalse();
      assertThat(s.authenticate(key).refusal()).isEqualTo(TenantStore.Refusal.REVOKED);
      String old = s.issueKey("a", now);
      assertThat(s.authenticate(old).refusal()).isEqualTo(TenantStore.Refusal.EXPIRED);
      assertThat(s.keys("a")).hasSize(2);
    }
  }

  /**
   * A key that authenticated is remembered, but a revocation by another process on the same file
   * (`agentnest tenant revoke` while the server runs) still takes effect within the store's recheck
   * interval, and a forged secret for a remembered id is still refused.
   */
  @Test
  void aKeyRevokedByAnotherProcessIsRefusedSoonAfterThoughItWasRemembered() {
    Path db = dir.resolve("t.db");
    try (TenantStore server = TenantStore.open(db, Clock.systemUTC());
        TenantStore cli = TenantStore.open(db, Clock.systemUTC())) {
      String key = server.add(tenant("a"), null);
      assertThat(server.authenticate(key).refusal()).isNull();
      String forged = key.substring(0, key.length() - 1) + (key.endsWith("A") ? "B" : "A");
      assertThat(server.authenticate(forged).refusal()).isEqualTo(TenantStore.Refusal.UNKNOWN);
      assertThat(cli.revoke(key)).isTrue();
      await()
          .atMost(Duration.ofSeconds(5))
          .until(() -> server.authenticate(key).refusal() == TenantStore.Refusal.REVOKED);
      // and a key the other process issues authenticates at once (nothing negative is remembered)
      String fresh = cli.issueKey("a", null);
      assertThat(server.authenticate(fresh).refusal()).isNull();
    }
  }

  @Test
  void aStoreFromBeforeTheExecutionsQuotaGetsItsDefaultAndANewTenantKeepsItsOwn() throws Exception {
    Path db = dir.resolve("old.db");
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db);
        Statement st = c.createStatement()) {
      st.execute(
          "CREATE TABLE tenants (name TEXT PRIMARY KEY, max_sandboxes INTEGER NOT NULL,"
              + " memory_bytes INTEGER NOT NULL, cpus REAL NOT NULL, rps INTEGER NOT NULL,"
              + " max_sandbox_memory INTEGER, allow_hosts TEXT, created TEXT NOT NULL)");
      st.execute("INSERT INTO tenants VALUES ('old', 1, 1024, 1, 5, NULL, NULL, 'x')");
    }
    try (TenantStore s = TenantStore.open(db, Clock.systemUTC())) {
      assertThat(s.find("old").orElseThrow().executionsPerMinute())
          .isEqualTo(Tenant.DEFAULT_EXECUTIONS_PER_MINUTE);
      s.add(new Tenant("new", 1, 1024, 1, 5, null, null, 7), null);
      assertThat(s.find("new").orElseThrow().executionsPerMinute()).isEqualTo(7);
    }
  }

  /** A key stored before roles existed is an agent key: it keeps doing what it did. */
  @Test
  void aKeyStoredBeforeRolesIsAnAgentKeyAndItsTenantRequiresNoApprover() throws Exception {
    Path db = dir.resolve("old.db");
    String key = "ank_0123456789abcdef_" + "k".repeat(43);
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db);
        Statement st = c.createStatement()) {
      st.execute(
          "CREATE TABLE tenants (name TEXT PRIMARY KEY, max_sandboxes INTEGER NOT NULL,"
              + " memory_bytes INTEGER NOT NULL, cpus REAL NOT NULL, rps INTEGER NOT NULL,"
              + " max_sandbox_memory INTEGER, allow_hosts TEXT, created TEXT NOT NULL)");
      st.execute("INSERT INTO tenants VALUES ('old', 1, 1024, 1, 5, NULL, NULL, 'x')");
      st.execute(
          "CREATE TABLE api_keys (id TEXT PRIMARY KEY, tenant TEXT NOT NULL REFERENCES"
              + " tenants(name), hash TEXT NOT NULL, created TEXT NOT NULL, expires TEXT,"
              + " revoked TEXT)");
      st.execute(
          "INSERT INTO api_keys VALUES ('0123456789abcdef', 'old', '"
              + Keys.sha256(key)
              + "', '2026-12-01T00:00:00Z', NULL, NULL)");
    }
    try (TenantStore s = TenantStore.open(db, Clock.systemUTC())) {
      TenantStore.Check c = s.authenticate(key);
      assertThat(c.refusal()).isNull();
      assertThat(c.role()).isEqualTo(KeyRole.AGENT);
      assertThat(c.tenant().approverRoleRequired()).isFalse();
      assertThat(s.keys("old")).extracting(ApiKey::role).containsExactly(KeyRole.AGENT);
      String approver = s.issueKey("old", null, KeyRole.APPROVER);
      assertThat(s.authenticate(approver).role()).isEqualTo(KeyRole.APPROVER);
      assertThat(s.requireApproverRole("old", true)).isTrue();
      assertThat(s.find("old").orElseThrow().approverRoleRequired()).isTrue();
      assertThat(s.requireApproverRole("nobody", true)).isFalse();
    }
    // and the role survives reopening
    try (TenantStore s = TenantStore.open(db, Clock.systemUTC())) {
      assertThat(s.keys("old"))
          .extracting(ApiKey::role)
          .containsExactly(KeyRole.AGENT, KeyRole.APPROVER);
      assertThat(s.find("old").orElseThrow().approverRoleRequired()).isTrue();
    }
  }

  @Test
  void badAndDuplicateNamesAreRefusedWithTheRule() {
    try (TenantStore s = TenantStore.open(dir.resolve("t.db"), Clock.systemUTC())) {
      assertThatThrownBy(() -> s.add(tenant("Bad_Name"), null)).hasMessageContaining("lower-case");
      s.add(tenant("x"), null);
      assertThatThrownBy(() -> s.add(tenant("x"), null)).hasMessageContaining("exists");
      assertThatThrownBy(() -> s.issueKey("nobody", null)).hasMessageContaining("tenant add");
    }
  }

  @Test
  void anAdminKeyIsHashedIsNoTenantKeyAndCanBeRevoked() throws Exception {
    Path db = dir.resolve("t.db");
    String admin;
    try (TenantStore s = TenantStore.open(db, Clock.systemUTC())) {
      String tenantKey = s.add(tenant("search"), null);
      admin = s.issueAdminKey();
      assertThat(admin).matches("ank_[0-9a-f]{16}_[A-Za-z0-9_-]{43}");
      assertThat(s.checkAdminKey(admin)).isNull();
      String id = TenantStore.keyId(admin);
      assertThat(s.adminKeyActive(id)).isTrue();
      // Neither key stands in for the other.
      assertThat(s.authenticate(admin).refusal()).isEqualTo(TenantStore.Refusal.UNKNOWN);
      assertThat(s.checkAdminKey(tenantKey)).isEqualTo(TenantStore.Refusal.UNKNOWN);
      String forged = admin.substring(0, admin.length() - 1) + (admin.endsWith("A") ? "B" : "A");
      assertThat(s.checkAdminKey(forged)).isEqualTo(TenantStore.Refusal.UNKNOWN);
      assertThat(s.checkAdminKey("garbage")).isEqualTo(TenantStore.Refusal.MALFORMED);
      assertThat(s.adminKeys()).extracting(ApiKey::id).containsExactly(id);

      assertThat(s.revoke(id)).isTrue();
      assertThat(s.checkAdminKey(admin)).isEqualTo(TenantStore.Refusal.REVOKED);
      assertThat(s.adminKeyActive(id)).isFalse();
      assertThat(s.adminKeys().get(0).revoked()).isNotNull();
    }
    // ank_<16 hex id>_<secret>: the secret itself may hold '_' (base64url).
    String secret = admin.substring("ank_".length() + 16 + 1);
    assertThat(new String(Files.readAllBytes(db), StandardCharsets.ISO_8859_1))
        .doesNotContain(secret);
  }
}
