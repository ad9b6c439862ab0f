package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.GitAuth;
import io.agentnest.GitAuthor;
import io.agentnest.GitCommit;
import io.agentnest.GitException;
import io.agentnest.GitWorkspace;
import io.agentnest.NetworkPolicy;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import io.agentnest.internal.egress.EgressResolvers;
import io.agentnest.internal.egress.InterceptionCa;
import io.agentnest.internal.egress.LoopbackHttpsOrigin;
import io.agentnest.internal.egress.StaticResolver;
import io.agentnest.internal.egress.UpstreamTrust;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Git workspaces on the real engine: a smart-HTTP git server on the host's loopback ({@code git
 * http-backend} behind basic auth that wants the token), reached through the egress proxy with the
 * test-only loopback allowance (a static resolver and allowAddress 127.0.0.1, as in BrowserIT), in
 * the tools image of {@link EgressToolsIT} (it has git). The token is added by the egress proxy to
 * the requests of one operation to its remote; the test looks for it in every process's
 * environment, in the files sandbox code can read and in all output, and finds it nowhere. {@link
 * GitHostileRepositoryIT} has the attacks of a repository prepared by sandbox code.
 */
@ExtendWith(DockerEngineRequired.class)
class GitWorkspaceIT {
  // Not shaped like any well-known credential: output redaction must not be what hides it.
  static final String TOKEN = "gitws7f3a9c2e51d84b06e1c5aa0d9b";
  static final GitAuthor AUTHOR = new GitAuthor("Agent Bot", "bot@agentnest.test");

  @TempDir static Path tmp;
  static GitHttpServer server;
  static AuditLog audit;
  static String url;
  static final List<String> outputs = new CopyOnWriteArrayList<>();

  /** The OCI runtime under test; {@link GvisorGitWorkspaceIT} runs the same tests on gVisor. */
  static String runtime = "runc";

  @BeforeAll
  static void start() throws Exception {
    GitHttpServer.requireHostGit();
    EgressToolsIT.ensureImage();
    Path repos = Files.createDirectories(tmp.resolve("repos"));
    GitHttpServer.seed(repos, "app.git", tmp);
    server = new GitHttpServer(repos, TOKEN);
    url = "http://git.test:" + server.port() + "/app.git";
    EgressResolvers.replaceForTests(
        StaticResolver.of("git.test", "127.0.0.1").with("other.test", "127.0.0.1"));
    audit = AuditLog.open(tmp.resolve("audit"));
  }

  @AfterAll
  static void stop() {
    EgressResolvers.replaceForTests(null);
    if (server != null) {
      server.close();
    }
    if (audit != null) {
      audit.close();
    }
    assertThat(outputs).noneMatch(o -> o.contains(TOKEN));
  }

  static Sandbox sandbox() {
    return Sandbox.create(
        SandboxConfig.builder()
            .image(EgressToolsIT.IMAGE)
            .runtime(runtime)
            .network(
                NetworkPolicy.builder()
                    .allow("git.test:" + server.port())
                    .allowAddress("127.0.0.1")
                    .build())
            .auditLog(audit)
            .build());
  }

  static GitAuth token() {
    return GitAuth.token(Secret.of(TOKEN));
  }

  /** Runs host git; its output, bounded. */
  static String host(Path dir, String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of("git", "-C", dir.toString()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (InputStream in = p.getInputStream()) {
      byte[] buf = new byte[8192];
      int n;
      while ((n = in.read(buf)) > 0 && out.size() < (1 << 20)) {
        out.write(buf, 0, n);
      }
    }
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    String text = out.toString(StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as("git %s: %s", cmd, text).isZero();
    return text;
  }

  static String sh(Sandbox sb, String command) {
    ExecResult r =
        sb.exec(
            command,
            ExecOptions.builder()
                .timeout(Duration.ofSeconds(60))
                .maxOutputBytes(64L << 20)
                .build());
    String all = r.stdout() + "\n" + r.stderr();
    outputs.add(all);
    return all;
  }

  /** Everything sandbox code could read that might hold the token, read back to the host. */
  static void assertNoTokenInside(Sandbox sb) {
    String environ =
        sh(sb, "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | head -c 4000000");
    assertThat(environ).contains("PATH=").doesNotContain(TOKEN);
    String cmdlines =
        sh(sb, "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | head -c 4000000");
    assertThat(cmdlines).doesNotContain(TOKEN);
    String files =
        sh(
            sb,
            "find /tmp /workspace /home /root /run /var/tmp -xdev -type f -size -4M 2>/dev/null"
                + " | head -n 20000 | xargs -r cat 2>/dev/null | head -c 60000000");
    assertThat(files).contains("[core]").doesNotContain(TOKEN);
    String config = sh(sb, "cat /workspace/app/.git/config");
    assertThat(config).contains("git.test").doesNotContain(TOKEN).doesNotContain("@git.test");
  }

  List<AuditEvent> events(String type) {
    return audit.query(AuditQuery.builder().type(type).build());
  }

  @Test
  void cloneBranchCommitPatchAndPushWithATokenThatNeverEntersTheSandbox() throws Exception {
    try (Sandbox sb = sandbox()) {
      GitWorkspace repo = sb.git().clone(url, "app", token());
      assertThat(sb.files().readString("app/README.md")).contains("A test repository.");
      assertNoTokenInside(sb);
      assertThat(server.authorizations).isNotEmpty();

      repo.checkoutNewBranch("fix/readme");
      assertThat(repo.branch()).isEqualTo("fix/readme");
      sb.files().write("app/src/app.txt", "line one\nline 2, changed\n");
      String diff = repo.diff();
      outputs.add(diff);
      assertThat(diff).contains("-line two").contains("+line 2, changed");
      assertThat(repo.status()).contains("## fix/readme").contains(" M src/app.txt");

      String hash = repo.commit("fix: the second line", AUTHOR);
      List<GitCommit> log = repo.log(5);
      assertThat(log).hasSize(2);
      assertThat(log.get(0).hash()).isEqualTo(hash);
      assertThat(log.get(0).subject()).isEqualTo("fix: the second line");
      assertThat(log.get(0).author()).isEqualTo("Agent Bot");
      assertThat(repo.diff("main")).contains("+line 2, changed");

      // The patch applies to a clone of the same repository on the host.
      Path patch = repo.exportPatch(tmp.resolve("out"));
      String text = Files.readString(patch);
      assertThat(text).contains("Subject: [PATCH] fix: the second line").doesNotContain(TOKEN);
      Path hostClone = tmp.resolve("host-clone");
      host(tmp, "clone", "-q", tmp.resolve("repos/app.git").toString(), hostClone.toString());
      host(hostClone, "apply", "--check", patch.toString());
      Path bundle = repo.exportBundle(tmp.resolve("out"));
      assertThat(host(tmp, "bundle", "list-heads", bundle.toString())).contains("fix/readme");

      repo.push("origin", "fix/readme");
      assertThat(host(tmp.resolve("repos/app.git"), "rev-parse", "refs/heads/fix/readme").strip())
          .isEqualTo(hash);
      repo.fetch();
      assertNoTokenInside(sb);

      // The branch's change, as a diff, applied to main's working tree; a second time it fails.
      String change = repo.diff("main");
      outputs.add(change);
      repo.checkout("main");
      assertThat(repo.branch()).isEqualTo("main");
      assertThat(repo.diff()).isEmpty();
      repo.apply(change);
      assertThat(repo.diff()).contains("+line 2, changed");
      assertThatThrownBy(() -> repo.apply(change))
          .isInstanceOfSatisfying(
              GitException.class, e -> assertThat(e.reason()).isEqualTo(GitException.Reason.FAILED))
          .hasMessageContaining("apply");

      // The proxy added the credential, audited by name ("git": the secret has none), never shown.
      assertThat(events(AuditEvent.NETWORK_CREDENTIAL_USED))
          .filteredOn(e -> sb.id().equals(e.sandboxId()))
          .extracting(e -> e.data().get("secret") + " " + e.data().get("host"))
          .isNotEmpty()
          .containsOnly("git git.test");
      assertThat(events(AuditEvent.GIT_OPERATION))
          .filteredOn(e -> sb.id().equals(e.sandboxId()))
          .extracting(e -> e.data().get("operation") + " " + e.data().get("ok"))
          .contains("clone true", "push true", "fetch true");
      assertThat(audit.query(AuditQuery.all()).toString()).doesNotContain(TOKEN);
    }
  }

  @Test
  void aWrongTokenFailsClearlyAndPromptlyAndNoTokenIsRefusedToo() {
    try (Sandbox sb = sandbox()) {
      long t0 = System.nanoTime();
      assertThatThrownBy(
              () -> sb.git().clone(url, "wrong", GitAuth.token(Secret.of("not-the-token-123"))))
          .isInstanceOfSatisfying(
              GitException.class,
              e -> assertThat(e.reason()).isEqualTo(GitException.Reason.AUTH_FAILED))
          .hasMessageContaining("credentials");
      assertThatThrownBy(() -> sb.git().clone(url, "none"))
          .isInstanceOfSatisfying(
              GitException.class,
              e -> assertThat(e.reason()).isEqualTo(GitException.Reason.AUTH_FAILED));
      // No prompt waited for a terminal: both came back well within the operation's timeout.
      assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofMinutes(2));
    }
  }

  @Test
  void aRemoteOffTheAllowlistIsRefusedAndAudited() {
    try (Sandbox sb = sandbox()) {
      String off = "http://other.test:" + server.port() + "/app.git";
      assertThatThrownBy(() -> sb.git().clone(off, "off", token()))
          .isInstanceOfSatisfying(
              GitException.class,
              e -> assertThat(e.reason()).isEqualTo(GitException.Reason.HOST_REFUSED))
          .hasMessageContaining("allow");
      assertThat(events(AuditEvent.NETWORK_ATTEMPT))
          .filteredOn(e -> sb.id().equals(e.sandboxId()))
          .anySatisfy(
              e -> {
                assertThat(e.data().get("host")).isEqualTo("other.test");
                assertThat(e.decision()).isEqualTo("deny");
              });
      // The credential went nowhere: the proxy refused before any request was forwarded.
      assertThat(events(AuditEvent.NETWORK_CREDENTIAL_USED))
          .filteredOn(e -> sb.id().equals(e.sandboxId()))
          .isEmpty();
    }
  }

  @Test
  void sandboxCodeWatchingEveryProcessDuringTheOperationsFindsNoTokenNonceOrSocket()
      throws Exception {
    try (Sandbox sb = sandbox()) {
      // Sandbox code watches every process's environment and command line, and tries the old
      // askpass socket, while the host clones, fetches and pushes (bounded: 90 s, or until the
      // file "stop" appears).
      Execution watcher =
          sb.start(
              List.of(
                  "python3",
                  "-c",
                  "import glob, os, socket, time\n"
                      + "end = time.time() + 90\n"
                      + "seen = set()\n"
                      + "sock = 0\n"
                      + "while time.time() < end and not os.path.exists('stop'):\n"
                      + "    for f in glob.glob('/proc/[0-9]*/environ') + "
                      + "glob.glob('/proc/[0-9]*/cmdline'):\n"
                      + "        try:\n"
                      + "            seen.update(open(f, 'rb').read().split(b'\\0'))\n"
                      + "        except OSError:\n"
                      + "            pass\n"
                      + "    try:\n"
                      + "        s = socket.socket(socket.AF_UNIX)\n"
                      + "        s.connect('/tmp/.agentnest/askpass.sock')\n"
                      + "        sock += 1\n"
                      + "        s.close()\n"
                      + "    except OSError:\n"
                      + "        pass\n"
                      + "    time.sleep(0.002)\n"
                      + "open('seen', 'wb').write(b'\\n'.join(sorted(seen)))\n"
                      + "print('socket', sock, 'values', len(seen))\n"),
              ExecOptions.builder().timeout(Duration.ofSeconds(120)).build());
      Thread.sleep(300);
      GitWorkspace repo = sb.git().clone(url, "app", token());
      repo.fetch();
      repo.push("origin", "main");
      sb.files().write("stop", "");
      ExecResult watched = watcher.result().get(120, TimeUnit.SECONDS);
      outputs.add(watched.stdout() + watched.stderr());
      assertThat(watched.stdout()).contains("socket 0 values");
      String seen = sb.files().readString("seen");
      // The watcher did see the host's git at work, and nothing to take from it.
      assertThat(seen).contains("git.test");
      String basic =
          Base64.getEncoder()
              .encodeToString((GitAuth.TOKEN_USER + ":" + TOKEN).getBytes(StandardCharsets.UTF_8));
      assertThat(seen)
          .doesNotContain(TOKEN)
          .doesNotContain(basic)
          .doesNotContain("AGENTNEST_ASKPASS_NONCE");
      assertNoTokenInside(sb);
    }
  }

  @Test
  void anHttpsRemoteGetsTheTokenFromTheProxyBehindTheOperationsOwnCa() throws Exception {
    // A real TLS git server on loopback, with a CA of its own that the proxy (the host) trusts
    // upstream; git in the sandbox trusts only the operation's CA, for the operation's run.
    InterceptionCa originCa =
        InterceptionCa.create("test-git-origin", List.of("git.test"), Duration.ofDays(1));
    UpstreamTrust.replaceForTests(LoopbackHttpsOrigin.trusting(originCa.certificate()));
    try (GitHttpServer tls =
            new GitHttpServer(tmp.resolve("repos"), TOKEN, originCa.serverContext("git.test"));
        Sandbox sb =
            Sandbox.create(
                SandboxConfig.builder()
                    .image(EgressToolsIT.IMAGE)
                    .runtime(runtime)
                    .network(
                        NetworkPolicy.builder()
                            .allow("git.test:" + tls.port())
                            .allowAddress("127.0.0.1")
                            .build())
                    .auditLog(audit)
                    .build())) {
      String https = "https://git.test:" + tls.port() + "/app.git";
      GitWorkspace repo = sb.git().clone(https, "app", token());
      assertThat(sb.files().readString("app/README.md")).contains("A test repository.");
      assertThat(tls.authorizations).isNotEmpty();
      repo.checkoutNewBranch("over-tls");
      commitOver(sb, repo);
      repo.push("origin", "over-tls");
      repo.fetch();
      assertNoTokenInside(sb);
      // After the operation the sandbox's own TLS client gets no credential: the tunnel is the
      // real server's again, whose CA the sandbox does not trust.
      String after = sh(sb, "git ls-remote " + https + " 2>&1; echo exit=$?");
      assertThat(after).doesNotContain("exit=0").doesNotContain(TOKEN);
    } finally {
      UpstreamTrust.replaceForTests(null);
    }
  }

  private static void commitOver(Sandbox sb, GitWorkspace repo) {
    sb.files().write("app/src/app.txt", "line one\nover tls\n");
    repo.commit("over tls", AUTHOR);
  }

  @Test
  void aForkWorksOnItsOwnBranchWithoutTouchingTheParent() throws Exception {
    try (Sandbox sb = sandbox()) {
      GitWorkspace parent = sb.git().clone(url, "app", token());
      try (Sandbox fork = sb.fork()) {
        GitWorkspace alt = fork.git().open("app", url, token());
        alt.checkoutNewBranch("try/alt");
        fork.files().write("app/README.md", "# app\n\nAn alternative.\n");
        String hash = alt.commit("docs: the alternative", AUTHOR);
        alt.push("origin", "try/alt");
        assertThat(host(tmp.resolve("repos/app.git"), "rev-parse", "refs/heads/try/alt").strip())
            .isEqualTo(hash);
        assertNoTokenInside(fork);
      }
      assertThat(parent.branch()).isEqualTo("main");
      assertThat(parent.diff()).isEmpty();
      assertThat(sb.files().readString("app/README.md")).contains("A test repository.");
      assertThatThrownBy(() -> sb.git().open("app").push("origin", "main"))
          .isInstanceOfSatisfying(
              GitException.class,
              e -> assertThat(e.reason()).isEqualTo(GitException.Reason.BAD_REF))
          .hasMessageContaining("open(dir, url, auth)");
    }
  }

  @Test
  void badNamesAreRefusedOnTheHost() {
    try (Sandbox sb = sandbox()) {
      GitWorkspace repo = sb.git().clone(url, "app", token());
      for (String bad : List.of("-x", "a..b", "a b", "a~1", "x.lock", "/a", ".hidden", "a@{1}")) {
        assertThatThrownBy(() -> repo.checkoutNewBranch(bad))
            .isInstanceOfSatisfying(
                GitException.class,
                e -> assertThat(e.reason()).isEqualTo(GitException.Reason.BAD_REF));
      }
      assertThatThrownBy(() -> sb.git().clone("ext::sh -c id", "x"))
          .isInstanceOfSatisfying(
              GitException.class,
              e -> assertThat(e.reason()).isEqualTo(GitException.Reason.BAD_URL));
      assertThatThrownBy(() -> sb.git().clone("http://u:" + TOKEN + "@git.test/app.git", "x"))
          .isInstanceOfSatisfying(
              GitException.class,
              e -> assertThat(e.reason()).isEqualTo(GitException.Reason.BAD_URL))
          .hasMessageContaining("GitAuth");
      assertThatThrownBy(() -> sb.git().clone(url, "../out"))
          .isInstanceOfSatisfying(
              GitException.class,
              e -> assertThat(e.reason()).isEqualTo(GitException.Reason.BAD_PATH));
    }
  }
}
