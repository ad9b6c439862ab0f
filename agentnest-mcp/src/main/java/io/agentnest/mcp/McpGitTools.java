package io.agentnest.mcp;

import io.agentnest.GitAuth;
import io.agentnest.GitAuthor;
import io.agentnest.GitCommit;
import io.agentnest.GitWorkspace;
import io.agentnest.Sandbox;
import io.agentnest.Secret;
import io.agentnest.tools.SandboxTools;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import java.net.URI;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * {@code git_clone}, {@code git_diff}, {@code git_commit}: git workspaces in the session's sandbox
 * ({@link Sandbox#git()}); the image needs git (the data or browser preset). The model never sees
 * or gives a credential: a token comes from the server's environment, {@value #TOKEN_VARIABLE}, and
 * only for the hosts {@value #HOSTS_VARIABLE} names, so a clone from another host cannot carry it
 * away.
 */
final class McpGitTools {
  static final String TOKEN_VARIABLE = "AGENTNEST_GIT_TOKEN";
  static final String HOSTS_VARIABLE = "AGENTNEST_GIT_TOKEN_HOSTS";
  static final GitAuthor DEFAULT_AUTHOR =
      new GitAuthor("AgentNest agent", "agent@agentnest.invalid");
  private static final int MAX_DIFF = 60_000;

  private final Map<String, String> environment;

  McpGitTools(Map<String, String> environment) {
    this.environment = environment;
  }

  List<SyncToolSpecification> all(McpTools t) {
    return List.of(
        McpTools.tool(
            "git_clone",
            "Clone a git repository",
            "Clone an http(s) git repository into a directory of the sandbox's workspace. The"
                + " remote must be on the sandbox's network allowlist; credentials, when the"
                + " server has them for that host, are supplied by the host and never enter the"
                + " sandbox. Returns the branch and the last commit.",
            McpTools.schema(
                List.of("url", "dir"),
                McpTools.prop("url", "string", "The remote, e.g. \"https://github.com/org/app\"."),
                McpTools.prop("dir", "string", "Directory in the workspace, e.g. \"app\"."),
                McpTools.sandboxIdProp()),
            McpTools.annotations(false, false, false),
            (ex, req) ->
                t.simple(
                    ex,
                    a -> {
                      String url = McpArguments.string(a, "url");
                      String dir = McpArguments.string(a, "dir");
                      Sandbox sb = t.session(ex).sandbox(McpArguments.optString(a, "sandbox_id"));
                      GitWorkspace repo = sb.git().clone(url, dir, authFor(url));
                      List<GitCommit> last = repo.log(1);
                      return ToolOutputs.ok(
                          "cloned into "
                              + repo.dir()
                              + " (branch "
                              + repo.branch()
                              + (last.isEmpty()
                                  ? ")"
                                  : ", last commit "
                                      + last.get(0).hash().substring(0, 12)
                                      + " "
                                      + SandboxTools.bound(last.get(0).subject(), 200)
                                      + ")"));
                    },
                    req)),
        McpTools.tool(
            "git_diff",
            "Diff of a git repository",
            "The changes of a repository in the workspace: against HEAD (working tree and index),"
                + " or against a ref (a branch, tag or commit) when given. Bounded.",
            McpTools.schema(
                List.of("dir"),
                McpTools.prop("dir", "string", "The repository's directory in the workspace."),
                McpTools.prop("ref", "string", "Compare against this ref instead of HEAD."),
                McpTools.sandboxIdProp()),
            McpTools.annotations(true, false, true),
            (ex, req) ->
                t.simple(
                    ex,
                    a -> {
                      Sandbox sb = t.session(ex).sandbox(McpArguments.optString(a, "sandbox_id"));
                      GitWorkspace repo = sb.git().open(McpArguments.string(a, "dir"));
                      String ref = McpArguments.optString(a, "ref");
                      String diff = ref == null ? repo.diff() : repo.diff(ref);
                      return ToolOutputs.ok(
                          diff.isEmpty() ? "(no changes)" : SandboxTools.bound(diff, MAX_DIFF));
                    },
                    req)),
        McpTools.tool(
            "git_commit",
            "Commit in a git repository",
            "Stage every change of a repository in the workspace and commit it. Optionally"
                + " switch to a new branch first. Returns the new commit's hash.",
            McpTools.schema(
                List.of("dir", "message"),
                McpTools.prop("dir", "string", "The repository's directory in the workspace."),
                McpTools.prop("message", "string", "The commit message."),
                McpTools.prop("branch", "string", "Create this branch at HEAD and commit on it."),
                McpTools.prop("author_name", "string", "Author name (default: AgentNest agent)."),
                McpTools.prop("author_email", "string", "Author email."),
                McpTools.sandboxIdProp()),
            McpTools.annotations(false, false, false),
            (ex, req) ->
                t.simple(
                    ex,
                    a -> {
                      Sandbox sb = t.session(ex).sandbox(McpArguments.optString(a, "sandbox_id"));
                      GitWorkspace repo = sb.git().open(McpArguments.string(a, "dir"));
                      String branch = McpArguments.optString(a, "branch");
                      if (branch != null) {
                        repo.checkoutNewBranch(branch);
                      }
                      String name = McpArguments.optString(a, "author_name");
                      String email = McpArguments.optString(a, "author_email");
                      GitAuthor author =
                          new GitAuthor(
                              name == null ? DEFAULT_AUTHOR.name() : name,
                              email == null ? DEFAULT_AUTHOR.email() : email);
                      String hash = repo.commit(McpArguments.string(a, "message"), author);
                      return ToolOutputs.ok("committed " + hash + " on " + repo.branch());
                    },
                    req)));
  }

  /** The server's token for {@code url}'s host, if it has one for exactly that host. */
  GitAuth authFor(String url) {
    String token = environment.get(TOKEN_VARIABLE);
    String hosts = environment.get(HOSTS_VARIABLE);
    if (token == null || token.isBlank() || hosts == null) {
      return GitAuth.none();
    }
    String host = hostOf(url);
    Set<String> allowed =
        Arrays.stream(hosts.split(","))
            .map(h -> h.strip().toLowerCase(Locale.ROOT))
            .filter(h -> !h.isEmpty())
            .collect(Collectors.toSet());
    if (host == null || !allowed.contains(host)) {
      return GitAuth.none();
    }
    return GitAuth.token(Secret.named(TOKEN_VARIABLE, token));
  }

  private static @Nullable String hostOf(String url) {
    try {
      String h = URI.create(url).getHost();
      return h == null ? null : h.toLowerCase(Locale.ROOT);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }
}
