package io.agentnest.internal.approval;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits a shell command line into simple commands of words, the way a POSIX shell would before it
 * expands anything: quotes removed, {@code $'...'} decoded, command and process substitutions
 * parsed as commands of their own. Not a full shell parser: enough for the approval rules to find
 * every command word and to know which words the shell would still expand when it runs (those
 * cannot be judged before).
 *
 * <p>Reads at most {@link #MAX_CHARS} characters and nests at most {@link #MAX_DEPTH} levels; past
 * either the result says {@link Result#incomplete()}, so the caller can fail closed instead of
 * judging a command it did not read.
 */
final class ShellLexer {
  /** How much of a command line is read. */
  static final int MAX_CHARS = 64 * 1024;

  /** How deep substitutions and nested scripts ({@code bash -c}) are followed. */
  static final int MAX_DEPTH = 16;

  /**
   * One word after quote removal. {@code expanded}: the shell would still change it when it runs
   * (glob, brace expansion, ANSI-C or locale quoting, parameter, arithmetic or command
   * substitution), so {@code text} is not necessarily what the program sees.
   */
  record Word(String text, boolean expanded) {}

  /** A simple command's words, and the operator that ended it ({@code ;}, {@code |}, ...). */
  record Command(List<Word> words, String separator) {}

  /**
   * The commands found, the targets of output redirections, and whether anything was left unread
   * (too long or nested too deep).
   */
  record Result(List<Command> commands, List<Word> outputTargets, boolean incomplete) {}

  private final String s;
  private final int n;
  private int i;
  private boolean incomplete;
  private final List<Command> commands = new ArrayList<>();
  private final List<Word> outputTargets = new ArrayList<>();

  private ShellLexer(String line) {
    this.s = line;
    this.n = Math.min(line.length(), MAX_CHARS);
    this.incomplete = line.length() > MAX_CHARS;
  }

  static Result lex(String line) {
    ShellLexer l = new ShellLexer(line);
    l.list((char) 0, 0);
    return new Result(List.copyOf(l.commands), List.copyOf(l.outputTargets), l.incomplete);
  }

  /** Commands until {@code close} (a {@code )} or a backtick) or the end of the input. */
  private void list(char close, int depth) {
    if (depth > MAX_DEPTH) {
      incomplete = true;
      i = n;
      return;
    }
    List<Word> words = new ArrayList<>();
    boolean atWordStart = true;
    while (i < n) {
      char c = s.charAt(i);
      if (close != 0 && c == close) {
        i++;
        end(words, String.valueOf(close));
        return;
      }
      switch (c) {
        case ' ', '\t' -> {
          i++;
          atWordStart = true;
        }
        case '\\' -> {
          if (i + 1 < n && s.charAt(i + 1) == '\n') {
            i += 2; // line continuation
          } else {
            words.add(word(close, depth));
          }
        }
        case '#' -> {
          if (atWordStart) {
            while (i < n && s.charAt(i) != '\n') {
              i++;
            }
          } else {
            words.add(word(close, depth));
          }
        }
        case '\n', ';', '|', '(', ')' -> {
          words = end(words, operator());
          atWordStart = true;
        }
        case '&' -> {
          if (i + 1 < n && s.charAt(i + 1) == '>') {
            redirection(depth);
          } else {
            words = end(words, operator());
          }
          atWordStart = true;
        }
        case '<', '>' -> {
          redirection(depth);
          atWordStart = true;
        }
        default -> {
          Word w = word(close, depth);
          if (i < n && (s.charAt(i) == '<' || s.charAt(i) == '>') && isFd(w)) {
            redirection(depth); // "2>file": the number names a file descriptor, not an argument
          } else if (!w.expanded() && (w.text().equals("{") || w.text().equals("}"))) {
            words = end(words, w.text()); // grouping braces start and end commands
          } else {
            words.add(w);
          }
          atWordStart = false;
        }
      }
    }
    end(words, "");
  }

  private static boolean isFd(Word w) {
    return !w.expanded() && !w.text().isEmpty() && w.text().chars().allMatch(Character::isDigit);
  }

  private List<Word> end(List<Word> words, String separator) {
    if (!words.isEmpty()) {
      commands.add(new Command(List.copyOf(words), separator));
    }
    return new ArrayList<>();
  }

  private String operator() {
    int start = i;
    char c = s.charAt(i++);
    if ((c == '|' || c == '&' || c == ';') && i < n) {
      char d = s.charAt(i);
      if (d == c || (c == '|' && d == '&') || (c == ';' && d == '&')) {
        i++;
      }
    }
    return s.substring(start, i);
  }

  /** A redirection operator and its target; output targets are kept for the write checks. */
  private void redirection(int depth) {
    int start = i;
    while (i < n && "<>&|".indexOf(s.charAt(i)) >= 0 && i - start < 3) {
      i++;
    }
    String op = s.substring(start, i);
    if (i < n && s.charAt(i) == '(' && (op.equals("<") || op.equals(">"))) {
      i++;
      list(')', depth + 1); // process substitution: a command of its own
      return;
    }
    while (i < n && (s.charAt(i) == ' ' || s.charAt(i) == '\t')) {
      i++;
    }
    if (i >= n || "\n;|&()<>".indexOf(s.charAt(i)) >= 0) {
      return;
    }
    Word target = word((char) 0, depth);
    boolean output = op.contains(">");
    boolean fdDup = op.endsWith("&") && target.text().matches("[0-9]*-?");
    if (output && !fdDup) {
      outputTargets.add(target);
    }
  }

  /** One word, up to unquoted white space or an operator. */
  private Word word(char close, int depth) {
    StringBuilder w = new StringBuilder();
    boolean expanded = false;
    boolean openBracket = false;
    boolean openBrace = false;
    boolean braceList = false;
    while (i < n) {
      char c = s.charAt(i);
      if ((close != 0 && c == close) || " \t\n;&|()<>".indexOf(c) >= 0) {
        break;
      }
      switch (c) {
        case '\\' -> {
          if (i + 1 < n) {
            if (s.charAt(i + 1) != '\n') {
              w.append(s.charAt(i + 1));
            }
            i += 2;
          } else {
            i++;
          }
        }
        case '\'' -> {
          int end = s.indexOf('\'', i + 1);
          int stop = end < 0 || end >= n ? n : end;
          w.append(s, i + 1, stop);
          i = Math.min(stop + 1, n);
        }
        case '"' -> {
          i++;
          expanded |= doubleQuoted(w, depth);
        }
        case '$' -> expanded |= dollar(w, depth, false);
        case '`' -> {
          i++;
          list('`', depth + 1);
          expanded = true;
        }
        case '*', '?' -> {
          w.append(c);
          i++;
          expanded = true;
        }
        case '[' -> {
          w.append(c);
          i++;
          openBracket = true;
        }
        case ']' -> {
          w.append(c);
          i++;
          expanded |= openBracket;
        }
        case '{' -> {
          w.append(c);
          i++;
          openBrace = true;
        }
        case ',' -> {
          w.append(c);
          i++;
          braceList |= openBrace;
        }
        case '.' -> {
          w.append(c);
          i++;
          braceList |= openBrace && i < n && s.charAt(i) == '.';
        }
        case '}' -> {
          w.append(c);
          i++;
          expanded |= braceList;
        }
        default -> {
          w.append(c);
          i++;
        }
      }
    }
    return new Word(w.toString(), expanded);
  }

  /** The inside of {@code "..."} (after the opening quote); true when something in it expands. */
  private boolean doubleQuoted(StringBuilder w, int depth) {
    boolean expanded = false;
    while (i < n) {
      char c = s.charAt(i);
      if (c == '"') {
        i++;
        return expanded;
      }
      if (c == '\\' && i + 1 < n) {
        char d = s.charAt(i + 1);
        if ("$`\"\\".indexOf(d) >= 0) {
          w.append(d);
        } else if (d != '\n') {
          w.append(c).append(d);
        }
        i += 2;
      } else if (c == '$') {
        expanded |= dollar(w, depth, true);
      } else if (c == '`') {
        i++;
        list('`', depth + 1);
        expanded = true;
      } else {
        w.append(c);
        i++;
      }
    }
    return expanded;
  }

  /** A {@code $} at {@code i}: true when it starts an expansion. */
  private boolean dollar(StringBuilder w, int depth, boolean inDoubleQuotes) {
    char d = i + 1 < n ? s.charAt(i + 1) : 0;
    if (d == '(') {
      if (i + 2 < n && s.charAt(i + 2) == '(') {
        i += 3;
        skipBalanced('(', ')', 2, depth);
      } else {
        i += 2;
        list(')', depth + 1);
      }
      w.append("$(...)");
      return true;
    }
    if (d == '{') {
      i += 2;
      skipBalanced('{', '}', 1, depth);
      w.append("${...}");
      return true;
    }
    if (d == '\'' && !inDoubleQuotes) {
      i += 2;
      ansiC(w);
      return true;
    }
    if (d == '"' && !inDoubleQuotes) {
      i += 2;
      doubleQuoted(w, depth);
      return true; // locale translation: another text at run time
    }
    if (Character.isLetterOrDigit(d) || "_@*#?$!-".indexOf(d) >= 0 && d != 0) {
      int start = i;
      i += 2;
      if (Character.isLetter(d) || d == '_') {
        while (i < n && (Character.isLetterOrDigit(s.charAt(i)) || s.charAt(i) == '_')) {
          i++;
        }
      }
      w.append(s, start, i);
      return true;
    }
    w.append('$');
    i++;
    return false;
  }

  /**
   * Skips to the {@code depth}-th closing {@code close}; command substitutions inside are still
   * parsed as commands.
   */
  private void skipBalanced(char open, char close, int needed, int depth) {
    int level = needed;
    while (i < n && level > 0) {
      char c = s.charAt(i);
      if (c == '\\') {
        i = Math.min(i + 2, n);
      } else if (c == '\'' && open == '{') {
        int end = s.indexOf('\'', i + 1);
        i = end < 0 || end >= n ? n : end + 1;
      } else if (c == '$' && i + 1 < n && s.charAt(i + 1) == '(' && open == '{') {
        i += 2;
        list(')', depth + 1);
      } else if (c == '`') {
        i++;
        list('`', depth + 1);
      } else {
        if (c == open) {
          level++;
        } else if (c == close) {
          level--;
        }
        i++;
      }
    }
  }

  /** The inside of {@code $'...'} (after the opening quote), decoded as bash does. */
  private void ansiC(StringBuilder w) {
    while (i < n) {
      char c = s.charAt(i++);
      if (c == '\'') {
        return;
      }
      if (c != '\\' || i >= n) {
        w.append(c);
        continue;
      }
      char e = s.charAt(i++);
      switch (e) {
        case 'a' -> w.append('\u0007');
        case 'b' -> w.append('\b');
        case 'e', 'E' -> w.append('\u001b');
        case 'f' -> w.append('\f');
        case 'n' -> w.append('\n');
        case 'r' -> w.append('\r');
        case 't' -> w.append('\t');
        case 'v' -> w.append('\u000b');
        case 'x' -> w.appendCodePoint(number(16, 2));
        case 'u' -> w.appendCodePoint(number(16, 4));
        case 'U' -> w.appendCodePoint(Math.min(number(16, 8), Character.MAX_CODE_POINT));
        case 'c' -> {
          if (i < n) {
            w.append((char) (s.charAt(i++) & 0x1f));
          }
        }
        default -> {
          if (e >= '0' && e <= '7') {
            i--;
            w.append((char) (number(8, 3) & 0xff));
          } else {
            w.append(e);
          }
        }
      }
    }
  }

  private int number(int radix, int maxDigits) {
    int v = 0;
    int digits = 0;
    while (i < n && digits < maxDigits && Character.digit(s.charAt(i), radix) >= 0) {
      v = v * radix + Character.digit(s.charAt(i++), radix);
      digits++;
    }
    return v;
  }
}
