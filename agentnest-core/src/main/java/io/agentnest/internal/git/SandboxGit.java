package io.agentnest.internal.git;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Git;
import io.agentnest.GitAuth;
import io.agentnest.GitException;
import io.agentnest.GitException.Reason;
import io.agentnest.GitWorkspace;
import io.agentnest.Header;
import io.agentnest.Sandbox;
import io.agentnest.Secret;
import io.agentnest.audit.AuditEvent;
import io.agentnest.internal.context.SandboxContext;
import io.agentnest.internal.egress.OperationCredentials;
import io.agentnest.internal.lifecycle.SecurityPolicy;
import io.agentnest.internal.support.Bounded;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * {@link Git} of one sandbox: runs git there as argument arrays with a configuration under which
 * git runs no program the repository names, and for operations that reach a remote with
 * credentials, has the sandbox's egress proxy add them for exactly that remote and that run.
 */
public final class SandboxGit implements Git {
  /** Output of a plain git command read back (status, log, ...). */
  static final long SMALL_OUTPUT = 1L << 20;

  /** Output of a diff read back. */
  static final long LARGE_OUTPUT = 32L << 20;

  static final Duration LOCAL = Duration.ofMinutes(2);
  static final Duration REMOTE = Duration.ofMinutes(10);

  // On every run, whatever the repository's (sandbox-written) configuration says, git runs no
  // program it names. Each line closes one way git has to run a configured command: credential
  // helpers and askpass, hooks, the file-system monitor, the alternates' refs command, signing
  // (commit, tag, push, and verifying on log), ssh, the pager, automatic gc/maintenance (which
  // start more git processes), submodule recursion (a submodule's own configuration), and
  // transports other than http(s) (ext::, file, ssh, reached through url.*.insteadOf; also
  // GIT_ALLOW_PROTOCOL in baseEnv). Filters, whose names the repository chooses, are emptied per
  // run (repositoryOverrides); diff drivers by the diff commands' --no-textconv --no-ext-diff.
  static final List<String> HARDENING =
      List.of(
          "-c", "credential.helper=",
          "-c", "credential.useHttpPath=false",
          "-c", "core.askPass=",
          "-c", "core.hooksPath=/dev/null",
          "-c", "core.fsmonitor=false",
          // Run through sh with the alternate's path as "$@": the shell's builtin, no program.
          "-c", "core.alternateRefsCommand=true",
          "-c", "core.attributesFile=/dev/null",
          "-c", "core.sshCommand=false",
          "-c", "core.pager=cat",
          "-c", "gpg.program=false",
          "-c", "gpg.ssh.program=false",
          "-c", "gpg.x509.program=false",
          "-c", "commit.gpgSign=false",
          "-c", "tag.gpgSign=false",
          "-c", "push.gpgSign=false",
          "-c", "log.showSignature=false",
          "-c", "gc.auto=0",
          "-c", "maintenance.auto=false",
          "-c", "submodule.recurse=false",
          "-c", "fetch.recurseSubmodules=false",
          "-c", "push.recurseSubmodules=no",
          "-c", "diff.ignoreSubmodules=all",
          "-c", "http.sslVerify=true",
          "-c", "http.saveCookies=false",
          "-c", "http.cookieFile=",
          "-c", "protocol.allow=never",
          "-c", "protocol.http.allow=always",
          "-c", "protocol.https.allow=always");

  /** Configuration names whose values are programs git runs for files (filter.NAME.KEY). */
  private static final Pattern FILTER_KEY =
      Pattern.compile("filter\\.(.+)\\.(?:clean|smudge|process|required)");

  /** A rewrite of remote URLs (url.BASE.insteadOf, url.BASE.pushInsteadOf). */
  private static final Pattern URL_REWRITE =
      Pattern.compile("url\\..+\\.(?:insteadof|pushinsteadof)");

  /** A remote operation's credentials outlive it by this much at most in the proxy's CA. */
  private static final Duration GRANT_SLACK = Duration.ofMinutes(1);

  private static final SecureRandom RANDOM = new SecureRandom();

  private final SandboxContext sb;
  private volatile @Nullable Boolean hasGit;

  public SandboxGit(SandboxContext sb) {
    this.sb = sb;
  }

  @Override
  public GitWorkspace clone(String url, String dir, GitAuth auth) {
    URI remote = GitNames.url(url);
    String d = GitNames.dir(dir);
    requireGit();
    Run r =
        remote(
            "clone",
            remote,
            auth,
            List.of("clone", "--no-recurse-submodules", "--", remote.toString(), d),
            null);
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
      ExecResult r =
          sb.sandbox().exec(List.of("git", "--version"), opts(LOCAL, SMALL_OUTPUT, Map.of()));
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
    argv.addAll(repositoryOverrides(dir, false));
    argv.addAll(args);
    Map<String, String> e = new LinkedHashMap<>(baseEnv());
    e.putAll(env);
    return new Run(sb.sandbox().exec(argv, opts(LOCAL, maxOutput, e, dir)), null, this);
  }

  /** A local command run through {@code sh} with its arguments passed apart (an output file). */
  Run localToFile(String dir, List<String> args, String outFile) {
    List<String> argv =
        new ArrayList<>(List.of("sh", "-c", "f=$1; shift; exec git \"$@\" >\"$f\"", "sh", outFile));
    argv.addAll(HARDENING);
    argv.addAll(repositoryOverrides(dir, false));
    argv.addAll(args);
    return new Run(sb.sandbox().exec(argv, opts(LOCAL, SMALL_OUTPUT, baseEnv(), dir)), null, this);
  }

  /**
   * {@code -c} pairs that empty every filter the configuration git reads in {@code dir} names (its
   * clean, smudge and process commands; none required): a filter's name is the repository's choice,
   * so no fixed list can name it. Read with the same hardening, which runs nothing.
   */
  List<String> repositoryOverrides(@Nullable String dir, boolean remote) {
    List<String> argv = new ArrayList<>(List.of("git"));
    argv.addAll(HARDENING);
    argv.addAll(List.of("config", "--name-only", "--list"));
    ExecResult r = sb.sandbox().exec(argv, opts(LOCAL, SMALL_OUTPUT, baseEnv(), dir));
    if (r.truncated()) {
      throw new GitException(
          Reason.TOO_LARGE,
          "the git configuration in "
              + (dir == null ? "the workspace" : dir)
              + " has more names than AgentNest reads back ("
              + SMALL_OUTPUT
              + " bytes); remove what it does not need");
    }
    if (r.exitCode() != 0) {
      // Not a repository (a clone's parent), or a configuration git cannot parse: the command
      // that follows reads the same configuration and fails with git's own words.
      return List.of();
    }
    Set<String> names = new LinkedHashSet<>();
    for (String line : r.stdout().split("\n", -1)) {
      Matcher m = FILTER_KEY.matcher(line);
      if (m.matches()) {
        names.add(m.group(1));
      }
      if (remote && URL_REWRITE.matcher(line).matches()) {
        // The host's fetch and push go to the URL it knows: a rewrite (to another repository
        // on the same host, which the credential reaches too, or another transport) is refused.
        throw new GitException(
            Reason.BAD_URL,
            "the git configuration in "
                + (dir == null ? "the workspace" : dir)
                + " rewrites remote URLs ("
                + printable(Bounded.text(line, 200))
                + "); AgentNest fetches and pushes only the URL it was given: remove that [url]"
                + " section (git config --remove-section)");
      }
    }
    List<String> out = new ArrayList<>();
    for (String name : names) {
      if (name.indexOf('=') >= 0) {
        // "-c filter.a=b.clean=" would be read as the key "filter.a": no override could be given.
        throw new GitException(
            Reason.FAILED,
            "the git configuration in "
                + (dir == null ? "the workspace" : dir)
                + " names a filter with '=' in its name ('"
                + printable(Bounded.text(name, 100))
                + "'), which AgentNest cannot switch off: remove that [filter] section");
      }
      for (String key : List.of("clean=", "smudge=", "process=", "required=false")) {
        out.add("-c");
        out.add("filter." + name + "." + key);
      }
    }
    return out;
  }

  /**
   * A git command that talks to {@code remote}. With credentials, the sandbox's egress proxy adds
   * them (an {@code Authorization} header) to the requests to exactly that remote's scheme, host
   * and port while this command runs: no process in the sandbox, git included, ever holds the
   * secret or anything that could ask for it.
   */
  Run remote(String op, URI remote, GitAuth auth, List<String> args, @Nullable String dir) {
    Map<String, String> env = new LinkedHashMap<>(baseEnv());
    List<String> argv = new ArrayList<>();
    argv.add("git");
    argv.addAll(HARDENING);
    argv.addAll(repositoryOverrides(dir, true));
    // The sandbox's own proxy endpoint, whatever http.proxy the repository names.
    argv.add("-c");
    argv.add("http.proxy=http://127.0.0.1:" + SecurityPolicy.EGRESS_PORT);
    Optional<Secret> secret = auth.secret();
    Optional<OperationCredentials> creds = sb.operationCredentials();
    if (secret.isEmpty() || creds.isEmpty()) {
      // Without network the proxy is not there; classify() says HOST_REFUSED.
      argv.addAll(args);
      return run(op, remote, argv, env, dir);
    }
    String user = auth.user().orElse(GitAuth.TOKEN_USER);
    String basic =
        Base64.getEncoder()
            .encodeToString((user + ":" + secret.get().reveal()).getBytes(StandardCharsets.UTF_8));
    Header header =
        Header.of("Authorization", "Basic ", Secret.named(secretName(secret.get()), basic), "");
    boolean https = remote.getScheme().equalsIgnoreCase("https");
    int port = remote.getPort() > 0 ? remote.getPort() : https ? 443 : 80;
    // One remote operation with credentials at a time per sandbox: each has its remote's grant to
    // itself.
    synchronized (creds.get()) {
      OperationCredentials.Grant grant;
      try {
        grant =
            creds
                .get()
                .open(remote.getScheme(), remote.getHost(), port, header, REMOTE.plus(GRANT_SLACK));
      } catch (IllegalArgumentException | IllegalStateException e) {
        throw new GitException(
            Reason.BAD_URL, "cannot give credentials to " + remote + ": " + e.getMessage());
      }
      try (grant) {
        if (https) {
          // git verifies the proxy's certificate for this host against the operation's CA alone.
          String caFile = writeCa(grant.caPem());
          env.put("GIT_SSL_CAINFO", caFile);
          argv.add("-c");
          argv.add("http.sslCAInfo=" + caFile);
        }
        argv.addAll(args);
        return run(op, remote, argv, env, dir);
      }
    }
  }

  private Run run(
      String op, URI remote, List<String> argv, Map<String, String> env, @Nullable String dir) {
    ExecResult r = sb.sandbox().exec(argv, opts(REMOTE, SMALL_OUTPUT, env, dir));
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
  }

  /** The audit name of the credential: the secret's own, else "git". */
  private static String secretName(Secret s) {
    return s.name().orElse("git");
  }

  /** Writes the operation CA's certificate (public) to a fresh file in the sandbox; its path. */
  private String writeCa(String pem) {
    byte[] b = new byte[12];
    RANDOM.nextBytes(b);
    String path = "/tmp/.agentnest/git-ca-" + HexFormat.of().formatHex(b) + ".pem";
    ExecResult r =
        sb.sandbox()
            .exec(
                List.of(
                    "sh",
                    "-c",
                    "umask 022 && mkdir -p /tmp/.agentnest && printf '%s' \"$2\" >\"$1\"",
                    "sh",
                    path,
                    pem),
                opts(LOCAL, SMALL_OUTPUT, baseEnv()));
    if (r.exitCode() != 0) {
      throw new GitException(
          Reason.FAILED,
          "cannot write the git operation's CA certificate in the sandbox: "
              + printable(Bounded.text(r.stderr(), 500)));
    }
    return path;
  }

  /**
   * The environment of every git run: no system or user configuration, no prompt, no pager or
   * editor, only http(s) transports (overriding any protocol.NAME.allow the repository sets), no
   * replace refs, a fixed PATH of the read-only image (no program the workspace holds is found by
   * name) and a HOME away from the workspace (nothing there is read as the user's).
   */
  static Map<String, String> baseEnv() {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("GIT_TERMINAL_PROMPT", "0");
    env.put("GIT_CONFIG_NOSYSTEM", "1");
    env.put("GIT_CONFIG_GLOBAL", "/dev/null");
    env.put("GIT_ASKPASS", "");
    env.put("SSH_ASKPASS", "");
    env.put("GIT_SSH_COMMAND", "false");
    env.put("GIT_PAGER", "cat");
    env.put("PAGER", "cat");
    env.put("GIT_EDITOR", ":");
    env.put("GIT_ALLOW_PROTOCOL", "http:https");
    env.put("GIT_PROTOCOL_FROM_USER", "0");
    env.put("GIT_NO_REPLACE_OBJECTS", "1");
    env.put("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    env.put("HOME", "/nonexistent");
    env.put("XDG_CONFIG_HOME", "/nonexistent");
    env.put("PYTHONNOUSERSITE", "1");
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

  Sandbox sandbox() {
    return sb.sandbox();
  }
}
