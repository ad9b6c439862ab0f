package io.agentnest.internal.approval;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Where a command writes, read from its arguments the way the program reads them (options that take
 * a value, {@code -t DIR}, {@code of=}, in-place editing), so the approval rules can tell a write
 * outside the writable paths. Knows the common coreutils, editors, archivers and downloaders; any
 * other program's writes are not seen (a guard rail).
 */
final class WriteTargets {
  private WriteTargets() {}

  /** A command's arguments split into options (with their values) and plain arguments. */
  private record Parsed(Map<String, List<String>> options, List<String> positionals) {
    boolean has(String... names) {
      for (String n : names) {
        if (options.containsKey(n)) {
          return true;
        }
      }
      return false;
    }

    List<String> values(String... names) {
      List<String> out = new ArrayList<>();
      for (String n : names) {
        out.addAll(options.getOrDefault(n, List.of()));
      }
      return out;
    }
  }

  private static final Set<String> COPY_VALUES =
      Set.of("-S", "-t", "--suffix", "--target-directory");
  private static final Set<String> INSTALL_VALUES =
      Set.of(
          "-m",
          "-o",
          "-g",
          "-S",
          "-t",
          "--mode",
          "--owner",
          "--group",
          "--suffix",
          "--target-directory");
  private static final Set<String> RSYNC_VALUES =
      Set.of(
          "-e",
          "-f",
          "-T",
          "-B",
          "-M",
          "--rsh",
          "--filter",
          "--exclude",
          "--include",
          "--exclude-from",
          "--include-from",
          "--files-from",
          "--temp-dir",
          "--partial-dir",
          "--compare-dest",
          "--copy-dest",
          "--link-dest",
          "--block-size",
          "--rsync-path",
          "--max-delete",
          "--max-size",
          "--min-size",
          "--timeout",
          "--contimeout",
          "--remote-option",
          "--out-format",
          "--log-file",
          "--log-file-format",
          "--password-file",
          "--bwlimit",
          "--chmod",
          "--chown",
          "--usermap",
          "--groupmap",
          "--backup-dir",
          "--suffix",
          "--port",
          "--sockopts",
          "--iconv",
          "--checksum-choice",
          "--compress-choice",
          "--compress-level",
          "--skip-compress",
          "--modify-window");
  private static final Set<String> TAR_VALUES =
      Set.of(
          "-f",
          "-C",
          "-T",
          "-X",
          "-b",
          "-H",
          "-K",
          "-N",
          "-g",
          "-V",
          "-I",
          "--file",
          "--directory",
          "--files-from",
          "--exclude-from",
          "--exclude",
          "--transform",
          "--owner",
          "--group",
          "--mode",
          "--mtime",
          "--newer",
          "--listed-incremental",
          "--label",
          "--blocking-factor",
          "--format",
          "--use-compress-program");

  /** Every path {@code cmd} with {@code args} may write; relative ones are judged inside. */
  static List<String> of(String cmd, List<String> args) {
    return switch (cmd) {
      case "cp", "mv", "ln" -> copyTarget(parse(args, COPY_VALUES, Set.of()));
      case "install" -> {
        Parsed p = parse(args, INSTALL_VALUES, Set.of());
        yield p.has("-d", "--directory") ? p.positionals() : copyTarget(p);
      }
      case "rsync" -> copyTarget(parse(args, RSYNC_VALUES, Set.of()));
      case "touch" ->
          parse(args, Set.of("-d", "-t", "-r", "--date", "--reference"), Set.of()).positionals();
      case "mkdir" -> parse(args, Set.of("-m", "--mode"), Set.of()).positionals();
      case "truncate" ->
          parse(args, Set.of("-s", "-r", "--size", "--reference"), Set.of()).positionals();
      case "tee" -> parse(args, Set.of(), Set.of()).positionals();
      case "dd" -> args.stream().filter(a -> a.startsWith("of=")).map(a -> a.substring(3)).toList();
      case "sed" -> sed(args);
      case "perl" -> perl(args);
      case "tar" -> tar(args);
      case "curl" ->
          parse(args, Set.of("-o", "--output", "--output-dir"), Set.of())
              .values("-o", "--output", "--output-dir");
      case "wget" ->
          parse(
                  args,
                  Set.of(
                      "-O",
                      "-P",
                      "-o",
                      "-a",
                      "--output-document",
                      "--directory-prefix",
                      "--output-file",
                      "--append-output"),
                  Set.of())
              .values(
                  "-O",
                  "-P",
                  "-o",
                  "-a",
                  "--output-document",
                  "--directory-prefix",
                  "--output-file",
                  "--append-output");
      case "unzip" -> parse(args, Set.of("-d"), Set.of()).values("-d");
      default -> List.of();
    };
  }

  /** cp/mv/ln/install/rsync: the -t directory, else the last of two or more plain arguments. */
  private static List<String> copyTarget(Parsed p) {
    List<String> out = new ArrayList<>(p.values("-t", "--target-directory"));
    if (out.isEmpty() && p.positionals().size() >= 2) {
      out.add(p.positionals().get(p.positionals().size() - 1));
    }
    return out;
  }

  /** sed -i / --in-place edits its file arguments; the script is not one of them. */
  private static List<String> sed(List<String> args) {
    Set<String> values = Set.of("-e", "-f", "-l", "--expression", "--file", "--line-length");
    Parsed p = parse(args, values, Set.of("-i"));
    if (!p.has("-i", "--in-place")) {
      return List.of();
    }
    List<String> files = p.positionals();
    boolean scriptGiven = p.has("-e", "-f", "--expression", "--file");
    return scriptGiven || files.isEmpty() ? files : files.subList(1, files.size());
  }

  /** perl -i edits the files after the program (-e code, or the script file). */
  private static List<String> perl(List<String> args) {
    Parsed p =
        parse(
            args,
            Set.of("-e", "-E"),
            Set.of("-i", "-I", "-M", "-m", "-x", "-d", "-D", "-C", "-l", "-0", "-V"));
    if (!p.has("-i")) {
      return List.of();
    }
    List<String> files = p.positionals();
    return p.has("-e", "-E") || files.isEmpty() ? files : files.subList(1, files.size());
  }

  /** tar writes the -C directory when it extracts, and the -f archive when it creates. */
  private static List<String> tar(List<String> args) {
    Parsed p = parse(args, TAR_VALUES, Set.of());
    // Old style: the first argument is the bundled letters without a dash ("xzf").
    String bundle = !args.isEmpty() && !args.get(0).startsWith("-") ? args.get(0) : "";
    boolean extract = p.has("-x", "--extract", "--get") || bundle.indexOf('x') >= 0;
    boolean create =
        p.has("-c", "--create", "-r", "--append", "-u", "--update")
            || bundle.indexOf('c') >= 0
            || bundle.indexOf('r') >= 0;
    List<String> out = new ArrayList<>();
    if (extract) {
      out.addAll(p.values("-C", "--directory"));
    }
    if (create) {
      out.addAll(p.values("-f", "--file"));
    }
    return out;
  }

  /**
   * Splits arguments: {@code valueOptions} take the next word (or the rest of a short cluster, or
   * what follows '='); {@code attached} short options take only the rest of their cluster (sed
   * -i.bak); everything after {@code --} is a plain argument.
   */
  private static Parsed parse(List<String> args, Set<String> valueOptions, Set<String> attached) {
    Map<String, List<String>> options = new LinkedHashMap<>();
    List<String> positionals = new ArrayList<>();
    boolean done = false;
    for (int j = 0; j < args.size(); j++) {
      String a = args.get(j);
      if (done || a.equals("-") || !a.startsWith("-")) {
        positionals.add(a);
      } else if (a.equals("--")) {
        done = true;
      } else if (a.startsWith("--")) {
        int eq = a.indexOf('=');
        String name = eq < 0 ? a : a.substring(0, eq);
        String value = "";
        if (eq >= 0) {
          value = a.substring(eq + 1);
        } else if (valueOptions.contains(name) && j + 1 < args.size()) {
          value = args.get(++j);
        }
        options.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
      } else {
        for (int k = 1; k < a.length(); k++) {
          String opt = "-" + a.charAt(k);
          String rest = a.substring(k + 1);
          if (valueOptions.contains(opt)) {
            if (rest.isEmpty() && j + 1 < args.size()) {
              rest = args.get(++j);
            }
            options.computeIfAbsent(opt, x -> new ArrayList<>()).add(rest);
            break;
          }
          if (attached.contains(opt)) {
            options.computeIfAbsent(opt, x -> new ArrayList<>()).add(rest);
            break;
          }
          options.computeIfAbsent(opt, x -> new ArrayList<>()).add("");
        }
      }
    }
    return new Parsed(options, positionals);
  }
}
