package io.agentnest.internal.approval;

import io.agentnest.ApprovalPolicy;
import io.agentnest.ApprovalPolicy.Action;
import io.agentnest.internal.approval.ShellLexer.Command;
import io.agentnest.internal.approval.ShellLexer.Word;
import io.agentnest.internal.support.Bounded;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Decides what a shell command line needs under an {@link ApprovalPolicy}, before it runs: the
 * policy's own patterns, plus the built-in detection of deletions and system modifications. It
 * reads the command as the shell would split it (see {@link ShellLexer}), looks through wrappers
 * ({@link ShellWrappers}) and nested command lines ({@code bash -c}), and fails closed where it
 * cannot know: a command longer than it reads, or a command word the shell only expands when it
 * runs, gets the strictest action the policy has. What a script file, an alias or a program's own
 * logic does is not seen: a guard rail, documented as such.
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

  /** Words that start a compound command; the command word follows them. */
  private static final Set<String> RESERVED =
      Set.of("!", "if", "then", "elif", "else", "while", "until", "do", "[[");

  /** find actions that run a command, up to {@code ;} or {@code +}. */
  private static final Set<String> FIND_EXEC = Set.of("-exec", "-execdir", "-ok", "-okdir");

  private static final Set<String> GIT_VALUE_OPTIONS =
      Set.of(
          "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env");

  private static final Set<String> HARMLESS_TARGETS =
      Set.of("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero");

  private static final Pattern ASSIGNMENT = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*\\+?=.*");

  private ShellClassifier() {}

  /** The strictest verdict for {@code command} under {@code policy}. */
  public static Verdict classify(String command, ApprovalPolicy policy) {
    return classify(command, policy, 0);
  }

  /** The strictest action any rule of {@code policy} has, with {@code reason}. */
  static Verdict strictest(ApprovalPolicy policy, String reason) {
    Action a = policy.fileDeletion().max(policy.systemModification());
    for (ApprovalPolicy.ShellRule r : policy.shellRules()) {
      a = a.max(r.action());
    }
    return new Verdict("shell", a, reason);
  }

  private static boolean judgesCommands(ApprovalPolicy p) {
    return p.fileDeletion() != Action.ALLOW
        || p.systemModification() != Action.ALLOW
        || p.shellRules().stream().anyMatch(r -> r.action() != Action.ALLOW);
  }

  private static Verdict classify(String command, ApprovalPolicy policy, int depth) {
    Verdict best = patterns(command, policy, Verdict.ALLOW);
    if (!judgesCommands(policy)) {
      return best;
    }
    if (depth > ShellLexer.MAX_DEPTH) {
      return best.stricter(strictest(policy, "command lines nested too deep to follow"));
    }
    ShellLexer.Result lexed = ShellLexer.lex(command);
    if (lexed.incomplete()) {
      best =
          best.stricter(
              strictest(
                  policy,
                  command.length() > ShellLexer.MAX_CHARS
                      ? "the command is "
                          + command.length()
                          + " characters long, longer than the "
                          + ShellLexer.MAX_CHARS
                          + " the approval rules read: split it up or put it in a script"
                      : "the command nests substitutions deeper than the approval rules follow"));
    }
    StringBuilder line = new StringBuilder();
    for (Command c : lexed.commands()) {
      Analysis a = analyse(c.words(), policy, depth);
      best = best.stricter(a.verdict());
      if (!a.canonical().isEmpty()) {
        // The command as the program sees it, so that a pattern like \bgit\s+push\b is not
        // dodged by git -c k=v push, a wrapper, a path or quotes.
        best = patterns(a.canonical(), policy, best);
        line.append(a.canonical()).append(' ').append(c.separator()).append(' ');
      }
    }
    best = patterns(line.toString(), policy, best);
    if (policy.systemModification() != Action.ALLOW) {
      for (Word target : lexed.outputTargets()) {
        if (isOutside(target.text(), policy.writablePaths())) {
          best =
              best.stricter(
                  new Verdict(
                      "system.modify",
                      policy.systemModification(),
                      "redirects output to " + target.text() + ", outside the writable paths"));
        }
      }
    }
    return best;
  }

  private static Verdict patterns(String text, ApprovalPolicy policy, Verdict best) {
    Verdict out = best;
    for (ApprovalPolicy.ShellRule rule : policy.shellRules()) {
      BoundedText bounded = new BoundedText(text, MATCH_STEPS);
      try {
        if (rule.pattern().matcher(bounded).find()) {
          out =
              out.stricter(new Verdict("shell", rule.action(), "matches /" + rule.pattern() + "/"));
        }
      } catch (BoundedText.Exhausted e) {
        // A pattern that backtracks without end (given by a tenant, or by mistake) must not hold
        // the host's thread: the rule counts as matching, so its action applies (fail closed).
        out =
            out.stricter(
                new Verdict(
                    "shell",
                    rule.action(),
                    "/"
                        + rule.pattern()
                        + "/ took more than "
                        + MATCH_STEPS
                        + " steps on this command: treated as matching; simplify the pattern"));
      }
    }
    return out;
  }

  /** Characters a pattern may read per command before it counts as matching (a few ms). */
  static final int MATCH_STEPS = 2_000_000;

  /** A simple command's verdict, and its text with wrappers taken off (for the patterns). */
  private record Analysis(Verdict verdict, String canonical) {}

  private static Analysis analyse(List<Word> words, ApprovalPolicy policy, int depth) {
    Verdict best = Verdict.ALLOW;
    int i = 0;
    int wrapper = -1;
    while (true) {
      while (i < words.size()
          && (RESERVED.contains(words.get(i).text()) && !words.get(i).expanded()
              || ASSIGNMENT.matcher(words.get(i).text()).matches())) {
        i++;
      }
      if (i >= words.size()) {
        // Nothing wrapped (sh -c '...', su -c '...'): the patterns see the wrapper itself.
        return new Analysis(best, wrapper < 0 ? "" : text(words.subList(wrapper, words.size())));
      }
      Word w = words.get(i);
      if (w.expanded()) {
        return new Analysis(best.stricter(unresolved(policy, w.text())), "");
      }
      String name = basename(w.text());
      if (!ShellWrappers.isWrapper(name)) {
        break;
      }
      wrapper = i;
      ShellWrappers.Unwrapped u = ShellWrappers.unwrap(name, words, i + 1);
      for (Word script : u.scripts()) {
        best =
            best.stricter(
                script.expanded()
                    ? unresolved(policy, script.text())
                    : classify(script.text(), policy, depth + 1));
      }
      i = u.commandIndex();
    }
    String cmd = basename(words.get(i).text());
    List<Word> argWords = words.subList(i + 1, words.size());
    List<String> args = argWords.stream().map(Word::text).toList();
    if (cmd.equals("git")) {
      return git(args, policy, best);
    }
    for (Verdict v : builtIn(cmd, args, policy)) {
      best = best.stricter(v);
    }
    if (cmd.equals("find")) {
      best = best.stricter(findActions(argWords, policy, depth));
    }
    return new Analysis(best, (cmd + " " + String.join(" ", args)).strip());
  }

  /** The words as one line, the command word by its name (the patterns' view). */
  private static String text(List<Word> words) {
    List<String> out = new ArrayList<>();
    for (Word w : words) {
      out.add(out.isEmpty() ? basename(w.text()) : w.text());
    }
    return String.join(" ", out);
  }

  private static Verdict unresolved(ApprovalPolicy policy, String word) {
    return strictest(
        policy,
        "the command '"
            + Bounded.text(word, 100)
            + "' is only known when the shell expands it (a glob, brace or $'...' expansion, a"
            + " variable or a substitution), so the approval rules cannot tell what it runs:"
            + " spell the command out");
  }

  /** find -exec/-execdir/-ok/-okdir run the words up to ';' or '+' as a command. */
  private static Verdict findActions(List<Word> args, ApprovalPolicy policy, int depth) {
    Verdict best = Verdict.ALLOW;
    for (int k = 0; k < args.size(); k++) {
      if (!FIND_EXEC.contains(args.get(k).text())) {
        continue;
      }
      int end = k + 1;
      while (end < args.size()
          && !args.get(end).text().equals(";")
          && !args.get(end).text().equals("+")) {
        end++;
      }
      if (depth < ShellLexer.MAX_DEPTH) {
        best = best.stricter(analyse(args.subList(k + 1, end), policy, depth + 1).verdict());
      }
      k = end;
    }
    return best;
  }

  /** git, past its global options (-C dir, -c k=v, --git-dir ...), by subcommand. */
  private static Analysis git(List<String> args, ApprovalPolicy policy, Verdict best) {
    int j = 0;
    while (j < args.size() && args.get(j).startsWith("-")) {
      String a = args.get(j);
      String value = null;
      if (GIT_VALUE_OPTIONS.contains(a)) {
        value = j + 1 < args.size() ? args.get(j + 1) : "";
        j += 2;
      } else {
        if (a.startsWith("-c") && a.length() > 2) {
          value = a.substring(2);
        }
        j++;
      }
      if (("-c".equals(a) || a.startsWith("-c")) && value != null && value.startsWith("alias.")) {
        // An alias made on the command line runs whatever it says (even a shell command).
        return new Analysis(best.stricter(unresolved(policy, "git -c " + value)), "");
      }
    }
    List<String> rest = args.subList(Math.min(j, args.size()), args.size());
    Verdict out = best;
    if (policy.fileDeletion() != Action.ALLOW && !rest.isEmpty()) {
      String sub = rest.get(0);
      if (sub.equals("clean")) {
        out =
            out.stricter(
                new Verdict(
                    "file.delete", policy.fileDeletion(), "'git clean' deletes untracked files"));
      } else if (sub.equals("rm") && !rest.contains("--cached")) {
        out =
            out.stricter(
                new Verdict("file.delete", policy.fileDeletion(), "'git rm' deletes files"));
      }
    }
    return new Analysis(out, ("git " + String.join(" ", rest)).strip());
  }

  private static List<Verdict> builtIn(String cmd, List<String> args, ApprovalPolicy policy) {
    List<Verdict> out = new ArrayList<>();
    Action del = policy.fileDeletion();
    Action sys = policy.systemModification();
    if (del != Action.ALLOW) {
      String why = deletes(cmd, args);
      if (why != null) {
        out.add(new Verdict("file.delete", del, why));
      }
    }
    if (sys != Action.ALLOW) {
      if (MODE_COMMANDS.contains(cmd)) {
        out.add(new Verdict("system.modify", sys, "'" + cmd + "' changes file ownership or mode"));
      }
      if (isPackageInstall(cmd, args)) {
        out.add(new Verdict("system.modify", sys, "'" + cmd + "' installs or removes packages"));
      }
      for (String target : WriteTargets.of(cmd, args)) {
        if (isOutside(target, policy.writablePaths())) {
          out.add(
              new Verdict(
                  "system.modify",
                  sys,
                  "'" + cmd + "' writes " + target + ", outside the writable paths"));
          break;
        }
      }
    }
    return out;
  }

  private static @Nullable String deletes(String cmd, List<String> args) {
    if (DELETE_COMMANDS.contains(cmd)) {
      return "'" + cmd + "' deletes files";
    }
    if (cmd.equals("find") && args.contains("-delete")) {
      return "'find' with -delete deletes files";
    }
    if (cmd.equals("rsync")
        && args.stream()
            .anyMatch(
                a ->
                    a.startsWith("--delete")
                        || a.equals("--remove-source-files")
                        || a.equals("--remove-sent-files"))) {
      return "'rsync' with --delete or --remove-source-files deletes files";
    }
    if (cmd.equals("tar") && args.contains("--remove-files")) {
      return "'tar --remove-files' deletes the files it archives";
    }
    if (cmd.equals("mv") && mayClobber(args)) {
      return "'mv' deletes its target when one exists (mv -n keeps an existing file)";
    }
    return null;
  }

  /**
   * Whether {@code mv} with these arguments may replace an existing target: a move onto a file
   * destroys that file as surely as rm does, and this classifier cannot know whether the target
   * exists when the command runs. Only no-clobber ({@code -n}, {@code --no-clobber}, {@code
   * --update=none}) or a backup ({@code -b}, {@code --backup}) keeps it; the last of {@code -n},
   * {@code -i} and {@code -f} wins, as in GNU mv.
   */
  static boolean mayClobber(List<String> args) {
    boolean clobber = true;
    boolean backup = false;
    for (int i = 0; i < args.size(); i++) {
      String a = args.get(i);
      if (a.equals("--")) {
        break;
      }
      if (a.startsWith("--")) {
        switch (a) {
          case "--no-clobber", "--update=none", "--update=none-fail" -> clobber = false;
          case "--force", "--interactive" -> clobber = true;
          case "--target-directory", "--suffix" -> i++;
          default -> {
            if (a.startsWith("--backup")) {
              backup = true;
            }
          }
        }
      } else if (a.startsWith("-") && a.length() > 1) {
        for (int c = 1; c < a.length(); c++) {
          char ch = a.charAt(c);
          if (ch == 'n') {
            clobber = false;
          } else if (ch == 'f' || ch == 'i') {
            clobber = true;
          } else if (ch == 'b') {
            backup = true;
          } else if (ch == 't' || ch == 'S') {
            // The rest of the word, or the next word, is the option's value.
            if (c == a.length() - 1) {
              i++;
            }
            break;
          }
        }
      }
    }
    return clobber && !backup;
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

  /** Whether an absolute path lies outside every writable directory. Relative paths are inside. */
  static boolean isOutside(String path, List<String> writable) {
    if (!path.startsWith("/") || HARMLESS_TARGETS.contains(path) || path.startsWith("/dev/fd/")) {
      return false;
    }
    String norm;
    try {
      norm = Path.of(path).normalize().toString();
    } catch (InvalidPathException e) {
      return true; // not a path this host can even read: not inside anything
    }
    for (String w : writable) {
      if (w.equals("/") || norm.equals(w) || norm.startsWith(w + "/")) {
        return false;
      }
    }
    return true;
  }

  private static String basename(String word) {
    int slash = word.lastIndexOf('/');
    return (slash >= 0 ? word.substring(slash + 1) : word).toLowerCase(Locale.ROOT);
  }
}
