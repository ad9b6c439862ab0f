package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.GitAuth;
import io.agentnest.GitAuthor;
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
import io.agentnest.internal.egress.StaticResolver;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sandbox code that ran earlier (and has exited) prepares the repository so that the host's next
 * git operation runs a program of its choosing, one way per test: the user site of Python
 * (usercustomize.py), the alternates' refs command, hooks, the file-system monitor, signing,
 * textconv and external diff drivers, filters, ssh and ext:: transports reached through
 * url.*.insteadOf, credential helpers, pager and editor. The program ({@code /workspace/bin/mark})
 * records that it ran and everything it could see (its environment, every process's environment,
 * the agent's directory). The host then runs its operations (with the token where they reach the
 * remote) and the test finds no record, and the token nowhere in the sandbox: it never entered it.
 * Real engine, real git on both sides, the server of {@link GitWorkspaceIT}.
 */
@ExtendWith(DockerEngineRequired.class)
class GitHostileRepositoryIT {
  static final String TOKEN = "gitrepo5e8b1d4c7a2f9036e1d5b8c4a";
  static final GitAuthor AUTHOR = new GitAuthor("Agent Bot", "bot@agentnest.test");

  /** Records that it ran ($1), with all it could see; a clean or smudge filter passes stdin on. */
  static final String MARK =
      "#!/bin/sh\n"
          + "f=/workspace/marks/${1:-unknown}.$$\n"
          + "{ echo \"ran $1\"; env; for e in /proc/[0-9]*/environ; do tr '\\0' '\\n' <\"$e\";"
          + " done; ls -la /tmp/.agentnest; } >\"$f\" 2>&1\n"
          + "case \"$1\" in clean|smudge|included) cat ;; esac\n";

  static final List<String> HOOKS =
      List.of(
          "pre-commit",
          "prepare-commit-msg",
          "commit-msg",
          "post-commit",
          "post-checkout",
          "pre-push",
          "reference-transaction",
          "post-index-change",
          "pre-auto-gc",
          "post-merge",
          "post-rewrite",
          "pre-applypatch",
          "post-applypatch",
          "applypatch-msg",
          "fsmonitor-watchman");

  @TempDir static Path tmp;
  static GitHttpServer server;
  static AuditLog audit;
  static String url;
  static String remoteBase;

  /** The OCI runtime under test; {@link GvisorGitHostileRepositoryIT} runs them on gVisor. */
  static String runtime = "runc";

  @BeforeAll
  static void start() throws Exception {
    GitHttpServer.requireHostGit();
    EgressToolsIT.ensureImage();
    Path repos = Files.createDirectories(tmp.resolve("repos"));
    GitHttpServer.seed(repos, "app.git", tmp);
    server = new GitHttpServer(repos, TOKEN);
    remoteBase = "http://git.test:" + server.port() + "/";
    url = remoteBase + "app.git";
    EgressResolvers.replaceForTests(StaticResolver.of("git.test", "127.0.0.1"));
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

  /** Sandbox code: a shell command, its output (the test fails if it did not succeed). */
  static String sh(Sandbox sb, String command) {
    ExecResult r =
        sb.exec(
            command,
            ExecOptions.builder().timeout(Duration.ofSeconds(60)).maxOutputBytes(8L << 20).build());
    String all = r.stdout() + "\n" + r.stderr();
    assertThat(r.exitCode()).as("sandbox command %s: %s", command, all).isZero();
    return all;
  }

  /** A sandbox with the repository cloned (with the token) and the marker program in place. */
  static GitWorkspace cloned(Sandbox sb) {
    GitWorkspace repo = sb.git().clone(url, "app", token());
    sb.files().write("bin/mark", MARK);
    sh(sb, "chmod 755 /workspace/bin/mark && mkdir -p /workspace/marks");
    return repo;
  }

  /** Sandbox code sets {@code key} to {@code value} in the repository's own configuration. */
  static void config(Sandbox sb, String key, String value) {
    sh(sb, "git -C /workspace/app config '" + key + "' '" + value + "'");
  }

  /**
   * The marker as a configured command: run by sh, since the workspace is mounted noexec (git runs
   * these values through the shell, so the trap needs no executable file).
   */
  static String mark(String kind) {
    return "sh /workspace/bin/mark " + kind + " </dev/null";
  }

  /**
   * The trap is real: sandbox code's own git (without the host's hardening) running {@code command}
   * runs the marker. Then the marks are cleared for the host's turn.
   */
  static void trapWorks(Sandbox sb, String command) {
    ExecResult r =
        sb.exec(
            "cd /workspace/app && GIT_TERMINAL_PROMPT=0 " + command + "; ls -A /workspace/marks",
            ExecOptions.builder().timeout(Duration.ofSeconds(60)).build());
    assertThat(r.stdout().strip())
        .as("sandbox code's own '%s' ran the marker: %s %s", command, r.stdout(), r.stderr())
        .isNotEmpty();
    sh(sb, "rm -f /workspace/marks/*");
  }

  /** No configured program ran, and the token (or its basic-auth form) is nowhere inside. */
  static void assertNothingRanAndNoTokenInside(Sandbox sb) {
    String marks =
        sh(sb, "ls -A /workspace/marks; cat /workspace/marks/* 2>/dev/null | head -c 200000");
    assertThat(marks.strip()).as("programs the repository named that ran: %s", marks).isEmpty();
    String basic =
        Base64.getEncoder()
            .encodeToString((GitAuth.TOKEN_USER + ":" + TOKEN).getBytes(StandardCharsets.UTF_8));
    String seen =
        sh(
            sb,
            "{ cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n';"
                + " find /tmp /workspace -xdev -type f -size -4M 2>/dev/null | head -n 20000"
                + " | xargs -r cat 2>/dev/null; } | head -c 60000000");
    assertThat(seen).contains("PATH=").doesNotContain(TOKEN).doesNotContain(basic);
  }

  /** A change, committed by the host: add, commit, and the rev-parse after. */
  static String commitAChange(Sandbox sb, GitWorkspace repo, String text) {
    sb.files().write("app/src/app.txt", "line one\n" + text + "\n");
    return repo.commit("change: " + text, AUTHOR);
  }

  @Test
  void aUsercustomizeInThePythonUserSiteIsNeverLoadedByTheHostsOperations() {
    try (Sandbox sb = sandbox()) {
      GitWorkspace repo = cloned(sb);
      // HOME is the workspace and the user site is on: every later Python of the sandbox user
      // loads this file. It asks the (old) askpass socket and records what it saw.
      sh(
          sb,
          "python3 - <<'EOF'\n"
              + "import os, site\n"
              + "p = site.getusersitepackages()\n"
              + "os.makedirs(p, exist_ok=True)\n"
              + "open(os.path.join(p, 'usercustomize.py'), 'w').write(\n"
              + "    'import subprocess\\n'\n"
              + "    'subprocess.run([\"sh\", \"/workspace/bin/mark\", \"usercustomize\"],"
              + " stdin=subprocess.DEVNULL)\\n')\n"
              + "EOF");
      // The trap works: any Python the sandbox user starts runs it.
      sh(
          sb,
          "python3 -c pass && ls /workspace/marks | grep -q usercustomize && rm -f /workspace/marks/*");

      repo.fetch();
      repo.checkoutNewBranch("user-site");
      commitAChange(sb, repo, "user site");
      repo.push("origin", "user-site");
      sb.git().clone(url, "again", token());
      assertNothingRanAndNoTokenInside(sb);
    }
  }

  @Test
  void anAlternateRefsCommandNeverRunsWhenTheHostFetches() {
    try (Sandbox sb = sandbox()) {
      GitWorkspace repo = cloned(sb);
      sh(
          sb,
          "git init -q --bare /workspace/alt.git"
              + " && echo /workspace/alt.git/objects >/workspace/app/.git/objects/info/alternates"
              + " && git clone -q --bare /workspace/app /workspace/src.git");
      config(sb, "core.alternateRefsCommand", mark("alternates"));
      trapWorks(sb, "git fetch -q /workspace/src.git");
      repo.fetch();
      repo.push("origin", "main");
      assertNothingRanAndNoTokenInside(sb);
    }
  }

  @Test
  void hooksInTheRepositoryOrAHooksPathNeverRun() {
    try (Sandbox sb = sandbox()) {
      GitWorkspace repo = cloned(sb);
      // Hooks are executed directly, and the workspace is noexec: they cannot run from there in
      // this sandbox whatever git does. The overrides hold where a sandbox has an executable
      // location; this is their regression test.
      StringBuilder plant = new StringBuilder("mkdir -p /workspace/hooks");
      for (String hook : HOOKS) {
        for (String dir : List.of("/workspace/hooks/", "/workspace/app/.git/hooks/")) {
          plant
              .append(" && printf '#!/bin/sh\\nexec sh /workspace/bin/mark hook-")
              .append(hook)
              .append(" </dev/null\\n' >")
              .append(dir)
              .append(hook)
              .append(" && chmod 755 ")
              .append(dir)
              .append(hook);
        }
      }
      sh(sb, plant.toString());
      config(sb, "core.hooksPath", "/workspace/hooks");
      repo.checkoutNewBranch("hooks");
      String hash = commitAChange(sb, repo, "hooks");
      repo.push("origin", "hooks");
      repo.fetch();
      assertThat(repo.log(1).get(0).hash()).isEqualTo(hash);
      String change = repo.diff("main");
      repo.checkout("main");
      repo.apply(change);
      assertThat(repo.status()).contains("src/app.txt");
      assertNothingRanAndNoTokenInside(sb);
    }
  }

  @Test
  void aFileSystemMonitorNeverRuns() {
    try (Sandbox sb = sandbox()) {
      GitWorkspace repo = cloned(sb);
      config(sb, "core.fsmonitor", mark("fsmonitor"));
      trapWorks(sb, "git status --porcelain");
      sb.files().write("app/new.txt", "new\n");
      assertThat(repo.status()).contains("new.txt");
      repo.diff();
      commitAChange(sb, repo, "monitor");
      repo.fetch();
      assertNothingRanAndNoTokenInside(sb);
    }
  }

  @Test
  void signingProgramsNeverRunOnCommitLogOrPush() {
    try (Sandbox sb = sandbox()) {
      GitWorkspace repo = cloned(sb);
      // gpg.program itself is executed directly (noexec stops it here); with the ssh format, the
      // default key command is split and run by git: "sh script" runs on commit.
      config(sb, "gpg.program", "/workspace/bin/mark");
      config(sb, "gpg.ssh.program", "/workspace/bin/mark");
      config(sb, "gpg.format", "ssh");
      config(sb, "gpg.ssh.defaultKeyCommand", "sh /workspace/bin/mark ssh-key");
      config(sb, "commit.gpgSign", "true");
      config(sb, "log.showSignature", "true");
      config(sb, "push.gpgSign", "true");
      trapWorks(sb, "git -c user.name=a -c user.email=a@example.com commit -q --allow-empty -m x");
      repo.checkoutNewBranch("signed");
      String hash = commitAChange(sb, repo, "signed");
      assertThat(repo.log(2).get(0).hash()).isEqualTo(hash);
      repo.push("origin", "signed");
      assertNothingRanAndNoTokenInside(sb);
    }
  }

  @Test
  void textconvAndExternalDiffDriversNeverRunOnDiffOrPatch() throws Exception {
    try (Sandbox sb = sandbox()) {
      GitWorkspace repo = cloned(sb);
      sb.files().write("app/.gitattributes", "*.txt diff=evil\n*.md diff=conv\n");
      config(sb, "diff.conv.textconv", mark("textconv"));
      config(sb, "diff.evil.command", mark("diff-command"));
      config(sb, "diff.external", mark("diff-external"));
      sb.files().write("app/src/app.txt", "line one\nline 2\n");
      sb.files().write("app/README.md", "# app\n\nchanged\n");
      trapWorks(sb, "git diff");
      assertThat(repo.diff()).contains("+line 2").contains("+changed");
      repo.checkoutNewBranch("drivers");
      repo.commit("drivers", AUTHOR);
      trapWorks(sb, "git diff main -- README.md");
      assertThat(repo.diff("main")).contains("+line 2");
      assertThat(Files.readString(repo.exportPatch(tmp.resolve("out-drivers"), "main")))
          .contains("+line 2");
      assertNothingRanAndNoTokenInside(sb);
    }
  }

  @Test
  void filtersTheRepositoryNamesNeverRun() {
    try (Sandbox sb = sandbox()) {
      GitWorkspace repo = cloned(sb);
      sb.files().write("app/.gitattributes", "*.txt filter=evil\n*.md filter=evil.proc\n");
      // Clean and smudge pass the content through (the marker cats stdin): no </dev/null here.
      config(sb, "filter.evil.clean", "sh /workspace/bin/mark clean");
      config(sb, "filter.evil.smudge", "sh /workspace/bin/mark smudge");
      config(sb, "filter.evil.required", "true");
      config(sb, "filter.evil.proc.process", "sh /workspace/bin/mark process");
      config(sb, "filter.evil.proc.required", "true");
      // An included file names one more: the host reads the configuration as git does.
      sh(
          sb,
          "printf '[filter \"inc\"]\\n\\tclean = sh /workspace/bin/mark included\\n'"
              + " >/workspace/app/.git/more.conf"
              + " && git -C /workspace/app config include.path more.conf"
              + " && echo 'src/*.txt filter=inc' >>/workspace/app/.gitattributes");
      sb.files().write("app/src/app.txt", "line one\nfiltered\n");
      trapWorks(sb, "git add -A && git reset -q");
      sb.files().write("app/README.md", "# app\n\nfiltered\n");
      assertThat(repo.status()).contains("src/app.txt");
      assertThat(repo.diff()).contains("+filtered");
      repo.checkoutNewBranch("filters");
      repo.commit("filters", AUTHOR);
      repo.checkout("main");
      repo.checkout("filters");
      repo.push("origin", "filters");
      assertNothingRanAndNoTokenInside(sb);
    }
  }

  @Test
  void sshAndExtTransportsReachedThroughInsteadOfAreRefused() {
    try (Sandbox sb = sandbox()) {
      GitWorkspace repo = cloned(sb);
      config(sb, "core.sshCommand", mark("ssh"));
      config(sb, "protocol.ssh.allow", "always");
      config(sb, "url.ssh://git@git.test/.insteadOf", remoteBase);
      trapWorks(sb, "git ls-remote " + url);
      assertThatThrownBy(repo::fetch)
          .isInstanceOf(GitException.class)
          .hasMessageContaining("rewrites remote URLs");
      sh(sb, "git -C /workspace/app config --remove-section url.ssh://git@git.test/");
      config(sb, "protocol.ext.allow", "always");
      config(sb, "url.ext::sh /workspace/bin/mark ext %S .insteadOf", remoteBase);
      config(sb, "url.ext::sh /workspace/bin/mark ext-push %S .pushInsteadOf", remoteBase);
      trapWorks(sb, "git ls-remote " + url);
      assertThatThrownBy(repo::fetch).isInstanceOf(GitException.class);
      assertThatThrownBy(() -> repo.push("origin", "main")).isInstanceOf(GitException.class);
      assertNothingRanAndNoTokenInside(sb);
    }
  }

  @Test
  void aUrlRewriteToAnotherRepositoryOnTheSameHostIsRefusedNotFollowedWithTheToken()
      throws Exception {
    try (Sandbox sb = sandbox()) {
      GitWorkspace repo = cloned(sb);
      // The token reaches every repository on the host: sandbox code must not choose which one
      // the host pushes its branch to.
      GitHttpServer.git(tmp.resolve("repos"), "init", "-q", "--bare", "-b", "main", "victim.git");
      config(sb, "url." + remoteBase + "victim.git.pushInsteadOf", url);
      repo.checkoutNewBranch("planted");
      commitAChange(sb, repo, "planted");
      assertThatThrownBy(() -> repo.push("origin", "planted"))
          .isInstanceOfSatisfying(
              GitException.class,
              e -> assertThat(e.reason()).isEqualTo(GitException.Reason.BAD_URL))
          .hasMessageContaining("rewrites remote URLs")
          .hasMessageContaining("--remove-section");
      assertThat(GitHttpServer.git(tmp.resolve("repos/victim.git"), "branch", "--list"))
          .doesNotContain("planted");
      assertNothingRanAndNoTokenInside(sb);
    }
  }

  @Test
  void credentialHelpersPagersAndEditorsNeverRun() {
    try (Sandbox sb = sandbox()) {
      GitWorkspace repo = cloned(sb);
      config(sb, "credential.helper", "!" + mark("helper"));
      config(sb, "credential." + remoteBase + ".helper", "!" + mark("url-helper"));
      config(sb, "core.askPass", "/workspace/bin/mark");
      config(sb, "core.pager", mark("pager"));
      config(sb, "pager.log", mark("pager-log"));
      config(sb, "core.editor", mark("editor"));
      trapWorks(sb, "printf 'protocol=http\\nhost=git.test\\n\\n' | git credential fill");
      repo.fetch();
      repo.log(3);
      commitAChange(sb, repo, "helpers");
      repo.push("origin", "main");
      // Without credentials the server asks for some: still nothing the repository names runs.
      GitWorkspace anonymous = sb.git().open("app", url, GitAuth.none());
      assertThatThrownBy(anonymous::fetch)
          .isInstanceOfSatisfying(
              GitException.class,
              e -> assertThat(e.reason()).isEqualTo(GitException.Reason.AUTH_FAILED));
      assertNothingRanAndNoTokenInside(sb);
      // The credential went on the wire from the proxy, audited by name, never by value.
      assertThat(audit.query(AuditQuery.builder().type(AuditEvent.NETWORK_CREDENTIAL_USED).build()))
          .filteredOn(e -> sb.id().equals(e.sandboxId()))
          .isNotEmpty()
          .allSatisfy(e -> assertThat(e.data().get("host")).isEqualTo("git.test"));
      assertThat(audit.query(AuditQuery.all()).toString()).doesNotContain(TOKEN);
    }
  }
}
