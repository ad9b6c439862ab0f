package io.agentnest.server.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.SandboxConfig;
import io.agentnest.SandboxLimit;
import io.agentnest.internal.remote.RemoteCreateRequest;
import io.agentnest.server.FakeSandboxes;
import io.agentnest.server.Http;
import io.agentnest.server.tenancy.Tenant;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The create request's {@code limits} object: every limit by its one name, the older top-level
 * fields still read, and each wrong request refused with a 422 naming the field and the fix.
 */
class RequestedLimitsTest {
  @TempDir Path dir;

  private static Tenant tenant() {
    return new Tenant("alpha", 50, 8L << 30, 8, 1000, null, null, 0, null, null, null, null);
  }

  private static Http.Reply create(FakeSandboxes running, String key, String body) {
    return running.http().json("POST", "/v1/sandboxes", key, body);
  }

  @Test
  void limitsByTheirOneNameReachTheSandboxesConfig() {
    try (FakeSandboxes running = new FakeSandboxes(dir, "")) {
      String key = running.store.add(tenant(), null);

      Http.Reply r =
          create(
              running,
              key,
              "{\"limits\": {\"open_files\": 1024, \"tmp_size\": \"128m\", \"pids\": 100,"
                  + " \"workspace_size\": 33554432}}");

      assertThat(r.status()).as(r.text()).isEqualTo(201);
      SandboxConfig c = running.created.get(0);
      assertThat(c.limit(SandboxLimit.OPEN_FILES)).isEqualTo(1024);
      assertThat(c.tmpSizeBytes()).isEqualTo(128L << 20);
      assertThat(c.pidsLimit()).isEqualTo(100);
      assertThat(c.workspaceSizeBytes()).isEqualTo(32L << 20);
    }
  }

  @Test
  void theJavaClientsRequestCarriesEveryLimitTheServerSetsAgain() {
    try (FakeSandboxes running = new FakeSandboxes(dir, "")) {
      String key = running.store.add(tenant(), null);
      SandboxConfig asked =
          SandboxConfig.builder()
              .limit(SandboxLimit.OPEN_FILES, 2048)
              .limit(SandboxLimit.PIDS, 64)
              .limit(SandboxLimit.TMP_SIZE, 16L << 20)
              .limit(SandboxLimit.WORKSPACE_SIZE, 48L << 20)
              .build();

      Http.Reply r = create(running, key, RemoteCreateRequest.body(asked).toString());

      assertThat(r.status()).as(r.text()).isEqualTo(201);
      assertThat(running.created.get(0).limits()).isEqualTo(asked.limits());
    }
  }

  @Test
  void wrongLimitsAreRefusedNamingTheFieldAndTheFix() {
    try (FakeSandboxes running = new FakeSandboxes(dir, "")) {
      String key = running.store.add(tenant(), null);

      assertRefused(
          create(running, key, "{\"limits\": {\"open_file\": 9}}"),
          "no limit named 'open_file'",
          "open_files");
      assertRefused(
          create(running, key, "{\"pidsLimit\": 100, \"limits\": {\"pids\": 100}}"),
          "limits.pids and pidsLimit both set the same limit");
      assertRefused(
          create(running, key, "{\"limits\": {\"open_files\": 10}}"),
          "limits.open_files must be at least 64, got 10");
      assertRefused(
          create(running, key, "{\"limits\": {\"open_files\": 2097152}}"), "at most 1048576");
      assertRefused(
          create(running, key, "{\"limits\": {\"pids\": 100000}}"),
          "limits.pids",
          "policy.max_pids");
      assertRefused(
          create(running, key, "{\"limits\": {\"workspace_size\": \"64g\"}}"),
          "limits.workspace_size");
      assertRefused(
          create(running, key, "{\"limits\": {\"open_files\": true}}"),
          "limits.open_files is not a whole number");
      assertRefused(
          create(running, key, "{\"limits\": {\"open_files\": 1.5}}"), "is not a whole number");
      assertRefused(
          create(running, key, "{\"limits\": {\"tmp_size\": \"lots\"}}"),
          "limits.tmp_size 'lots' is not a whole number of bytes or a size");
      assertThat(running.created).isEmpty();
    }
  }

  @Test
  void aHostileLimitNameOrValueComesBackEscaped() {
    try (FakeSandboxes running = new FakeSandboxes(dir, "")) {
      String key = running.store.add(tenant(), null);

      Http.Reply name = create(running, key, "{\"limits\": {\"\\u001b[31mx\\u0007\": 1}}");
      Http.Reply value =
          create(running, key, "{\"limits\": {\"tmp_size\": \"\\u001b]0;owned\\u0007\"}}");

      for (Http.Reply r : new Http.Reply[] {name, value}) {
        assertThat(r.status()).as(r.text()).isEqualTo(422);
        assertThat(r.text()).doesNotContain("\u001b", "\u0007", "\\u001b", "\\u0007");
      }
      assertThat(running.created).isEmpty();
    }
  }

  private static void assertRefused(Http.Reply r, String... parts) {
    assertThat(r.status()).as(r.text()).isEqualTo(422);
    assertThat(r.text()).contains(parts);
  }
}
