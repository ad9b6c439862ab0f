package io.agentnest.tools;

import io.agentnest.SandboxConfig;
import io.agentnest.WorkspacePaths;

/**
 * The working directory a model may give a shell tool: inside the workspace only. The Java API lets
 * a program run in any directory of the sandbox; a model's tool call is held to what the tool says
 * ({@code /workspace} or a directory in it), so {@code /etc} or {@code ../..} is refused with a
 * message saying what to give instead. The agent resolves the result inside the workspace again,
 * refusing symlinks that lead out.
 */
final class WorkspaceDir {
  private static final String ROOT = SandboxConfig.WORKSPACE;

  private WorkspaceDir() {}

  /**
   * The directory relative to the workspace ({@code ""} for the workspace itself).
   *
   * @throws IllegalArgumentException for an absolute path outside the workspace
   * @throws io.agentnest.FileOperationException {@code BAD_PATH} for {@code ..}, NUL or control
   *     characters
   */
  static String relative(String workdir) {
    String w = workdir;
    if (w.equals(ROOT) || w.startsWith(ROOT + "/")) {
      w = w.substring(ROOT.length());
      while (w.startsWith("/")) {
        w = w.substring(1);
      }
    } else if (w.startsWith("/")) {
      throw new IllegalArgumentException(
          "workdir '"
              + SandboxTools.bound(w, 200)
              + "' is outside "
              + ROOT
              + ": give a directory relative to "
              + ROOT
              + " (e.g. 'project'), or leave workdir out to run in "
              + ROOT);
    }
    return WorkspacePaths.check(w);
  }
}
