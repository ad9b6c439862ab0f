package io.agentnest.internal;

import io.agentnest.ApprovalPolicy;
import io.agentnest.ApprovalPolicy.Action;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Decides what a shell command line needs under an {@link ApprovalPolicy}, before it runs: the
 * policy's own patterns, plus the built-in detection of deletions and system modifications. It
 * reads the command as written, so a deletion hidden in a script, a variable or an alias is not
 * seen: a guard rail, documented as such.
 */
public final class ShellClassifier {
  /** A finding: what kind of operation, what the policy says about it, and why. */
  public record Verdict(String kind, Action action, String reason) {
    static final Verdict ALLOW = new Verdict("shell", Action.ALLOW, "no rule matches");

    /** The stricter of this and {@code other}; this one when they are equally strict. */
    Verdict stricter(Verdict other) {
      return other.action().compareTo(action) > 0 ? other : this;
    }
  }

  private static final Set<String> DELETE_COMMANDS = Set.of("rm", "rmdir", "unlink", "shred");
  private static final Set<String> MODE_COMMANDS =
      Set.of("chmod", "chown", "chgrp", "chattr", "setfacl", "setcap");
  private static final Set<String> SYSTEM_PACKAGE_MANAGERS =
      Set.of("apt-get", "apt", "aptitude", "dpkg", "yum", "dnf", "apk", "zypper", "pacman", "rpm");
  private static final Set<String> LANGUAGE_PACKAGE_MANAGERS =
      Set.of("pip", "pip3", "npm", "pnpm", "yarn", "gem", "cargo", "conda", "mamba", "poetry");
  private static final Set<String> INSTALL_VERBS =
      Set.of("install", "add", "i", "-i", "-S", "-U", "remove", "purge", "uninstall", "upgrade");

  /** Commands whose last argument is where they write. */
  private static final Set<String> COPY_COMMANDS = Set.of("cp", "mv", "rsync", "install", "ln");

  /** Commands that write every path argument. */
  private static final Set<String> CREATE_COMMANDS = Set.of("touch", "mkdir", "truncate", "tee");

  private static final Set<String> WRAPPERS =
      Set.of("sudo", "doas", "env", "nohup", "nice", "time", "timeout", "xargs", "command", "exec");
  private static final Pattern REDIRECT = Pattern.compile("(?:^|[^0-9&<>])(?:[0-9]?|&)>>?\\|?\\s*");
  private static final Set<String> HARMLESS_TARGETS =
      Set.of("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero");

  private ShellClassifier() {}

  /** The strictest verdict for {@code command} under {@code policy}. */
  public static Verdict classify(String command, ApprovalPolicy policy) {
    Verdict best = Verdict.ALLOW;
    for (ApprovalPolicy.ShellRule rule : policy.shellRules()) {
      if (rule.pattern().matcher(command).find()) {
        best =
            best.stricter(new Verdict("shell", rule.action(), "matches /" + rule.pattern() + "/"));
      }
    }
    if (policy.fileDeletion() == Action.ALLOW && policy.systemModification() == Action.ALLOW) {
      return best;
    }
    for (List<String> words : simpleCommands(command)) {
      for (Verdict v : builtIn(words, policy)) {
        best = best.stricter(v);
      }
    }
    if (policy.systemModification() != Action.ALLOW) {
      String outside = redirectOutside(command, policy.writablePaths());
      if (outside != null) {
        best =
            best.stricter(
                new Verdict(
                    "system.modify",
                    policy.systemModification(),
                    "redirects output to " + outside + ", outside the writable paths"));
      }
    }
    return best;
  }

  private static List<Verdict> builtIn(List<String> words, ApprovalPolicy policy) {
    List<Verdict> out = new ArrayList<>();
    int i = 0;
    while (i < words.size() && (WRAPPERS.contains(words.get(i)) || isAssignment(words.get(i)))) {
      i++;
      // Options of the wrapper itself, e.g. "timeout 5", "sudo -u x", "env -i".
      while (i < words.size() && (words.get(i).startsWith("-") || words.get(i).matches("\\d+"))) {
        i++;
      }
    }
    if (i >= words.size()) {
      return out;
    }
    String cmd = basename(words.get(i));
    List<String> args = words.subList(i + 1, words.size());
    Action del = policy.fileDeletion();
    Action sys = policy.systemModification();
    if (del != Action.ALLOW) {
      if (DELETE_COMMANDS.contains(cmd)) {
        out.add(new Verdict("file.delete", del, "'" + cmd + "' deletes files"));
      } else if (cmd.equals("find") && (args.contains("-delete") || execsDelete(args))) {
        out.add(new Verdict("file.delete", del, "'find' with -delete deletes files"));
      } else if (cmd.equals("git") && !args.isEmpty() && args.get(0).equals("clean")) {
        out.add(new Verdict("file.delete", del, "'git clean' deletes untracked files"));
      }
    }
    if (sys != Action.ALLOW) {
      if (MODE_COMMANDS.contains(cmd)) {
        out.add(new Verdict("system.modify", sys, "'" + cmd + "' changes file ownership or mode"));
      }
      if (isPackageInstall(cmd, args)) {
        out.add(new Verdict("system.modify", sys, "'" + cmd + "' installs or removes packages"));
      }
      String target = writeTargetOutside(cmd, args, policy.writablePaths());
      if (target != null) {
        out.add(
            new Verdict(
                "system.modify",
                sys,
                "'" + cmd + "' writes " + target + ", outside the writable paths"));
      }
    }
    return out;
  }

  private static boolean execsDelete(List<String> args) {
    int exec = args.indexOf("-exec");
    return exec >= 0
        && exec + 1 < args.size()
        && DELETE_COMMANDS.contains(basename(args.get(exec + 1)));
  }

  private static boolean isPackageInstall(String cmd, List<String> args) {
    if (SYSTEM_PACKAGE_MANAGERS.contains(cmd) || LANGUAGE_PACKAGE_MANAGERS.contains(cmd)) {
      return args.stream().anyMatch(INSTALL_VERBS::contains);
    }
    if (cmd.matches("python[0-9.]*")) {
      int m = args.indexOf("-m");
      return m >= 0
          && m + 2 < args.size()
          && args.get(m + 1).matches("pip[0-9]?|ensurepip")
          && INSTALL_VERBS.contains(args.get(m + 2));
    }
    return cmd.equals("uv") && args.size() >= 2 && INSTALL_VERBS.contains(args.get(1));
  }

  private static @org.jspecify.annotations.Nullable String writeTargetOutside(
      String cmd, List<String> args, List<String> writable) {
    List<String> paths = args.stream().filter(a -> !a.startsWith("-")).toList();
    if (COPY_COMMANDS.contains(cmd) && paths.size() >= 2) {
      String dest = paths.get(paths.size() - 1);
      return isOutside(dest, writable) ? dest : null;
    }
    if (CREATE_COMMANDS.contains(cmd)) {
      return paths.stream().filter(p -> isOutside(p, writable)).findFirst().orElse(null);
    }
    if (cmd.equals("dd")) {
      for (String a : args) {
        if (a.startsWith("of=") && isOutside(a.substring(3), writable)) {
          return a.substring(3);
        }
      }
    }
    if (cmd.equals("sed") && args.stream().anyMatch(a -> a.startsWith("-i"))) {
      return paths.stream().filter(p -> isOutside(p, writable)).findFirst().orElse(null);
    }
    return null;
  }

  private static @org.jspecify.annotations.Nullable String redirectOutside(
      String command, List<String> writable) {
    Matcher m = REDIRECT.matcher(command);
    while (m.find()) {
      String rest = command.substring(m.end());
      String target = firstWord(rest);
      if (!target.isEmpty() && isOutside(target, writable)) {
        return target;
      }
    }
    return null;
  }

  /** Whether an absolute path lies outside every writable directory. Relative paths are inside. */
  static boolean isOutside(String path, List<String> writable) {
    if (!path.startsWith("/") || HARMLESS_TARGETS.contains(path) || path.startsWith("/dev/fd/")) {
      return false;
    }
    String norm = java.nio.file.Path.of(path).normalize().toString();
    for (String w : writable) {
      if (w.equals("/") || norm.equals(w) || norm.startsWith(w + "/")) {
        return false;
      }
    }
    return true;
  }

  private static boolean isAssignment(String word) {
    return word.matches("[A-Za-z_][A-Za-z0-9_]*=.*");
  }

  private static String basename(String word) {
    int slash = word.lastIndexOf('/');
    return (slash >= 0 ? word.substring(slash + 1) : word).toLowerCase(Locale.ROOT);
  }

  private static String firstWord(String s) {
    List<List<String>> cmds = simpleCommands(s);
    return cmds.isEmpty() || cmds.get(0).isEmpty() ? "" : cmds.get(0).get(0);
  }

  /**
   * Splits a command line into simple commands (at {@code ; & | && || ( ) ` $(} and newlines) of
   * words, with quotes removed. Not a full shell parser: enough to find the command words.
   */
  static List<List<String>> simpleCommands(String line) {
    List<List<String>> out = new ArrayList<>();
    List<String> words = new ArrayList<>();
    StringBuilder w = new StringBuilder();
    boolean inWord = false;
    char quote = 0;
    int n = Math.min(line.length(), 64 * 1024);
    for (int i = 0; i < n; i++) {
      char c = line.charAt(i);
      if (quote != 0) {
        if (c == quote) {
          quote = 0;
        } else if (c == '\\' && quote == '"' && i + 1 < n) {
          w.append(line.charAt(++i));
        } else {
          w.append(c);
        }
        continue;
      }
      switch (c) {
        case '\'', '"' -> {
          quote = c;
          inWord = true;
        }
        case '\\' -> {
          if (i + 1 < n) {
            w.append(line.charAt(++i));
            inWord = true;
          }
        }
        case ' ', '\t' -> {
          inWord = flush(w, words, inWord);
        }
        case ';', '&', '|', '\n', '(', ')', '`', '{', '}' -> {
          inWord = flush(w, words, inWord);
          if (!words.isEmpty()) {
            out.add(words);
            words = new ArrayList<>();
          }
        }
        case '$' -> {
          if (i + 1 < n && line.charAt(i + 1) == '(') {
            inWord = flush(w, words, inWord);
            if (!words.isEmpty()) {
              out.add(words);
              words = new ArrayList<>();
            }
            i++;
          } else {
            w.append(c);
            inWord = true;
          }
        }
        case '<', '>' -> {
          // A redirection ends the word; its target is not a command argument.
          inWord = flush(w, words, inWord);
          while (i + 1 < n && (line.charAt(i + 1) == '>' || line.charAt(i + 1) == '&')) {
            i++;
          }
          while (i + 1 < n && line.charAt(i + 1) == ' ') {
            i++;
          }
          while (i + 1 < n && " \t;&|<>()\n".indexOf(line.charAt(i + 1)) < 0) {
            i++;
          }
        }
        default -> {
          w.append(c);
          inWord = true;
        }
      }
    }
    flush(w, words, inWord);
    if (!words.isEmpty()) {
      out.add(words);
    }
    return out;
  }

  private static boolean flush(StringBuilder w, List<String> words, boolean inWord) {
    if (inWord) {
      words.add(w.toString());
      w.setLength(0);
    }
    return false;
  }
}
