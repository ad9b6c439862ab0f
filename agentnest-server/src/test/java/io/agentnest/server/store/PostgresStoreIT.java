package io.agentnest.server.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.server.FakeSandboxes;
import io.agentnest.server.Http;
import io.agentnest.server.config.StoreConfig;
import io.agentnest.server.tenancy.KeyRole;
import io.agentnest.server.tenancy.QuotaLedger;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The shared store against a real PostgreSQL (scripts/postgres.sh): two servers, each with its own
 * pool on one database, see the same tenants and keys, hold tenants to one quota together, start
 * together without running a migration twice, store hostile values verbatim or refuse them, and
 * name the fix when the database is wrong or gone. Every test makes its own database and drops it.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class PostgresStoreIT {
  private static final String SERVER_YAML = "max_json: 64k\nmax_body: 1m\n";

  private TestPostgres pg;

  @BeforeEach
  void database() {
    pg = TestPostgres.create();
  }

  @AfterEach
  void drop() throws SQLException {
    if (pg != null) { // null when the test was skipped for want of PostgreSQL
      pg.close();
    }
  }

  private static Tenant tenant(String name, int maxSandboxes) {
    return new Tenant(name, maxSandboxes, 1L << 40, 1000, 10_000, null, null, 1000);
  }

  @Test
  void aTenantAndKeyMadeThroughOneServerWorkOnTheOtherAndARevokedKeyOnNeither() {
    try (FakeSandboxes a = new FakeSandboxes(pg.shared(), SERVER_YAML, "a");
        FakeSandboxes b = new FakeSandboxes(pg.shared(), SERVER_YAML, "b")) {
      String key = a.store.add(tenant("search", 5), null);
      assertThat(b.http().get("/v1/sandboxes", key).status()).isEqualTo(200);
      String id = b.http().created(key, "{}");
      // Who owns a sandbox is shared too: the audit's tenant-wide view reads it (written behind
      // the create).
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> a.store.sandboxIds("search", 10), ids -> ids.equals(List.of(id)));
      // Executions started through B count in the window A reports.
      Tenant t = b.store.find("search").orElseThrow();
      assertThat(b.store.quota().startExecution(t, Instant.now())).isNull();
      assertThat(b.store.quota().startExecution(t, Instant.now())).isNull();
      assertThat(a.http().get("/v1/tenant", key).json().get("executionsLastMinute").asInt())
          .isEqualTo(2);
      String approver = b.store.issueKey("search", null, KeyRole.APPROVER);
      assertThat(a.store.authenticate(approver).role()).isEqualTo(KeyRole.APPROVER);

      assertThat(b.store.revoke(TenantStore.keyId(key))).isTrue();
      for (FakeSandboxes s : List.of(a, b)) {
        Http.Reply r = s.http().get("/v1/sandboxes", key);
        assertThat(r.status()).isEqualTo(401);
        assertThat(r.errorCode()).isEqualTo("key_revoked");
      }
      assertThat(a.store.authenticate(key).refusal()).isEqualTo(TenantStore.Refusal.REVOKED);
      String admin = a.store.issueAdminKey();
      assertThat(b.store.checkAdminKey(admin)).isNull();
      assertThat(b.store.revoke(admin)).isTrue();
      assertThat(a.store.checkAdminKey(admin)).isEqualTo(TenantStore.Refusal.REVOKED);
      assertThat(a.store.adminKeys()).hasSize(1);
    }
  }

  @Test
  void tenantsReadBackAsTheyWereWrittenWithEveryOptionalSetting() {
    Tenant full =
        new Tenant(
            "full",
            3,
            8L << 30,
            2.5,
            40,
            1L << 30,
            List.of("pypi.org", "*.example.org"),
            120,
            "recommended",
            4,
            5L << 30,
            512L,
            true);
    try (PostgresTenantStore s = pg.store()) {
      s.add(full, Instant.now().plus(Duration.ofDays(1)));
      s.add(tenant("plain", 1), null);
      assertThat(s.find("full")).contains(full);
      assertThat(s.find("plain")).contains(tenant("plain", 1));
      assertThat(s.tenants()).extracting(Tenant::name).containsExactly("full", "plain");
      assertThat(s.keys("full"))
          .singleElement()
          .satisfies(k -> assertThat(k.expires()).isNotNull());
      assertThat(s.requireApproverRole("plain", true)).isTrue();
      assertThat(s.find("plain").orElseThrow().approverRoleRequired()).isTrue();
      assertThat(s.requireApproverRole("nobody", true)).isFalse();
      assertThatThrownBy(() -> s.add(tenant("plain", 1), null))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("tenant 'plain' exists");
    }
  }

  @Test
  void aServerAdoptsOnlyTheSandboxesOfItsOwnHomeNotThoseOfAnotherOnTheDatabase() {
    try (FakeSandboxes a = new FakeSandboxes(pg.shared("/srv/a"), SERVER_YAML, "a");
        FakeSandboxes b = new FakeSandboxes(pg.shared("/srv/b"), SERVER_YAML, "b")) {
      String key = a.store.add(tenant("own", 5), null);
      a.http().created(key, "{}");
      assertThat(b.adopt(a)).isZero();
      try (FakeSandboxes restarted = new FakeSandboxes(pg.shared("/srv/a"), SERVER_YAML, "r")) {
        assertThat(restarted.adopt(a)).isEqualTo(1);
      }
    }
  }

  @Test
  void racingCreatesOnTwoStoresNeverOvershootAQuota() throws Exception {
    int limit = 30;
    int attempts = 50;
    try (PostgresTenantStore a = pg.store();
        PostgresTenantStore b = pg.store()) {
      a.add(tenant("race", limit), null);
      Tenant t = b.find("race").orElseThrow();
      AtomicInteger granted = new AtomicInteger();
      AtomicInteger refused = new AtomicInteger();
      runTogether(
          List.of(a.quota(), b.quota()),
          (ledger, i) -> {
            QuotaLedger.Full full =
                ledger.hold(t, "h" + i, 1 << 20, 0.5, 0, Instant.now().plusSeconds(600));
            (full == null ? granted : refused).incrementAndGet();
            if (full != null) {
              assertThat(full.quota()).isEqualTo("sandboxes");
              assertThat(full.limit()).isEqualTo(limit);
            }
          },
          attempts);
      assertThat(granted.get()).isEqualTo(limit);
      assertThat(refused.get()).isEqualTo(2 * attempts - limit);
      assertThat(count("SELECT count(*) FROM quota_holds WHERE tenant = 'race'")).isEqualTo(limit);
    }
  }

  @Test
  void racingExecutionsOnTwoStoresNeverPassTheMinutesLimit() throws Exception {
    int limit = 30;
    int attempts = 50;
    try (PostgresTenantStore a = pg.store();
        PostgresTenantStore b = pg.store()) {
      a.add(new Tenant("busy", 5, 1L << 30, 4, 10_000, null, null, limit), null);
      Tenant t = b.find("busy").orElseThrow();
      AtomicInteger started = new AtomicInteger();
      AtomicInteger refused = new AtomicInteger();
      Instant now = Instant.now();
      runTogether(
          List.of(a.quota(), b.quota()),
          (ledger, i) -> {
            QuotaLedger.Busy busy = ledger.startExecution(t, now.plusMillis(i));
            if (busy == null) {
              started.incrementAndGet();
            } else {
              refused.incrementAndGet();
              assertThat(busy.used()).isEqualTo(limit);
              assertThat(busy.retrySeconds()).isBetween(1L, 60L);
            }
          },
          attempts);
      assertThat(started.get()).isEqualTo(limit);
      assertThat(refused.get()).isEqualTo(2 * attempts - limit);
      assertThat(a.quota().executionsUsed("busy", now.plusSeconds(1))).isEqualTo(limit);
      // A minute on, the window has room again, on either server.
      assertThat(b.quota().startExecution(t, now.plusSeconds(61))).isNull();
      assertThat(a.quota().executionsUsed("busy", now.plusSeconds(61))).isEqualTo(1);
    }
  }

  @Test
  void racingCreatesThroughTwoServersNeverOvershootAndADestroyGivesRoomBack() throws Exception {
    int limit = 30;
    int attempts = 50;
    try (FakeSandboxes a = new FakeSandboxes(pg.shared(), SERVER_YAML, "a");
        FakeSandboxes b = new FakeSandboxes(pg.shared(), SERVER_YAML, "b")) {
      String key = a.store.add(tenant("race", limit), null);
      AtomicInteger created = new AtomicInteger();
      AtomicInteger quota = new AtomicInteger();
      List<String> ids = Collections.synchronizedList(new ArrayList<>());
      runTogether(
          List.of(a.http(), b.http()),
          (http, i) -> {
            Http.Reply r = http.json("POST", "/v1/sandboxes", key, "{\"memoryBytes\": 16777216}");
            if (r.status() == 201) {
              created.incrementAndGet();
              ids.add(r.json().get("id").asText());
            } else {
              assertThat(r.status()).as(r.text()).isEqualTo(429);
              assertThat(r.errorCode()).isEqualTo("quota");
              quota.incrementAndGet();
            }
          },
          attempts);
      assertThat(created.get()).isEqualTo(limit);
      assertThat(quota.get()).isEqualTo(2 * attempts - limit);
      // Either server shows the tenant its whole use.
      for (FakeSandboxes s : List.of(a, b)) {
        JsonNode use = s.http().get("/v1/tenant", key).json().get("usage");
        assertThat(use.get("sandboxes").asInt()).isEqualTo(limit);
        assertThat(use.get("memoryBytes").asLong()).isEqualTo(limit * 16L << 20);
      }
      // A sandbox destroyed on A makes room for a create on B.
      String onA = ids.stream().filter(id -> id.startsWith("a")).findFirst().orElseThrow();
      assertThat(a.http().delete("/v1/sandboxes/" + onA, key).status()).isEqualTo(204);
      assertThat(b.http().json("POST", "/v1/sandboxes", key, "{}").status()).isEqualTo(201);
      assertThat(b.http().json("POST", "/v1/sandboxes", key, "{}").status()).isEqualTo(429);
    }
  }

  @Test
  void serversStartingTogetherOnAnEmptyDatabaseRunEachMigrationOnce() throws Exception {
    // Several rounds, each on a database of its own: a race shows only now and then.
    for (int round = 0; round < 3; round++) {
      try (TestPostgres fresh = TestPostgres.create()) {
        startTogether(fresh, 3);
      }
    }
  }

  private static void startTogether(TestPostgres db, int servers) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(servers);
    CountDownLatch go = new CountDownLatch(1);
    List<PostgresTenantStore> stores = new ArrayList<>();
    try {
      List<Future<PostgresTenantStore>> opened = new ArrayList<>();
      for (int i = 0; i < servers; i++) {
        opened.add(
            pool.submit(
                () -> {
                  go.await(30, TimeUnit.SECONDS);
                  return db.store();
                }));
      }
      go.countDown();
      for (Future<PostgresTenantStore> f : opened) {
        stores.add(f.get(60, TimeUnit.SECONDS));
      }
      try (Connection c = db.connect();
          Statement s = c.createStatement();
          ResultSet r =
              s.executeQuery(
                  "SELECT version, count(*) FROM agentnest_schema_history WHERE success"
                      + " GROUP BY version ORDER BY version")) {
        List<String> applied = new ArrayList<>();
        while (r.next()) {
          applied.add(r.getString(1) + "x" + r.getLong(2));
        }
        // Every migration once: none twice, none missing (versions 1, 2, 3, ...).
        assertThat(applied).isNotEmpty().allMatch(v -> v.endsWith("x1"));
        for (int v = 1; v <= applied.size(); v++) {
          assertThat(applied).contains(v + "x1");
        }
      }
      stores.get(0).add(tenant("one", 1), null);
      assertThat(stores.get(servers - 1).find("one")).isPresent();
    } finally {
      stores.forEach(PostgresTenantStore::close);
      pool.shutdownNow();
    }
  }

  @Test
  void aDatabaseHoldingOtherTablesIsRefusedWithTheFix() throws Exception {
    try (TestPostgres other = TestPostgres.create()) {
      try (Connection c = other.connect();
          Statement s = c.createStatement()) {
        s.execute("CREATE TABLE invoices (id int)");
      }
      assertThatThrownBy(other::store)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("cannot bring the schema of")
          .hasMessageContaining("give the server a database of its own");
    }
  }

  @Test
  void hostileValuesAreRefusedWithAReasonOrStoredVerbatimNeverRunAsSql() throws Exception {
    String drop = "x'; DROP TABLE tenants; --";
    try (PostgresTenantStore s = pg.store()) {
      for (String name :
          List.of(drop, "o'brien", "a\"b", "nul\0name", "robert');--", "x".repeat(100_000))) {
        assertThatThrownBy(() -> s.add(tenant(name, 1), null))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("is invalid: use lower-case letters, digits and '-'");
        assertThat(s.find(name)).isEmpty();
        assertThat(s.revoke(name)).isFalse();
        assertThat(s.keyActive(name)).isFalse();
        assertThat(s.adminKeyActive(name)).isFalse();
        assertThat(s.authenticate(name).refusal()).isEqualTo(TenantStore.Refusal.MALFORMED);
        assertThat(s.checkAdminKey(name)).isEqualTo(TenantStore.Refusal.MALFORMED);
        assertThat(s.sandboxIds(name, 5)).isEmpty();
        assertThat(s.keys(name)).isEmpty();
      }
      // Values the store keeps as text come back exactly as they went in.
      List<String> hosts = List.of(drop, "o'brien.example.org", "\\x00", "y".repeat(10_000));
      Tenant hostile = new Tenant("hostile", 1, 1L << 30, 1, 10, null, hosts, 0);
      s.add(hostile, null);
      assertThat(s.find("hostile").orElseThrow().allowHosts()).isEqualTo(hosts);
      s.recordSandbox("hostile", drop);
      assertThat(s.sandboxIds("hostile", 5)).containsExactly(drop);
      assertThatThrownBy(() -> s.recordSandbox("hostile", "nul\0id"))
          .isInstanceOf(IllegalArgumentException.class);
      Tenant nul = new Tenant("nul", 1, 1L << 30, 1, 10, null, List.of("a\0b"), 0);
      assertThatThrownBy(() -> s.add(nul, null))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("NUL character");
      assertThat(s.find("nul")).isEmpty();
    }
    assertThat(count("SELECT count(*) FROM tenants")).isEqualTo(1);
    assertThat(count("SELECT count(*) FROM api_keys")).isEqualTo(1);
  }

  @Test
  void aWrongPasswordIsNamedWithTheVariableToFix() {
    StoreConfig.Postgres c = pg.config();
    assertThatThrownBy(
            () ->
                PostgresTenantStore.open(
                    c, Map.of(TestPostgres.PASSWORD_ENV, "wrong"), Clock.systemUTC()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("test.yaml:1:1")
        .hasMessageContaining("refused the password of role '" + pg.user() + "'")
        .hasMessageContaining("set " + TestPostgres.PASSWORD_ENV);
    assertThatThrownBy(() -> PostgresTenantStore.open(c, Map.of(), Clock.systemUTC()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(TestPostgres.PASSWORD_ENV + ", which is not set");
  }

  @Test
  void aMissingDatabaseOrRoleIsNamedWithHowToMakeIt() {
    StoreConfig.Postgres c = pg.config();
    StoreConfig.Postgres noDb =
        new StoreConfig.Postgres(
            c.url().replace(pg.database, pg.database + "_nope"), c.user(), c.passwordEnv(), "t");
    assertThatThrownBy(() -> PostgresTenantStore.open(noDb, pg.env(), Clock.systemUTC()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("database '" + pg.database + "_nope' does not exist")
        .hasMessageContaining("CREATE DATABASE");
    StoreConfig.Postgres noRole =
        new StoreConfig.Postgres(c.url(), "nobody_here", c.passwordEnv(), "t");
    // scram auth answers an unknown role like a wrong password: either message names the role.
    assertThatThrownBy(() -> PostgresTenantStore.open(noRole, pg.env(), Clock.systemUTC()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'nobody_here'");
  }

  @Test
  void nothingListeningIsNamedWithinTheConnectBound() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    StoreConfig.Postgres gone =
        new StoreConfig.Postgres(
            "jdbc:postgresql://127.0.0.1:" + port + "/agentnest", "u", "PW", "server.yaml:7:3");
    long start = System.nanoTime();
    assertThatThrownBy(() -> PostgresTenantStore.open(gone, Map.of("PW", "x"), Clock.systemUTC()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("server.yaml:7:3")
        .hasMessageContaining("check that PostgreSQL runs and listens at 127.0.0.1:" + port)
        .hasMessageContaining("scripts/postgres.sh up")
        .hasMessageNotContaining("\tat ");
    // A hang guard, not a speed claim: the connect timeout bounds the wait.
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(30));
  }

  @Test
  void aDatabaseGoneWhileServingGives503NamingTheStoreAndRecovers() throws Exception {
    try (FakeSandboxes a = new FakeSandboxes(pg.shared(), SERVER_YAML, "a")) {
      String key = a.store.add(tenant("down", 5), null);
      assertThat(a.http().get("/v1/sandboxes", key).status()).isEqualTo(200);
      try (Connection admin = pg.admin();
          Statement s = admin.createStatement()) {
        s.execute("ALTER DATABASE " + pg.database + " ALLOW_CONNECTIONS false");
        s.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '"
                + pg.database
                + "'");
        Http.Reply r = a.http().get("/v1/sandboxes", key);
        assertThat(r.status()).isEqualTo(503);
        assertThat(r.text())
            .contains("the server's shared store does not answer")
            .doesNotContain("\tat ")
            .doesNotContain("Exception");
        s.execute("ALTER DATABASE " + pg.database + " ALLOW_CONNECTIONS true");
      }
      await()
          .atMost(Duration.ofSeconds(30))
          .pollInterval(Duration.ofMillis(200))
          .until(() -> a.http().get("/v1/sandboxes", key).status() == 200);
    }
  }

  private interface Attempt<T> {
    void run(T target, int i) throws Exception;
  }

  /** {@code attempts} calls on each target, all targets at once from a common start. */
  private static <T> void runTogether(List<T> targets, Attempt<T> attempt, int attempts)
      throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(targets.size());
    CountDownLatch go = new CountDownLatch(1);
    try {
      List<Future<Void>> done = new ArrayList<>();
      for (int t = 0; t < targets.size(); t++) {
        T target = targets.get(t);
        int base = t * attempts;
        Callable<Void> loop =
            () -> {
              go.await(30, TimeUnit.SECONDS);
              for (int i = 0; i < attempts; i++) {
                attempt.run(target, base + i);
              }
              return null;
            };
        done.add(pool.submit(loop));
      }
      go.countDown();
      for (Future<Void> f : done) {
        f.get(2, TimeUnit.MINUTES);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  private long count(String sql) throws SQLException {
    try (Connection c = pg.connect();
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery(sql)) {
      r.next();
      return r.getLong(1);
    }
  }
}
