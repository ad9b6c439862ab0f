package io.agentnest.internal.git;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Git;
import io.agentnest.GitAuth;
import io.agentnest.GitException;
import io.agentnest.GitException.Reason;
import io.agentnest.GitWorkspace;
import io.agentnest.Secret;
import io.agentnest.audit.AuditEvent;
import io.agentnest.internal.DefaultSandbox;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.support.Bounded;
import io.agentnest.internal.support.Json;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * {@link Git} of one sandbox: runs git there as argument arrays with a hardened configuration, and
 * for operations that reach a remote with credentials, opens an askpass grant for exactly that run.
 */
public final class SandboxGit implements Git {
  /** Output of a plain git command read back (status, log, ...). */
  static final long SMALL_OUTPUT = 1L << 20;

  /** Output of a diff read back. */
  static final long LARGE_OUTPUT = 32L << 20;

  static final Duration LOCAL = Duration.ofMinutes(2);
  static final Duration REMOTE = Duration.ofMinutes(10);

  // On every run: no helper, hook or monitor the repository's (sandbox-written) configuration
  // names runs, and only http(s) transports.
  private static final List<String> HARDENING =
      List.of(
          "-c", "credential.helper=",
          "-c", "core.hooksPath=/dev/null",
          "-c", "core.fsmonitor=false",
          "-c", "credential.useHttpPath=false",
          "-c", "protocol.allow=never",
          "-c", "protocol.http.allow=always",
          "-c", "protocol.https.allow=always");

  private final DefaultSandbox sb;
  private final AskpassGrants grants;
  private volatile @Nullable Boolean hasGit;

  public SandboxGit(DefaultSandbox sb) {
    this.sb = sb;
    this.grants = new AskpassGrants(sb.channel(), sb::audit, sb.askBudget(), sb.askOverBudget());
  }

  @Override
  public GitWorkspace clone(String url, String dir, GitAuth auth) {
    URI remote = GitNames.url(url);
    String d = GitNames.dir(dir);
    requireGit();
    Run r = remote("clone", remote, auth, List.of("clone", "--", remote.toString(), d), null);
    r.check("clone " + remote.getHost() + " into " + d);
    return new DefaultGitWorkspace(this, d, remote, auth);
  }

  @Override
  public GitWorkspace open(String dir) {
    String d = GitNames.dir(dir);
    requireGit();
    DefaultGitWorkspace w = new DefaultGitWorkspace(this, d, null, GitAuth.none());
    w.requireRepository();
    return w;
  }

  @Override
  public GitWorkspace open(String dir, String url, GitAuth auth) {
    URI remote = GitNames.url(url);
    String d = GitNames.dir(dir);
    requireGit();
    DefaultGitWorkspace w = new DefaultGitWorkspace(this, d, remote, auth);
    w.requireRepository();
    return w;
  }

  private void requireGit() {
    Boolean known = hasGit;
    if (known == null) {
      ExecResult r = sb.exec(List.of("git", "--version"), opts(LOCAL, SMALL_OUTPUT, Map.of()));
      known = r.exitCode() == 0;
      hasGit = known;
    }
    if (!known) {
      throw new GitException(
          Reason.NO_GIT,
          "the sandbox's image ("
              + sb.config().image()
              + ") has no git: use the data or browser preset (SandboxConfig.preset(\"data\"),"
              + " after 'agentnest image build --preset data') or an image with git");
    }
  }

  /** A git run's outcome; {@link #check} turns a failure into the right {@link GitException}. */
  record Run(ExecResult result, @Nullable URI remote, SandboxGit git) {
    boolean ok() {
      return result.exitCode() == 0 && result.limit() == null;
    }

    String stdout() {
      return result.stdout();
    }

    Run check(String doing) {
      if (result.truncated()) {
        throw new GitException(
            Reason.TOO_LARGE,
            "git's output for '" + doing + "' is larger than AgentNest reads back");
      }
      if (ok()) {
        return this;
      }
      // Git's words are the sandbox's (a remote's message, a file name): bounded and escaped.
      String err =
          printable(Bounded.text((result.stderr() + "\n" + result.stdout()).strip(), 2000));
      Reason reason = git.classify(err, remote);
      String hint =
          switch (reason) {
            case AUTH_FAILED -> "; check the credentials given as GitAuth (and their scopes)";
            case HOST_REFUSED ->
                "; allow the host in the sandbox's network policy (NetworkPolicy.allow)";
            default -> "";
          };
      if (result.limit() != null) {
        err = "stopped at the " + result.limit() + " limit; " + err;
      }
      throw new GitException(reason, "git " + doing + " failed: " + err + hint);
    }
  }

  Reason classify(String err, @Nullable URI remote) {
    String e = err.toLowerCase(Locale.ROOT);
    if (remote != null) {
      int port =
          remote.getPort() > 0 ? remote.getPort() : remote.getScheme().equals("http") ? 80 : 443;
      if (sb.config().network().isNone()
          || (sb.config().network().match(remote.getHost(), port).isEmpty()
              && (e.contains("403") || e.contains("proxy") || e.contains("could not resolve")))) {
        return Reason.HOST_REFUSED;
      }
    }
    if (e.contains("authentication failed")
        || e.contains("could not read username")
        || e.contains("could not read password")
        || e.contains("terminal prompts disabled")
        || e.contains("returned error: 401")
        || e.contains("invalid credentials")) {
      return Reason.AUTH_FAILED;
    }
    return Reason.FAILED;
  }

  /** A local git command in {@code dir} (no network, no credentials). */
  Run local(String dir, List<String> args, long maxOutput, Map<String, String> env) {
    List<String> argv = new ArrayList<>();
    argv.add("git");
    argv.addAll(HARDENING);
    argv.addAll(args);
    Map<String, String> e = new LinkedHashMap<>(baseEnv());
    e.put("GIT_ASKPASS", "");
    e.putAll(env);
    return new Run(sb.exec(argv, opts(LOCAL, maxOutput, e, dir)), null, this);
  }

  /** A local command run through {@code sh} with its arguments passed apart (an output file). */
  Run localToFile(String dir, List<String> args, String outFile) {
    List<String> argv =
        new ArrayList<>(List.of("sh", "-c", "f=$1; shift; exec git \"$@\" >\"$f\"", "sh", outFile));
    argv.addAll(HARDENING);
    argv.addAll(args);
    Map<String, String> e = new LinkedHashMap<>(baseEnv());
    e.put("GIT_ASKPASS", "");
    return new Run(sb.exec(argv, opts(LOCAL, SMALL_OUTPUT, e, dir)), null, this);
  }

  /**
   * A git command that talks to {@code remote}: when {@code auth} has credentials, the agent writes
   * a fresh credential helper and a grant is open for just this run.
   */
  Run remote(String op, URI remote, GitAuth auth, List<String> args, @Nullable String dir) {
    Map<String, String> env = new LinkedHashMap<>(baseEnv());
    List<String> argv = new ArrayList<>();
    argv.add("git");
    argv.addAll(HARDENING);
    AskpassGrants.Grant grant = null;
    Optional<Secret> secret = auth.secret();
    try {
      // Never a prompt: no askpass, no terminal. With credentials, the one helper is ours.
      env.put("GIT_ASKPASS", "");
      argv.add("-c");
      argv.add("core.askPass=");
      if (secret.isPresent()) {
        String helper = credentialHelper();
        grant = grants.open(remote, auth.user().orElse(GitAuth.TOKEN_USER), secret.get());
        env.put("AGENTNEST_ASKPASS_NONCE", grant.nonce());
        argv.add("-c");
        argv.add("credential.helper=" + helper);
      }
      argv.addAll(args);
      ExecResult r = sb.exec(argv, opts(REMOTE, SMALL_OUTPUT, env, dir));
      sb.audit(
          AuditEvent.GIT_OPERATION,
          Map.of(
              "operation",
              op,
              "host",
              remote.getHost(),
              "ok",
              r.exitCode() == 0,
              "exit",
              r.exitCode()));
      return new Run(r, remote, this);
    } finally {
      if (grant != null) {
        grant.close();
      }
    }
  }

  /** The agent's fresh helper for one operation, as a credential.helper value (a command). */
  private String credentialHelper() {
    Frame f =
        sb.channel()
            .request(
                Json.object().put(Ops.OP, Ops.OP_ASKPASS_SETUP),
                new byte[0],
                Duration.ofSeconds(30));
    if (!f.ev().equals(Ops.EV_RESULT)) {
      throw sb.agentError(f.header());
    }
    String path = f.header().path("path").asText("");
    String python = f.header().path("python").asText("");
    // Both go into a command line git hands to sh: only plain path characters pass.
    if (!path.matches("/tmp/\\.agentnest/askpass-[a-z0-9]{1,64}/git-credential")
        || !python.matches("/[A-Za-z0-9/._-]{1,255}")) {
      throw new GitException(
          Reason.FAILED, "the sandbox's agent named an unexpected credential helper; not used");
    }
    return "!" + python + " " + path;
  }

  private static Map<String, String> baseEnv() {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("GIT_TERMINAL_PROMPT", "0");
    env.put("GIT_CONFIG_NOSYSTEM", "1");
    env.put("GIT_CONFIG_GLOBAL", "/dev/null");
    env.put("SSH_ASKPASS", "");
    env.put("GIT_PAGER", "cat");
    env.put("LC_ALL", "C");
    return env;
  }

  /**
   * Text from the sandbox made safe to show a person: control characters other than newline and tab
   * (terminal escapes above all) written as {@code \xNN}.
   */
  static String printable(String s) {
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || (c >= 0x80 && c < 0xa0)) {
        b.append(String.format("\\x%02x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }

  private static ExecOptions opts(Duration timeout, long maxOutput, Map<String, String> env) {
    return opts(timeout, maxOutput, env, null);
  }

  private static ExecOptions opts(
      Duration timeout, long maxOutput, Map<String, String> env, @Nullable String workdir) {
    ExecOptions.Builder b =
        ExecOptions.builder().timeout(timeout).maxOutputBytes(maxOutput).env(env);
    if (workdir != null) {
      b.workdir(workdir);
    }
    return b.build();
  }

  DefaultSandbox sandbox() {
    return sb;
  }
}
