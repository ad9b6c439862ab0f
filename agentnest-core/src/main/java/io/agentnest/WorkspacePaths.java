package io.agentnest;

import io.agentnest.text.HumanText;
import java.nio.charset.StandardCharsets;

/**
 * The paths {@link SandboxFiles} takes: relative to the workspace, no {@code ..}, no NUL or control
 * characters, at most {@value #MAX_PATH_BYTES} bytes and {@value #MAX_NAME_BYTES} per name. Checked
 * on the host before anything is sent to the sandbox; the agent checks again against the real
 * filesystem (symlinks), so both sides must agree to touch a file. A tool that takes a path from a
 * model checks it here to refuse it with the same message as the sandbox would.
 */
public final class WorkspacePaths {
  public static final int MAX_PATH_BYTES = 4096;
  public static final int MAX_NAME_BYTES = 255;

  private WorkspacePaths() {}

  /**
   * Returns the normalised relative path ({@code ""} for the workspace root) or throws {@code
   * BAD_PATH} naming the problem.
   */
  public static String check(String path) {
    if (path.indexOf('\0') >= 0) {
      throw bad(path, "contains a NUL byte");
    }
    if (path.startsWith("/")) {
      throw bad(path, "is absolute: use a path relative to the workspace, e.g. 'data/in.csv'");
    }
    if (path.getBytes(StandardCharsets.UTF_8).length > MAX_PATH_BYTES) {
      throw bad(path, "is longer than " + MAX_PATH_BYTES + " bytes");
    }
    StringBuilder out = new StringBuilder();
    for (String part : path.split("/", -1)) {
      if (part.isEmpty() || part.equals(".")) {
        continue;
      }
      if (part.equals("..")) {
        throw bad(path, "contains '..': paths must stay inside the workspace");
      }
      if (part.getBytes(StandardCharsets.UTF_8).length > MAX_NAME_BYTES) {
        throw bad(path, "has a name longer than " + MAX_NAME_BYTES + " bytes");
      }
      for (int i = 0; i < part.length(); i++) {
        char c = part.charAt(i);
        if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0)) {
          throw bad(path, "contains a control character");
        }
      }
      if (out.length() > 0) {
        out.append('/');
      }
      out.append(part);
    }
    return out.toString();
  }

  /** Like {@link #check} but refuses the workspace root itself. */
  public static String checkEntry(String path) {
    String p = check(path);
    if (p.isEmpty()) {
      throw bad(path, "names the workspace root: name a file or directory inside it");
    }
    return p;
  }

  private static FileOperationException bad(String path, String why) {
    return new FileOperationException(
        FileOperationException.Reason.BAD_PATH,
        "refused path '" + HumanText.line(path, 200) + "': it " + why);
  }
}
