package io.agentnest.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The {@code agentnest} invocations of a shell example, as the shell would split them: lines joined
 * at a trailing backslash, comments dropped, quotes removed, commands split at {@code && || ; | &},
 * redirections and leading {@code VAR=value} assignments left out. Enough of a shell for the docs'
 * examples; a construct it does not know (a loop, a here-document) is skipped, not guessed.
 */
final class ShellLines {
  private ShellLines() {}

  record Command(int lineInBlock, String shown, List<String> args) {}

  private static final Set<String> SEPARATORS = Set.of("&&", "||", ";", "|", "&");
  private static final Set<String> WRAPPERS = Set.of("sudo", "env", "time", "exec", "nohup");

  static List<Command> commands(String text) {
    List<Command> out = new ArrayList<>();
    String[] lines = text.split("\n", -1);
    // A transcript: only the lines after a "$ " prompt are commands, the rest is their output.
    boolean transcript = text.startsWith("$ ") || text.contains("\n$ ");
    StringBuilder logical = new StringBuilder();
    int startLine = 1;
    boolean inHeredoc = false;
    String heredocEnd = "";
    for (int i = 0; i < lines.length; i++) {
      String line = lines[i];
      if (inHeredoc) {
        if (line.strip().equals(heredocEnd)) {
          inHeredoc = false;
        }
        continue;
      }
      if (logical.length() == 0) {
        startLine = i + 1;
        if (transcript && !line.startsWith("$ ")) {
          continue;
        }
      }
      if (line.endsWith("\\")) {
        logical.append(line, 0, line.length() - 1).append(' ');
        continue;
      }
      logical.append(line);
      String full = logical.toString().strip();
      logical.setLength(0);
      if (full.startsWith("$ ")) {
        full = full.substring(2);
      }
      int heredoc = full.indexOf("<<");
      if (heredoc >= 0) {
        heredocEnd = full.substring(heredoc + 2).replaceAll("[-'\"]", "").strip().split("\\s+")[0];
        inHeredoc = !heredocEnd.isEmpty();
        full = full.substring(0, heredoc);
      }
      List<String> words = words(full);
      if (words == null) {
        continue; // an unclosed quote or a construct this reader does not know
      }
      List<String> current = new ArrayList<>();
      for (String w : words) {
        if (SEPARATORS.contains(w)) {
          add(out, startLine, current);
          current = new ArrayList<>();
        } else {
          current.add(w);
        }
      }
      add(out, startLine, current);
    }
    return out;
  }

  private static void add(List<Command> out, int line, List<String> words) {
    int i = 0;
    while (i < words.size()
        && (words.get(i).matches("[A-Za-z_][A-Za-z0-9_]*=.*") || WRAPPERS.contains(words.get(i)))) {
      i++;
    }
    if (i >= words.size()) {
      return;
    }
    String first = words.get(i);
    int argsFrom;
    if (first.equals("agentnest") || first.endsWith("/agentnest")) {
      argsFrom = i + 1;
    } else if (first.equals("java")
        && words.size() > i + 2
        && words.get(i + 1).equals("-jar")
        && words.get(i + 2).endsWith("agentnest.jar")) {
      argsFrom = i + 3;
    } else {
      return;
    }
    List<String> args = new ArrayList<>();
    for (int k = argsFrom; k < words.size(); k++) {
      String w = words.get(k);
      if (w.matches("\\d?[<>]{1,2}&?\\d?")) {
        k++; // a redirection and its target
        continue;
      }
      if (w.matches("\\d?[<>]{1,2}.+")) {
        continue; // a redirection written in one word: >out.txt, 2>&1
      }
      args.add(w);
    }
    out.add(new Command(line, String.join(" ", words.subList(i, words.size())), args));
  }

  /** Shell words of one logical line, quotes removed; null when a quote is not closed. */
  static List<String> words(String line) {
    List<String> out = new ArrayList<>();
    StringBuilder w = new StringBuilder();
    boolean inWord = false;
    for (int i = 0; i < line.length(); i++) {
      char c = line.charAt(i);
      if (c == '#' && !inWord) {
        break; // a comment
      }
      if (c == '\'' || c == '"') {
        int end = line.indexOf(c, i + 1);
        if (end < 0) {
          return null;
        }
        w.append(line, i + 1, end);
        inWord = true;
        i = end;
      } else if (Character.isWhitespace(c)) {
        if (inWord) {
          out.add(w.toString());
          w.setLength(0);
          inWord = false;
        }
      } else if (c == ';' || c == '|' || c == '&') {
        if (inWord && !(c == '&' && w.length() > 0 && w.charAt(w.length() - 1) == '>')) {
          out.add(w.toString());
          w.setLength(0);
          inWord = false;
        } else if (inWord) {
          w.append(c); // 2>&1
          continue;
        }
        if (i + 1 < line.length() && line.charAt(i + 1) == c && c != ';') {
          out.add(String.valueOf(c) + c);
          i++;
        } else {
          out.add(String.valueOf(c));
        }
      } else if (c == '\\' && i + 1 < line.length()) {
        w.append(line.charAt(++i));
        inWord = true;
      } else {
        w.append(c);
        inWord = true;
      }
    }
    if (inWord) {
      out.add(w.toString());
    }
    return out;
  }
}
