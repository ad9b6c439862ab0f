package io.agentnest.internal.approval;

import io.agentnest.internal.approval.ShellLexer.Word;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Programs that run another program given on their command line ({@code sudo -u root rm x}, {@code
 * timeout 5s rm x}, {@code flock /tmp/l -c 'rm x'}): which of their options take a value, how many
 * plain arguments come before the command, and which options carry a whole command line. With
 * those, the approval rules find the command word behind any number of wrappers.
 */
final class ShellWrappers {
  /**
   * How one wrapper reads its arguments.
   *
   * @param valueOptions options followed by a value ({@code -u root}, {@code --user root})
   * @param scriptOptions options whose value is a command line ({@code env -S}, {@code flock -c})
   * @param positionals plain arguments before the command ({@code timeout}'s duration, {@code
   *     chroot}'s directory)
   * @param runsCommand whether the rest of the line is a command to run (false: only a script
   *     option runs anything, as in {@code su -c} or {@code script -c})
   */
  record Spec(
      Set<String> valueOptions, Set<String> scriptOptions, int positionals, boolean runsCommand) {}

  /**
   * Where the wrapped command starts ({@code words.size()} when there is none) and the command
   * lines that options or arguments of the wrapper hand to a shell.
   */
  record Unwrapped(int commandIndex, List<Word> scripts) {}

  private static Spec spec(String valueOptions, int positionals) {
    return new Spec(options(valueOptions), Set.of(), positionals, true);
  }

  private static Spec spec(String valueOptions, String scriptOptions, int positionals) {
    return new Spec(options(valueOptions), options(scriptOptions), positionals, true);
  }

  private static Set<String> options(String spaced) {
    return spaced.isBlank() ? Set.of() : Set.of(spaced.trim().split("\\s+"));
  }

  private static final Map<String, Spec> WRAPPERS =
      Map.ofEntries(
          Map.entry(
              "sudo",
              spec(
                  "-C -D -g -h -p -R -r -t -T -U -u --close-from --chdir --group --host --prompt"
                      + " --chroot --role --type --command-timeout --other-user --user",
                  0)),
          Map.entry("doas", spec("-u -C", 0)),
          Map.entry("pkexec", spec("--user", 0)),
          Map.entry("env", spec("-u -C -P --unset --chdir", "-S --split-string", 0)),
          Map.entry("nohup", spec("", 0)),
          Map.entry("nice", spec("-n --adjustment", 0)),
          Map.entry("time", spec("-f -o --format --output", 0)),
          Map.entry("timeout", spec("-s -k --signal --kill-after", 1)),
          Map.entry(
              "xargs",
              spec(
                  "-a -d -E -I -L -n -P -s --arg-file --delimiter --max-args --max-procs"
                      + " --max-chars --process-slot-var",
                  0)),
          Map.entry("command", spec("", 0)),
          Map.entry("builtin", spec("", 0)),
          Map.entry("exec", spec("-a", 0)),
          Map.entry("stdbuf", spec("-i -o -e --input --output --error", 0)),
          Map.entry("setsid", spec("", 0)),
          Map.entry("chroot", spec("--userspec --groups", 1)),
          Map.entry("flock", spec("-w -E --timeout --conflict-exit-code", "-c --command", 1)),
          Map.entry(
              "unshare",
              spec(
                  "-S -G -R -w --setuid --setgid --root --wd --propagation --setgroups --map-user"
                      + " --map-group --map-users --map-groups --monotonic --boottime",
                  0)),
          Map.entry("nsenter", spec("-t -S -G --target --setuid --setgid --env --user-parent", 0)),
          Map.entry("ionice", spec("-c -n -p -P -u --class --classdata --pid --pgid --uid", 0)),
          Map.entry("chrt", spec("-T -P -D --sched-runtime --sched-period --sched-deadline", 1)),
          Map.entry("taskset", spec("", 1)),
          Map.entry("setarch", spec("", 1)),
          Map.entry("faketime", spec("-m -f", 1)),
          Map.entry("prlimit", spec("-p --pid", 0)),
          Map.entry("setpriv", spec("--reuid --regid --groups --inh-caps --ambient-caps", 0)),
          Map.entry("fakeroot", spec("-l -s -i --lib --faked", 0)),
          Map.entry("strace", spec("-o -e -p -s -u -E -a -b -I -O -P -S -X --output --signal", 0)),
          Map.entry("ltrace", spec("-o -e -p -s -u -n -a -A -D -F -l -w --output", 0)),
          Map.entry("catchsegv", spec("", 0)),
          Map.entry("unbuffer", spec("", 0)),
          Map.entry("busybox", spec("", 0)),
          Map.entry(
              "script", new Spec(options("-E -I -O -B -T -m"), options("-c --command"), 0, false)),
          Map.entry(
              "su",
              new Spec(
                  options("-g -G -s -w --group --supp-group --shell --whitelist-environment"),
                  options("-c --command --session-command"),
                  0,
                  false)),
          Map.entry(
              "runuser",
              new Spec(
                  options("-u -g -G -s -w --user --group --supp-group --shell"),
                  options("-c --command --session-command"),
                  0,
                  true)));

  private static final Set<String> SHELLS =
      Set.of("sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "posh", "yash", "rbash");

  /** Commands that run their arguments, joined with spaces, as a command line. */
  private static final Set<String> JOINED = Set.of("eval", "watch");

  private ShellWrappers() {}

  static boolean isWrapper(String name) {
    return WRAPPERS.containsKey(name) || SHELLS.contains(name) || JOINED.contains(name);
  }

  /** Reads the arguments of wrapper {@code name} starting at {@code from}. */
  static Unwrapped unwrap(String name, List<Word> words, int from) {
    if (SHELLS.contains(name)) {
      return shell(words, from);
    }
    if (JOINED.contains(name)) {
      int j = from;
      if (name.equals("watch")) {
        j = options(spec("-n -d --interval", 0), words, j, new ArrayList<>(), false);
      }
      List<Word> rest = words.subList(j, words.size());
      if (rest.isEmpty()) {
        return new Unwrapped(words.size(), List.of());
      }
      String joined = String.join(" ", rest.stream().map(Word::text).toList());
      boolean expanded = rest.stream().anyMatch(Word::expanded);
      return new Unwrapped(words.size(), List.of(new Word(joined, expanded)));
    }
    Spec spec = WRAPPERS.get(name);
    List<Word> scripts = new ArrayList<>();
    if (spec == null) {
      return new Unwrapped(from, scripts);
    }
    if (name.equals("command")
        && from < words.size()
        && (words.get(from).text().equals("-v") || words.get(from).text().equals("-V"))) {
      return new Unwrapped(words.size(), scripts); // a lookup, nothing runs
    }
    // su and runuser take their options anywhere on the line (su root -c 'rm x').
    boolean anywhere = name.equals("su") || name.equals("runuser");
    int j = options(spec, words, from, scripts, anywhere);
    return new Unwrapped(spec.runsCommand() ? j : words.size(), scripts);
  }

  /**
   * Skips the wrapper's options and positionals; returns the index of the command word. Script
   * option values are added to {@code scripts}.
   */
  private static int options(
      Spec spec, List<Word> words, int from, List<Word> scripts, boolean anywhere) {
    int positionals = spec.positionals();
    int j = from;
    boolean optionsDone = false;
    while (j < words.size()) {
      String t = words.get(j).text();
      if (!optionsDone && t.equals("--")) {
        optionsDone = true;
        j++;
      } else if (!optionsDone && t.equals("-")) {
        j++;
      } else if (!optionsDone && t.startsWith("--")) {
        int eq = t.indexOf('=');
        String name = eq < 0 ? t : t.substring(0, eq);
        boolean script = spec.scriptOptions().contains(name);
        if (eq >= 0) {
          addIf(script, new Word(t.substring(eq + 1), words.get(j).expanded()), scripts);
          j++;
        } else if (script || spec.valueOptions().contains(name)) {
          if (j + 1 < words.size()) {
            addIf(script, words.get(j + 1), scripts);
          }
          j += 2;
        } else {
          j++;
        }
      } else if (!optionsDone && t.startsWith("-") && t.length() > 1) {
        j++;
        for (int k = 1; k < t.length(); k++) {
          String opt = "-" + t.charAt(k);
          boolean script = spec.scriptOptions().contains(opt);
          if (script || spec.valueOptions().contains(opt)) {
            Word value = new Word(t.substring(k + 1), words.get(j - 1).expanded());
            if (value.text().isEmpty() && j < words.size()) {
              value = words.get(j);
              j++;
            }
            addIf(script, value, scripts);
            break;
          }
        }
      } else if (positionals > 0) {
        positionals--;
        j++;
      } else if (anywhere && !optionsDone) {
        j++;
      } else {
        break;
      }
    }
    return Math.min(j, words.size());
  }

  private static void addIf(boolean condition, Word script, List<Word> scripts) {
    if (condition && !script.text().isEmpty()) {
      scripts.add(script);
    }
  }

  /** {@code sh -c 'script'} runs the script; {@code sh file} runs a file the rules cannot read. */
  private static Unwrapped shell(List<Word> words, int from) {
    int j = from;
    boolean command = false;
    while (j < words.size()) {
      String t = words.get(j).text();
      if (t.equals("--") || t.equals("-")) {
        j++;
        break;
      }
      if (t.startsWith("--")) {
        j += t.equals("--rcfile") || t.equals("--init-file") ? 2 : 1;
      } else if ((t.startsWith("-") || t.startsWith("+")) && t.length() > 1) {
        j++;
        command |= t.indexOf('c', 1) > 0;
        if (t.indexOf('o', 1) > 0 || t.indexOf('O', 1) > 0) {
          j++; // -o pipefail, +O extglob
        }
      } else {
        break;
      }
    }
    if (command && j < words.size()) {
      return new Unwrapped(words.size(), List.of(words.get(j)));
    }
    return new Unwrapped(words.size(), List.of());
  }
}
