package io.agentnest;

import java.nio.file.Path;
import java.util.List;

/**
 * One git repository in a sandbox's workspace ({@link Git#clone}, {@link Git#open}). Every
 * operation runs git inside the sandbox with argument arrays (never a shell line), after checking
 * names host-side (git's {@code check-ref-format} rules), and reads back a bounded amount of
 * output. Text read back is the sandbox's: treat it as untrusted.
 */
public interface GitWorkspace {
  /** The repository's directory, relative to the workspace. */
  String dir();

  /** {@code git status --porcelain=v1 --branch}. */
  String status();

  /** Changes of the working tree and the index against {@code HEAD} ({@code git diff HEAD}). */
  String diff();

  /** Changes of the working tree against {@code ref} (a branch, tag, hash; {@code ~n} allowed). */
  String diff(String ref);

  /** The last {@code n} commits of {@code HEAD} (1 to 1000), newest first. */
  List<GitCommit> log(int n);

  /** The current branch, or {@code HEAD} when detached. */
  String branch();

  /** Creates {@code name} at {@code HEAD} and switches to it. */
  void checkoutNewBranch(String name);

  /** Switches to a branch, tag or commit. */
  void checkout(String ref);

  /**
   * Stages every change ({@code git add -A}) and commits it as {@code author}; returns the new
   * commit's hash.
   *
   * @throws GitException {@code FAILED} when there is nothing to commit
   */
  String commit(String message, GitAuthor author);

  /**
   * Applies a patch ({@code git diff} or {@code git format-patch} output) to the working tree.
   *
   * @throws GitException {@code FAILED} when it does not apply (nothing is changed then)
   */
  void apply(String patch);

  /** Fetches {@code origin} (the URL the host knows, with the clone's credentials). */
  void fetch();

  /**
   * Pushes {@code branch} to {@code remote} ({@code origin}: the URL the host knows, with the
   * clone's credentials), as {@code refs/heads/branch}.
   */
  void push(String remote, String branch);

  /**
   * Writes the commits of {@code HEAD} since the remote's branch it started from (its upstream, or
   * {@code origin/HEAD}) as one {@code git format-patch} mbox file into {@code hostDir}; {@code git
   * am} or {@code git apply} take it. Returns the file.
   */
  Path exportPatch(Path hostDir);

  /** As {@link #exportPatch(Path)}, for the commits since {@code base}. */
  Path exportPatch(Path hostDir, String base);

  /** Writes a {@code git bundle} of every branch and tag into {@code hostDir}; returns the file. */
  Path exportBundle(Path hostDir);
}
