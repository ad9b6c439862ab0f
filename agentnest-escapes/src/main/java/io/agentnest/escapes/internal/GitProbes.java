package io.agentnest.escapes.internal;

import io.agentnest.ExecResult;
import io.agentnest.GitAuth;
import io.agentnest.GitAuthor;
import io.agentnest.GitException;
import io.agentnest.GitWorkspace;
import io.agentnest.NetworkPolicy;
import io.agentnest.Sandbox;
import io.agentnest.Secret;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * The host's git operations on a repository that sandbox code prepared (issue 42, items 1 and 19),
 * judged by the host: sandbox code plants every program a repository (or the Python user site under
 * the workspace, which is HOME) can name, each a marker that records that it ran and what it saw;
 * the host then runs its operations through the public git API, and the attack got through if any
 * marker ran or the operation's token is anywhere the sandbox can read. The remote is a name under
 * {@code .example} that never resolves: credentialed operations fail at the network, after the host
 * has handed its credential to the sandbox's egress proxy for them.
 */
final class GitProbes {
  private GitProbes() {}

  /** A remote that never resolves (RFC 2606): the operations fail at the proxy's lookup. */
  static final String REMOTE_HOST = "git.agentnest-probe.example";

  static final String REMOTE = "https://" + REMOTE_HOST + "/x.git";

  private static final String DIR = "/workspace/.agentnest-git-probe";
  private static final GitAuthor AUTHOR = new GitAuthor("Probe", "probe@agentnest-probe.example");

  /** Records that it ran ($1) with its environment; a clean or smudge filter passes stdin on. */
  private static final String MARK =
      "#!/bin/sh\n"
          + "f="
          + DIR
          + "/marks/${1:-unknown}.$$\n"
          + "{ echo \"ran $1\"; env; } >\"$f\" 2>&1\n"
          + "case \"$1\" in clean|smudge) cat ;; esac\n";

  /** Hooks git runs on the operations the host performs. */
  private static final List<String> HOOKS =
      List.of(
          "pre-commit",
          "prepare-commit-msg",
          "commit-msg",
          "post-commit",
          "post-checkout",
          "pre-push",
          "reference-transaction",
          "post-index-change",
          "fsmonitor-watchman");

  static void addTo(ProbeList p) {
    p.add(
        "git.repository-programs",
        "make the host's commit, diff, log, status and checkout run programs a repository in the"
            + " workspace names (core.fsmonitor, hooks and core.hooksPath, gpg.program with"
            + " commit.gpgSign, textconv and external diff drivers, clean/smudge/process filters,"
            + " core.pager, core.editor) or a usercustomize.py in Python's user site",
        Map.of(),
        ctx -> withRepository(ctx, false));
    p.add(
        "git.credentialed-remote",
        "get the token of the host's credentialed fetch, push and clone (to "
            + REMOTE_HOST
            + ", which never resolves) through core.alternateRefsCommand with"
            + " objects/info/alternates, credential helpers, core.askPass, core.sshCommand, an"
            + " ext:: transport reached through url.*.insteadOf, or a usercustomize.py",
        Map.of(),
        ctx -> withRepository(ctx, true));
  }

  private static Judgement withRepository(ProbeContext ctx, boolean remote) {
    try (Sandbox sb =
        ctx.fresh(b -> b.network(NetworkPolicy.allowlist(REMOTE_HOST)).label("probe", "git"))) {
      ExecResult git = sb.exec("git --version", Judges.timeout(30));
      if (git.exitCode() != 0) {
        // The git API refuses to run without git (NO_GIT): there is no host operation to subvert.
        return Judgement.of(
            false,
            "the image "
                + sb.config().image()
                + " has no git, so the host's git API runs nothing here; attack an image with git"
                + " (agentnest image build --preset data) to exercise this probe");
      }
      String token = token();
      plant(sb);
      List<String> odd = new ArrayList<>();
      if (remote) {
        remoteOperations(sb, token, odd);
      } else {
        localOperations(sb);
      }
      return judge(sb, token, odd);
    }
  }

  private static String token() {
    byte[] b = new byte[16];
    new SecureRandom().nextBytes(b);
    return "anpgit" + HexFormat.of().formatHex(b);
  }

  /** Sandbox code: the repository, the marker, every trap; the traps are shown to fire. */
  private static void plant(Sandbox sb) {
    sb.files().write(DIR.substring("/workspace/".length()) + "/mark", MARK);
    StringBuilder s = new StringBuilder();
    s.append("set -e\n")
        .append("d=" + DIR + "; r=/workspace/repo; m=\"sh $d/mark\"\n")
        .append("mkdir -p $d/marks $d/hooks\n")
        .append("git init -q -b main $r && cd $r\n")
        .append("git config user.name probe && git config user.email probe@example.com\n")
        .append("printf 'a\\n' >a.txt && printf '# a\\n' >README.md && printf 'p\\n' >z.proc\n")
        .append("git add -A && git commit -q -m init\n");
    for (String hook : HOOKS) {
      for (String dir : List.of("$d/hooks/", "$r/.git/hooks/")) {
        s.append("printf '#!/bin/sh\\nexec sh ")
            .append(DIR)
            .append("/mark hook-")
            .append(hook)
            .append(" </dev/null\\n' >")
            .append(dir)
            .append(hook)
            .append(" && chmod 755 ")
            .append(dir)
            .append(hook)
            .append('\n');
      }
    }
    String[][] config = {
      {"core.hooksPath", DIR + "/hooks"},
      {"core.fsmonitor", "$m fsmonitor </dev/null"},
      {"core.alternateRefsCommand", "$m alternates </dev/null"},
      {"gpg.program", DIR + "/mark"},
      {"gpg.format", "ssh"},
      {"gpg.ssh.defaultKeyCommand", "$m ssh-key </dev/null"},
      {"commit.gpgSign", "true"},
      {"log.showSignature", "true"},
      {"push.gpgSign", "true"},
      {"diff.conv.textconv", "$m textconv </dev/null"},
      {"diff.evil.command", "$m diff-command </dev/null"},
      {"diff.external", "$m diff-external </dev/null"},
      {"filter.evil.clean", "$m clean"},
      {"filter.evil.smudge", "$m smudge"},
      {"filter.evil.required", "true"},
      {"filter.proc.process", "$m process </dev/null"},
      {"credential.helper", "!$m helper </dev/null"},
      {"core.askPass", DIR + "/mark"},
      {"core.sshCommand", "$m ssh </dev/null"},
      {"core.pager", "$m pager </dev/null"},
      {"core.editor", "$m editor </dev/null"},
    };
    for (String[] kv : config) {
      s.append("git config '").append(kv[0]).append("' \"").append(kv[1]).append("\"\n");
    }
    s.append(
            "printf '*.txt diff=evil filter=evil\\n*.md diff=conv\\n*.proc filter=proc\\n'"
                + " >.gitattributes\n")
        .append("git init -q --bare $d/alt.git\n")
        .append("echo $d/alt.git/objects >$r/.git/objects/info/alternates\n")
        // The Python user site is under HOME, the workspace: every Python of the sandbox user
        // loads this, the host's own helpers included if they were Python.
        .append("site=$(python3 -c 'import site; print(site.getusersitepackages())')\n")
        .append("mkdir -p \"$site\"\n")
        .append("printf 'import subprocess\\nsubprocess.run([\"sh\", \"")
        .append(DIR)
        .append("/mark\", \"usercustomize\"], stdin=subprocess.DEVNULL)\\n'")
        .append(" >\"$site/usercustomize.py\"\n")
        // The process filter (which does not speak git's protocol, so git stops at its file)
        // guards a file that sorts last: the diff traps of the others run first.
        .append("printf 'b\\n' >>a.txt && printf 'c\\n' >>README.md && printf 'q\\n' >>z.proc\n")
        // The traps are real: the sandbox's own git and Python run them.
        .append("set +e\n")
        .append(
            "git status --porcelain >/dev/null 2>&1; git diff -- a.txt README.md >/dev/null 2>&1\n")
        .append("python3 -c pass\n")
        .append("ls $d/marks\n");
    ExecResult r = sb.exec(List.of("sh", "-c", s.toString()), Judges.timeout(60));
    String fired = r.stdout();
    // Which diff program git picks depends on its precedence (external, driver, textconv): any.
    boolean diffFired =
        fired.contains("textconv") || fired.contains("diff-command") || fired.contains("diff-ext");
    if (r.exitCode() != 0
        || !fired.contains("fsmonitor")
        || !fired.contains("usercustomize")
        || !diffFired) {
      throw new ProbeContext.ProbeBroken(
          "the traps did not fire for the sandbox's own git and Python, so the probe cannot judge"
              + " the host's: "
              + Verdicts.clean(fired + " " + r.stderr()));
    }
    sb.exec("rm -f " + DIR + "/marks/*", Judges.timeout(20));
  }

  /** The host's local operations, each of which git could make run a configured program. */
  private static void localOperations(Sandbox sb) {
    GitWorkspace repo = sb.git().open("repo");
    repo.status();
    repo.diff();
    repo.checkoutNewBranch("probe");
    repo.commit("probe: a change", AUTHOR);
    repo.log(2);
    repo.diff("main");
    repo.checkout("main");
    repo.checkout("probe");
  }

  /**
   * The host's credentialed operations: each fails at the network (the name never resolves), after
   * the host gave the token to the egress proxy for it. Then a URL rewrite to an {@code ext::}
   * transport, which the host must refuse rather than follow.
   */
  private static void remoteOperations(Sandbox sb, String token, List<String> odd) {
    GitAuth auth = GitAuth.token(Secret.of(token));
    GitWorkspace repo = sb.git().open("repo", REMOTE, auth);
    expectFailure(repo::fetch, "fetch", odd);
    expectFailure(() -> repo.push("origin", "main"), "push", odd);
    expectFailure(() -> sb.git().clone(REMOTE, "again", auth), "clone", odd);
    ExecResult ext =
        sb.exec(
            List.of(
                "sh",
                "-c",
                "cd /workspace/repo && git config protocol.ext.allow always && git config"
                    + " 'url.ext::sh "
                    + DIR
                    + "/mark ext %S .insteadOf' 'https://"
                    + REMOTE_HOST
                    + "/'"),
            Judges.timeout(20));
    if (ext.exitCode() != 0) {
      throw new ProbeContext.ProbeBroken("cannot plant the ext:: rewrite: " + ext.stderr());
    }
    expectFailure(repo::fetch, "fetch through ext::", odd);
    expectFailure(() -> repo.push("origin", "main"), "push through ext::", odd);
  }

  private static void expectFailure(Runnable op, String name, List<String> odd) {
    try {
      op.run();
      odd.add(name + " succeeded against a name that does not resolve");
    } catch (GitException e) {
      // The network (or the host's refusal of a rewrite) stops it: what matters is what ran.
    }
  }

  /**
   * Through when a marker ran or the token (or its basic-auth form) is in any process's environment
   * or command line or any file under /tmp and the workspace. The sandbox searches for the token
   * reversed (so that the search itself holds it nowhere the sandbox reads) and prints only where.
   */
  private static Judgement judge(Sandbox sb, String token, List<String> odd) {
    String reversed = new StringBuilder(token).reverse().toString();
    String find =
        "import base64, glob, os, sys\n"
            + "t = sys.argv[1][::-1].encode()\n"
            + "forms = [t, base64.b64encode(b'"
            + GitAuth.TOKEN_USER
            + ":' + t)]\n"
            + "hits = sorted(os.listdir('"
            + DIR
            + "/marks'))\n"
            + "paths = glob.glob('/proc/[0-9]*/environ') + glob.glob('/proc/[0-9]*/cmdline')\n"
            + "for top in ('/tmp', '/workspace'):\n"
            + "    for root, dirs, files in os.walk(top):\n"
            + "        paths += [os.path.join(root, f) for f in files]\n"
            + "for p in paths[:50000]:\n"
            + "    try:\n"
            + "        with open(p, 'rb') as fh:\n"
            + "            data = fh.read(8 << 20)\n"
            + "    except OSError:\n"
            + "        continue\n"
            + "    if any(f in data for f in forms):\n"
            + "        hits.append('token in ' + p)\n"
            + "print('\\n'.join(hits) if hits else 'CLEAN')\n";
    ExecResult r =
        sb.exec(List.of("python3", "-I", "-S", "-c", find, reversed), Judges.timeout(60));
    String out = r.stdout().strip();
    if (r.exitCode() != 0 || out.isEmpty()) {
      throw new ProbeContext.ProbeBroken(
          "the search for markers and the token failed: " + Verdicts.clean(r.stderr()));
    }
    boolean through = !out.equals("CLEAN");
    String detail =
        through
            ? "ran or leaked: " + out.replace('\n', ',')
            : "no program the repository named ran and the token is nowhere in the sandbox";
    return Judgement.of(through, odd.isEmpty() ? detail : detail + "; " + String.join("; ", odd));
  }
}
