package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import io.agentnest.ApprovalDeniedException;
import io.agentnest.ApprovalPolicy;
import io.agentnest.Artifact;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.FileOperationException;
import io.agentnest.ResourceUsage;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxNotFoundException;
import io.agentnest.Secret;
import io.agentnest.SnapshotException;
import io.agentnest.SnapshotInfo;
import io.agentnest.UnsupportedControlException;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.Tenant;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The public Java API against a server: Sandbox.create with .remote(url, key). */
@ExtendWith(DockerEngineRequired.class)
class RemoteSandboxIT {
  @TempDir static Path dir;

  static TestServer running;
  static AgentNestServer server;
  static URI url;
  static String key;

  @BeforeAll
  static void start() {
    running = TestServer.start(dir, ServerConfig.defaults().withListen("127.0.0.1", 0));
    server = running.server();
    key = running.key(new Tenant("remote", 2, 2L << 30, 2, 1000, null, null));
    url = URI.create("http://127.0.0.1:" + running.port());
  }

  @AfterAll
  static void stop() {
    if (running != null) {
      running.close();
    }
  }

  @Test
  void theSamePublicApiRunsCodeCommandsAndFilesOnTheServer() {
    String id;
    try (Sandbox sb = Sandbox.create(SandboxConfig.builder().remote(url, key).build())) {
      id = sb.id();
      assertThat(sb.runCode("a = 10; print(a * 2)").output()).isEqualTo("20\n");
      assertThat(sb.runCode("a + 1").result()).isEqualTo("11");
      assertThat(sb.pythonSession("other").run("print('a' in dir())").output())
          .isEqualTo("False\n");
      ExecResult r = sb.exec("echo $X; exit 4", ExecOptions.builder().env("X", "y").build());
      assertThat(r.stdout()).isEqualTo("y\n");
      assertThat(r.exitCode()).isEqualTo(4);
      assertThat(sb.exec(List.of("printf", "%s", "a b"), ExecOptions.defaults()).stdout())
          .isEqualTo("a b");
      sb.files().write("d/x.txt", "hello");
      assertThat(sb.files().readString("d/x.txt")).isEqualTo("hello");
      assertThat(sb.files().exists("d/x.txt")).isTrue();
      assertThat(sb.files().list("d")).extracting(f -> f.size()).containsExactly(5L);
      assertThatThrownBy(() -> sb.files().read("../etc/passwd"))
          .isInstanceOf(FileOperationException.class)
          .hasMessageContaining("..");
      var before = sb.expiresAt();
      sb.extend(Duration.ofMinutes(1));
      assertThat(sb.expiresAt()).isAfter(before);
      // The server's engine figures (none until its first sample, taken in the background).
      ResourceUsage used =
          await()
              .atMost(Duration.ofSeconds(20))
              .until(sb::usage, Optional::isPresent)
              .orElseThrow();
      assertThat(used.memoryBytes()).isPositive().isLessThan(used.memoryLimitBytes());
      // Exports land on this host after this host's checks, with checksums computed here.
      assertThat(sb.exportArtifacts("d/*.txt", dir))
          .singleElement()
          .satisfies(
              a -> {
                assertThat(a.path()).isEqualTo("d/x.txt");
                assertThat(a.hostPath()).isNotNull().hasContent("hello");
              });
      assertThatThrownBy(() -> sb.prepareForks(2))
          .isInstanceOf(UnsupportedControlException.class)
          .hasMessageContaining("prepareForks");
      assertThat(server.sandboxCount()).isEqualTo(1);
    }
    assertThat(server.sandboxCount()).isZero();
    assertThat(new Http(url.getPort()).get("/v1/sandboxes/" + id, key).status()).isEqualTo(404);
  }

  @Test
  void forkSnapshotRestoreAndArtifactsWorkThroughThePublicApi() {
    SandboxConfig remote = SandboxConfig.builder().remote(url, key).memoryBytes(256L << 20).build();
    try (Sandbox sb = Sandbox.create(remote)) {
      sb.runCode("v = 'state'");
      sb.files().write("out/a.csv", "1,2");
      assertThat(sb.artifacts("out/*.csv"))
          .extracting(Artifact::path, Artifact::size)
          .containsExactly(tuple("out/a.csv", 3L));
      try (Sandbox copy = sb.fork()) {
        assertThat(copy.id()).isNotEqualTo(sb.id());
        assertThat(copy.runCode("v").result()).isEqualTo("'state'");
        copy.files().write("out/a.csv", "changed");
        assertThat(sb.files().readString("out/a.csv")).isEqualTo("1,2");
      }
      SnapshotInfo saved = sb.snapshot("java-api");
      assertThat(saved.name()).isEqualTo("java-api");
      try {
        try (Sandbox back = Sandbox.restore("java-api", remote)) {
          assertThat(back.runCode("v").result()).isEqualTo("'state'");
          assertThat(back.files().readString("out/a.csv")).isEqualTo("1,2");
        }
        assertThatThrownBy(() -> sb.snapshot("java-api"))
            .isInstanceOfSatisfying(
                SnapshotException.class,
                e -> assertThat(e.reason()).isEqualTo(SnapshotException.Reason.EXISTS))
            .hasMessageContaining("exists")
            .hasMessageContaining("replace");
      } finally {
        new Http(url.getPort()).delete("/v1/snapshots/java-api", key);
      }
    }
    assertThat(server.sandboxCount()).isZero();
  }

  @Test
  void aRevokedKeyOrAWrongOneFailsWithAClearError() {
    String other = running.store().issueKey("remote", null);
    running.store().revoke(other);
    assertThatThrownBy(() -> Sandbox.create(SandboxConfig.builder().remote(url, other).build()))
        .hasMessageContaining("revoked")
        .hasMessageContaining("AGENTNEST_API_KEY");
    assertThat(server.sandboxCount()).isZero();
  }

  @Test
  void settingsThatActOnThisHostAreRefusedNotDropped() {
    SandboxConfig c =
        SandboxConfig.builder().remote(url, key).secretEnv("TOKEN", Secret.of("s3cret")).build();
    assertThatThrownBy(() -> Sandbox.create(c))
        .isInstanceOf(UnsupportedControlException.class)
        .hasMessageContaining("secretEnv");
    assertThat(server.sandboxCount()).isZero();
  }

  @Test
  void approvalRulesTravelToTheServerAndRecommendedOnesWaitInItsQueue() throws Exception {
    SandboxConfig custom =
        SandboxConfig.builder()
            .remote(url, key)
            .memoryBytes(256L << 20)
            .approvals(
                ApprovalPolicy.builder()
                    .shell("\\bmake\\s+deploy\\b", ApprovalPolicy.Action.DENY)
                    .build())
            .build();
    try (Sandbox sb = Sandbox.create(custom)) {
      assertThatThrownBy(() -> sb.exec("make deploy"))
          .isInstanceOf(ApprovalDeniedException.class)
          .hasMessageContaining("make deploy");
      assertThat(sb.exec("echo ok").stdout()).isEqualTo("ok\n");
    }
    SandboxConfig paths =
        SandboxConfig.builder()
            .remote(url, key)
            .approvals(
                ApprovalPolicy.recommended().toBuilder()
                    .writablePaths(List.of("/workspace"))
                    .build())
            .build();
    assertThatThrownBy(() -> Sandbox.create(paths))
        .isInstanceOf(UnsupportedControlException.class)
        .hasMessageContaining("writablePaths");
    SandboxConfig recommended =
        SandboxConfig.builder()
            .remote(url, key)
            .memoryBytes(256L << 20)
            .approvals(ApprovalPolicy.recommended())
            .build();
    try (Sandbox sb = Sandbox.create(recommended)) {
      sb.files().write("keep.txt", "x");
      CompletableFuture<ExecResult> rm =
          CompletableFuture.supplyAsync(() -> sb.exec("rm keep.txt"));
      Http http = new Http(url.getPort());
      String[] id = {null};
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> {
                var list = http.get("/v1/approvals", key).json().get("approvals");
                id[0] = list.size() > 0 ? list.get(0).get("id").asText() : null;
                return id[0] != null;
              });
      assertThat(http.json("POST", "/v1/approvals/" + id[0], key, "{\"approve\": false}").status())
          .isEqualTo(204);
      rm.handle((r, e) -> null).get(120, TimeUnit.SECONDS);
      assertThat(sb.files().exists("keep.txt")).isTrue();
    }
  }

  @Test
  void aDestroyedRemoteSandboxIsNotFound() {
    Sandbox sb = Sandbox.create(SandboxConfig.builder().remote(url, key).build());
    new Http(url.getPort()).delete("/v1/sandboxes/" + sb.id(), key);
    assertThatThrownBy(() -> sb.exec("true")).isInstanceOf(SandboxNotFoundException.class);
    sb.close();
  }
}
