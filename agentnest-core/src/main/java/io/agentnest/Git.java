package io.agentnest;

/**
 * Git repositories in a sandbox's workspace ({@link Sandbox#git()}). Git runs inside the sandbox;
 * clone, fetch and push go through the egress proxy (allowlist and audit apply), and credentials
 * stay on the host: the proxy adds them to the requests of one operation to its remote (see {@link
 * GitAuth}). Git runs no program the repository's configuration names (hooks, filters, signing,
 * monitors, helpers, other transports).
 *
 * <pre>{@code
 * GitWorkspace repo = sb.git().clone("https://github.com/org/app", "app", GitAuth.token(token));
 * repo.checkoutNewBranch("fix");
 * sb.files().write("app/README.md", "...");
 * repo.commit("docs: fix the README", new GitAuthor("Bot", "bot@example.com"));
 * Path patch = repo.exportPatch(Path.of("out"));
 * }</pre>
 */
public interface Git {
  /**
   * Clones {@code url} (http or https, no credentials in it) into {@code dir} under the workspace.
   * {@code auth} is remembered by the returned workspace for its {@link GitWorkspace#fetch()} and
   * {@link GitWorkspace#push} to the same remote.
   *
   * @throws GitException {@code BAD_URL}, {@code BAD_PATH}, {@code AUTH_FAILED}, {@code
   *     HOST_REFUSED}, {@code NO_GIT}, {@code FAILED}
   */
  GitWorkspace clone(String url, String dir, GitAuth auth);

  /** {@link #clone(String, String, GitAuth)} without credentials. */
  default GitWorkspace clone(String url, String dir) {
    return clone(url, dir, GitAuth.none());
  }

  /**
   * A repository that is already in the workspace (e.g. in a fork, or made by sandbox code). Its
   * remotes are unknown to the host: {@link GitWorkspace#fetch()} and {@link GitWorkspace#push}
   * need {@link #open(String, String, GitAuth)}.
   */
  GitWorkspace open(String dir);

  /**
   * A repository in the workspace whose {@code origin} the host names: fetch and push go to {@code
   * url} with {@code auth}, whatever the repository's own configuration says.
   */
  GitWorkspace open(String dir, String url, GitAuth auth);
}
