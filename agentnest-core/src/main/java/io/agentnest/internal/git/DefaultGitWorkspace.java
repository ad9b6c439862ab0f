package io.agentnest.internal.git;

import io.agentnest.AgentNestException;
import io.agentnest.GitAuth;
import io.agentnest.GitAuthor;
import io.agentnest.GitCommit;
import io.agentnest.GitException;
import io.agentnest.GitException.Reason;
import io.agentnest.GitWorkspace;
import io.agentnest.internal.support.Bounded;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.SecureRandom;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/** {@link GitWorkspace} on a repository in a sandbox's workspace. */
final class DefaultGitWorkspace implements GitWorkspace {
  private static final int MAX_MESSAGE = 64 * 1024;
  private static final int MAX_PATCH = 32 << 20;
  private static final SecureRandom RANDOM = new SecureRandom();

  private final SandboxGit git;
  private final String dir;
  private final @Nullable URI origin;
  private final GitAuth auth;

  DefaultGitWorkspace(SandboxGit git, String dir, @Nullable URI origin, GitAuth auth) {
    this.git = git;
    this.dir = dir;
    this.origin = origin;
    this.auth = auth;
  }

  void requireRepository() {
    SandboxGit.Run r = git.local(dir, List.of("rev-parse", "--git-dir"), 4096, Map.of());
    if (!r.ok()) {
      throw new GitException(
          Reason.BAD_PATH,
          "'"
              + dir
              + "' in the workspace is not a git repository: clone one with git().clone(...)");
    }
  }

  @Override
  public String dir() {
    return dir;
  }

  @Override
  public String status() {
    return local(
        List.of("status", "--porcelain=v1", "--branch", "--ignore-submodules=all"),
        SandboxGit.SMALL_OUTPUT,
        "status");
  }

  @Override
  public String diff() {
    return local(
        List.of("diff", "--no-textconv", "--no-ext-diff", "HEAD", "--"),
        SandboxGit.LARGE_OUTPUT,
        "diff");
  }

  @Override
  public String diff(String ref) {
    GitNames.revision(ref);
    return local(
        List.of("diff", "--no-textconv", "--no-ext-diff", "--end-of-options", ref, "--"),
        SandboxGit.LARGE_OUTPUT,
        "diff " + ref);
  }

  @Override
  public List<GitCommit> log(int n) {
    if (n < 1 || n > 1000) {
      throw new GitException(Reason.FAILED, "log(n) takes 1 to 1000 commits, got " + n);
    }
    // Fields and records separated by bytes git never writes in names or subjects it prints.
    String out =
        local(
            List.of(
                "log",
                "--no-show-signature",
                "-n",
                Integer.toString(n),
                "--format=%H%x1f%an%x1f%ae%x1f%at%x1f%s%x1e"),
            SandboxGit.SMALL_OUTPUT,
            "log");
    List<GitCommit> commits = new ArrayList<>();
    for (String rec : out.split("\u001e")) {
      String[] f = rec.strip().split("\u001f", -1);
      if (f.length != 5 || !f[0].matches("[0-9a-f]{40,64}") || !f[3].matches("[0-9]{1,12}")) {
        continue;
      }
      commits.add(
          new GitCommit(
              f[0],
              SandboxGit.printable(Bounded.text(f[1], 256)),
              SandboxGit.printable(Bounded.text(f[2], 256)),
              Instant.ofEpochSecond(Long.parseLong(f[3])),
              SandboxGit.printable(Bounded.text(f[4], 1000))));
      if (commits.size() >= n) {
        break;
      }
    }
    return commits;
  }

  @Override
  public String branch() {
    String b = local(List.of("rev-parse", "--abbrev-ref", "HEAD"), 4096, "rev-parse").strip();
    return SandboxGit.printable(Bounded.text(b, 255));
  }

  @Override
  public void checkoutNewBranch(String name) {
    GitNames.branch(name);
    local(
        List.of("checkout", "--no-recurse-submodules", "-b", name),
        SandboxGit.SMALL_OUTPUT,
        "checkout -b " + name);
  }

  @Override
  public void checkout(String ref) {
    GitNames.revision(ref);
    local(
        List.of("checkout", "--no-recurse-submodules", ref, "--"),
        SandboxGit.SMALL_OUTPUT,
        "checkout " + ref);
  }

  @Override
  public String commit(String message, GitAuthor author) {
    if (message.isBlank() || message.length() > MAX_MESSAGE || message.indexOf('\0') >= 0) {
      throw new GitException(
          Reason.FAILED,
          "a commit message must be 1 to " + MAX_MESSAGE + " characters, without NUL bytes");
    }
    local(List.of("add", "-A"), SandboxGit.SMALL_OUTPUT, "add -A");
    Map<String, String> env =
        Map.of(
            "GIT_AUTHOR_NAME", author.name(),
            "GIT_AUTHOR_EMAIL", author.email(),
            "GIT_COMMITTER_NAME", author.name(),
            "GIT_COMMITTER_EMAIL", author.email());
    // The message goes as an argument (argv, no shell), so no file in the sandbox holds it.
    git.local(
            dir,
            List.of("commit", "-q", "--no-gpg-sign", "--no-verify", "-m", message),
            SandboxGit.SMALL_OUTPUT,
            env)
        .check("commit in " + dir);
    return local(List.of("rev-parse", "HEAD"), 4096, "rev-parse").strip();
  }

  @Override
  public void apply(String patch) {
    byte[] bytes = patch.getBytes(StandardCharsets.UTF_8);
    if (bytes.length > MAX_PATCH) {
      throw new GitException(Reason.TOO_LARGE, "a patch may have at most " + MAX_PATCH + " bytes");
    }
    String name = "agentnest-apply-" + random() + ".patch";
    git.sandbox().files().write(dir + "/.git/" + name, bytes);
    try {
      git.local(dir, List.of("apply", "--", ".git/" + name), SandboxGit.SMALL_OUTPUT, Map.of())
          .check("apply in " + dir);
    } finally {
      deleteQuietly(dir + "/.git/" + name);
    }
  }

  @Override
  public void fetch() {
    URI o = requireOrigin("fetch");
    git.remote(
            "fetch",
            o,
            auth,
            List.of("fetch", "--", o.toString(), "+refs/heads/*:refs/remotes/origin/*"),
            dir)
        .check("fetch in " + dir);
  }

  @Override
  public void push(String remote, String branch) {
    GitNames.remote(remote);
    GitNames.branch(branch);
    if (!remote.equals("origin")) {
      throw new GitException(
          Reason.BAD_REF,
          "push goes to 'origin' only (the URL the host cloned from or named in open(dir, url,"
              + " auth)), not '"
              + remote
              + "'");
    }
    URI o = requireOrigin("push");
    git.remote(
            "push",
            o,
            auth,
            List.of("push", "--", o.toString(), "refs/heads/" + branch + ":refs/heads/" + branch),
            dir)
        .check("push " + branch + " in " + dir);
  }

  private URI requireOrigin(String op) {
    URI o = origin;
    if (o == null) {
      throw new GitException(
          Reason.BAD_REF,
          op
              + " needs the remote's URL from the host: open the repository with"
              + " git().open(dir, url, auth)");
    }
    return o;
  }

  @Override
  public Path exportPatch(Path hostDir) {
    String base = upstreamBase();
    return exportPatch(hostDir, base);
  }

  /** Where HEAD left the remote: its upstream, else origin/HEAD, as a commit hash. */
  private String upstreamBase() {
    for (String ref : List.of("@{upstream}", "refs/remotes/origin/HEAD")) {
      SandboxGit.Run r = git.local(dir, List.of("merge-base", "HEAD", ref), 4096, Map.of());
      String hash = r.stdout().strip();
      if (r.ok() && hash.matches("[0-9a-f]{40,64}")) {
        return hash;
      }
    }
    throw new GitException(
        Reason.FAILED,
        "the branch has no upstream and there is no origin/HEAD in "
            + dir
            + ": give the base, exportPatch(hostDir, base)");
  }

  @Override
  public Path exportPatch(Path hostDir, String base) {
    GitNames.revision(base);
    return export(
        hostDir,
        "patch",
        out ->
            List.of(
                "format-patch",
                "--no-textconv",
                "--no-ext-diff",
                "--stdout",
                "--end-of-options",
                base + "..HEAD"),
        true);
  }

  @Override
  public Path exportBundle(Path hostDir) {
    return export(hostDir, "bundle", out -> List.of("bundle", "create", "-q", out, "--all"), false);
  }

  private Path export(
      Path hostDir, String kind, Function<String, List<String>> args, boolean viaStdout) {
    String name = "agentnest-export-" + random() + "." + kind;
    String inRepo = ".git/" + name;
    try {
      SandboxGit.Run r =
          viaStdout
              ? git.localToFile(dir, args.apply(inRepo), inRepo)
              : git.local(dir, args.apply(inRepo), SandboxGit.SMALL_OUTPUT, Map.of());
      r.check(kind + " export of " + dir);
      byte[] data = git.sandbox().files().read(dir + "/" + inRepo);
      Files.createDirectories(hostDir);
      String stem =
          dir.replace('/', '-') + "-" + Instant.now().atOffset(ZoneOffset.UTC).format(STAMP);
      Path tmp = Files.createTempFile(hostDir, ".agentnest-", ".tmp");
      Files.write(tmp, data);
      Path target = hostDir.resolve(stem + "." + kind);
      Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      return target;
    } catch (IOException e) {
      throw new GitException(
          Reason.HOST_IO, "cannot write the " + kind + " to " + hostDir + ": " + e.getMessage(), e);
    } finally {
      deleteQuietly(dir + "/" + inRepo);
    }
  }

  private static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss-SSS");

  private void deleteQuietly(String path) {
    try {
      git.sandbox().files().delete(path);
    } catch (AgentNestException e) {
      // Left in .git; harmless, and the sandbox goes with it.
    }
  }

  private String local(List<String> args, long maxOutput, String doing) {
    return git.local(dir, args, maxOutput, Map.of()).check(doing + " in " + dir).stdout();
  }

  private static String random() {
    byte[] b = new byte[8];
    RANDOM.nextBytes(b);
    return HexFormat.of().formatHex(b);
  }
}
