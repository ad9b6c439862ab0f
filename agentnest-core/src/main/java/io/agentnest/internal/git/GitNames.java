package io.agentnest.internal.git;

import io.agentnest.GitException;
import io.agentnest.GitException.Reason;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Host-side checks of what goes on git's command line: ref and branch names by git's {@code
 * check-ref-format} rules, remote names, repository directories and remote URLs. Nothing that fails
 * here reaches the sandbox; nothing that passes can be read by git as an option.
 */
public final class GitNames {
  private static final Pattern REMOTE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
  private static final Pattern DIR = Pattern.compile("[A-Za-z0-9_][A-Za-z0-9._-]{0,127}");
  private static final Pattern REV_SUFFIX = Pattern.compile("([~^][0-9]{0,4}){0,16}");
  private static final int MAX_REF = 255;

  private GitNames() {}

  /**
   * A branch name as {@code git check-ref-format --branch} takes it, and not one git would read as
   * an option or a revision expression.
   */
  public static String branch(String name) {
    String why = refProblem(name);
    if (why == null && name.equals("HEAD")) {
      why = "HEAD is not a branch name";
    }
    if (why != null) {
      throw new GitException(
          Reason.BAD_REF,
          "branch name '" + shown(name) + "' is invalid: " + why + " (git check-ref-format rules)");
    }
    return name;
  }

  /** A revision: a ref name (or hash) with an optional {@code ~n} / {@code ^n} suffix. */
  public static String revision(String rev) {
    int start = rev.indexOf('~') >= 0 || rev.indexOf('^') >= 0 ? firstSuffix(rev) : rev.length();
    String base = rev.substring(0, start);
    String suffix = rev.substring(start);
    String why = refProblem(base);
    if (why == null && !REV_SUFFIX.matcher(suffix).matches()) {
      why = "only ~n and ^n may follow a name";
    }
    if (why != null) {
      throw new GitException(
          Reason.BAD_REF,
          "revision '" + shown(rev) + "' is invalid: " + why + " (git check-ref-format rules)");
    }
    return rev;
  }

  private static int firstSuffix(String rev) {
    int a = rev.indexOf('~');
    int b = rev.indexOf('^');
    if (a < 0) {
      return b;
    }
    return b < 0 ? a : Math.min(a, b);
  }

  /** Why {@code git check-ref-format} would refuse {@code name} (as a branch), or null. */
  static @Nullable String refProblem(String name) {
    if (name.isEmpty()) {
      return "it is empty";
    }
    if (name.length() > MAX_REF) {
      return "it is longer than " + MAX_REF + " characters";
    }
    if (name.startsWith("-")) {
      return "it starts with '-'";
    }
    if (name.equals("@")) {
      return "it is '@'";
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c < 0x20 || c == 0x7f || " ~^:?*[\\".indexOf(c) >= 0) {
        return "it contains a space, a control character or one of ~ ^ : ? * [ \\";
      }
    }
    if (name.contains("..")) {
      return "it contains '..'";
    }
    if (name.contains("@{")) {
      return "it contains '@{'";
    }
    if (name.startsWith("/") || name.endsWith("/") || name.contains("//")) {
      return "it starts or ends with '/' or contains '//'";
    }
    if (name.endsWith(".")) {
      return "it ends with '.'";
    }
    for (String part : name.split("/")) {
      if (part.startsWith(".")) {
        return "a component starts with '.'";
      }
      if (part.endsWith(".lock")) {
        return "a component ends with '.lock'";
      }
    }
    return null;
  }

  /** A remote's name ({@code origin}). */
  public static String remote(String name) {
    if (!REMOTE.matcher(name).matches()) {
      throw new GitException(
          Reason.BAD_REF,
          "remote name '"
              + shown(name)
              + "' is invalid: use 1-64 letters, digits, '.', '_', '-', starting with a letter or"
              + " digit");
    }
    return name;
  }

  /**
   * A repository directory relative to the workspace: one or more path components of letters,
   * digits, '.', '_', '-' (none starting with '.' or '-').
   */
  public static String dir(String dir) {
    String d = dir.endsWith("/") ? dir.substring(0, dir.length() - 1) : dir;
    boolean ok = !d.isEmpty() && d.length() <= 512;
    if (ok) {
      for (String part : d.split("/", -1)) {
        ok &= DIR.matcher(part).matches();
      }
    }
    if (!ok) {
      throw new GitException(
          Reason.BAD_PATH,
          "repository directory '"
              + shown(dir)
              + "' is invalid: give a path relative to the workspace, e.g. 'app' or"
              + " 'repos/app' (letters, digits, '.', '_', '-'; no component starting with '.'"
              + " or '-')");
    }
    return d;
  }

  /** An http(s) remote URL without credentials, query or fragment. */
  public static URI url(String url) {
    URI u;
    try {
      u = new URI(url);
    } catch (URISyntaxException e) {
      throw badUrl(url, "it does not parse (" + e.getReason() + ")");
    }
    String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
    if (url.length() > 2048) {
      throw badUrl(url, "it is longer than 2048 characters");
    }
    if (!scheme.equals("https") && !scheme.equals("http")) {
      throw badUrl(url, "only https:// and http:// remotes go through the sandbox's egress proxy");
    }
    if (u.getRawUserInfo() != null) {
      throw badUrl(url, "credentials do not belong in the URL: pass them as GitAuth");
    }
    if (u.getHost() == null || u.getHost().isEmpty()) {
      throw badUrl(url, "it names no host");
    }
    if (u.getRawQuery() != null || u.getRawFragment() != null) {
      throw badUrl(url, "a remote URL has no query or fragment");
    }
    for (int i = 0; i < url.length(); i++) {
      char c = url.charAt(i);
      if (c <= 0x20 || c == 0x7f) {
        throw badUrl(url, "it contains a space or a control character");
      }
    }
    return u;
  }

  private static GitException badUrl(String url, String why) {
    return new GitException(Reason.BAD_URL, "git URL '" + shown(url) + "' is refused: " + why);
  }

  /** A name the caller gave, shown back without control characters and bounded. */
  static String shown(String s) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < s.length() && b.length() < 200; i++) {
      char c = s.charAt(i);
      b.append(c < 0x20 || c == 0x7f ? '?' : c);
    }
    return b.toString();
  }
}
