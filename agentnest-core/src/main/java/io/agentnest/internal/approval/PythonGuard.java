package io.agentnest.internal.approval;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ApprovalPolicy;
import io.agentnest.ApprovalPolicy.Action;
import io.agentnest.internal.support.Json;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.jspecify.annotations.Nullable;

/**
 * The Python side of an {@link ApprovalPolicy}: which audit events (PEP 578) a session's worker
 * reports, and what a reported event needs. The worker only reports; the host decides, so the rules
 * live in one place. The hook runs inside the interpreter the sandboxed code controls: a guard rail
 * for cooperative code, not a boundary.
 */
public final class PythonGuard {
  static final List<String> DELETE_EVENTS = List.of("os.remove", "os.rmdir", "shutil.rmtree");
  static final List<String> MODE_EVENTS = List.of("os.chmod", "os.chown", "os.chflags");

  /** Events reported only when they write outside the writable paths. */
  static final List<String> WRITE_EVENTS =
      List.of("open", "os.rename", "os.mkdir", "os.symlink", "os.link", "os.truncate");

  static final List<String> PROCESS_EVENTS =
      List.of(
          "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "pty.spawn");

  /**
   * Events reported only when they destroy an existing file's content: a truncating open, a rename
   * or {@code os.replace} over a file, {@code os.truncate} to fewer bytes. For file deletion these
   * are deletions of what was there.
   */
  static final List<String> REPLACE_EVENTS = List.of("open", "os.rename", "os.truncate");

  /** ctypes looking up a C function by name; reported only for {@link #SYMBOLS}. */
  static final List<String> SYMBOL_EVENTS = List.of("ctypes.dlsym", "ctypes.dlsym/handle");

  /** C functions that delete or replace files, reached through ctypes. */
  static final Set<String> DELETE_SYMBOLS =
      Set.of(
          "unlink",
          "unlinkat",
          "remove",
          "rmdir",
          "rename",
          "renameat",
          "renameat2",
          "truncate",
          "truncate64",
          "ftruncate",
          "ftruncate64");

  /** C functions that change modes, owners or links, reached through ctypes. */
  static final Set<String> MODIFY_SYMBOLS =
      Set.of(
          "chmod",
          "fchmod",
          "fchmodat",
          "chown",
          "lchown",
          "fchown",
          "fchownat",
          "link",
          "linkat",
          "symlink",
          "symlinkat",
          "mkdir",
          "mkdirat",
          "mknod",
          "mknodat",
          "creat",
          "creat64");

  /** The C library's raw system call entry: it can do anything the rules cover. */
  static final String SYSCALL_SYMBOL = "syscall";

  /**
   * What the worker reported: the event, its target (path, command, C function), whether the worker
   * cut the target short (a command line over 1,000 characters) and whether the operation destroys
   * an existing file's content.
   */
  record Report(String event, String target, boolean cut, boolean replaces) {}

  private final ApprovalPolicy policy;
  private final @Nullable ObjectNode watch;

  public PythonGuard(ApprovalPolicy policy) {
    this.policy = policy;
    this.watch = policy.isInactive() ? null : buildWatch(policy);
  }

  /** What the worker must report, sent with every Python call; null when nothing. */
  public @Nullable ObjectNode watch() {
    return watch;
  }

  private static ObjectNode buildWatch(ApprovalPolicy p) {
    Set<String> always = new LinkedHashSet<>();
    Set<String> outside = new LinkedHashSet<>();
    Set<String> replace = new LinkedHashSet<>();
    Set<String> symbols = new TreeSet<>();
    if (p.fileDeletion() != Action.ALLOW) {
      always.addAll(DELETE_EVENTS);
      replace.addAll(REPLACE_EVENTS);
      symbols.addAll(DELETE_SYMBOLS);
      symbols.add(SYSCALL_SYMBOL);
    }
    if (p.systemModification() != Action.ALLOW) {
      always.addAll(MODE_EVENTS);
      outside.addAll(WRITE_EVENTS);
      symbols.addAll(MODIFY_SYMBOLS);
      symbols.add(SYSCALL_SYMBOL);
    }
    if (!symbols.isEmpty()) {
      always.addAll(SYMBOL_EVENTS);
    }
    boolean shellRules = p.shellRules().stream().anyMatch(r -> r.action() != Action.ALLOW);
    if (shellRules || p.fileDeletion() != Action.ALLOW || p.systemModification() != Action.ALLOW) {
      always.addAll(PROCESS_EVENTS);
    }
    p.pythonRules()
        .forEach(
            (event, action) -> {
              if (action != Action.ALLOW) {
                always.add(event);
              }
            });
    outside.removeAll(always);
    ObjectNode w = Json.object();
    ArrayNode a = w.putArray("events");
    always.forEach(a::add);
    ArrayNode o = w.putArray("outside");
    outside.forEach(o::add);
    ArrayNode r = w.putArray("replace");
    replace.forEach(r::add);
    ArrayNode s = w.putArray("symbols");
    symbols.forEach(s::add);
    ArrayNode paths = w.putArray("writable");
    p.writablePaths().forEach(paths::add);
    return w;
  }

  /**
   * What a reported event needs. {@code target} is the path (made absolute), command or address the
   * worker saw; whether a write lies outside the writable paths is decided here again.
   */
  ShellClassifier.Verdict classify(Report report) {
    String event = report.event();
    String target = report.target();
    boolean outsideWritable = ShellClassifier.isOutside(target, policy.writablePaths());
    ShellClassifier.Verdict best =
        new ShellClassifier.Verdict("python", Action.ALLOW, "no rule matches");
    Action named = policy.pythonRules().get(event);
    if (named != null) {
      best = best.stricter(new ShellClassifier.Verdict("python", named, "rule for " + event));
    }
    if (report.replaces() && REPLACE_EVENTS.contains(event)) {
      best =
          best.stricter(
              new ShellClassifier.Verdict(
                  "file.delete",
                  policy.fileDeletion(),
                  event + " destroys the content of an existing file"));
    }
    if (SYMBOL_EVENTS.contains(event)) {
      return best.stricter(symbol(target));
    }
    if (DELETE_EVENTS.contains(event)) {
      best =
          best.stricter(
              new ShellClassifier.Verdict(
                  "file.delete", policy.fileDeletion(), event + " deletes files"));
    } else if (MODE_EVENTS.contains(event)) {
      best =
          best.stricter(
              new ShellClassifier.Verdict(
                  "system.modify",
                  policy.systemModification(),
                  event + " changes file ownership or mode"));
    } else if (WRITE_EVENTS.contains(event) && outsideWritable) {
      best =
          best.stricter(
              new ShellClassifier.Verdict(
                  "system.modify",
                  policy.systemModification(),
                  event + " writes outside the writable paths " + policy.writablePaths()));
    } else if (PROCESS_EVENTS.contains(event)) {
      best =
          best.stricter(
              report.cut()
                  ? ShellClassifier.strictest(
                      policy,
                      "the command line is longer than the 1000 characters a Python session"
                          + " reports, so the rules cannot read all of it: run it with exec()")
                  : ShellClassifier.classify(target, policy));
    }
    return best;
  }

  /** A C function looked up through ctypes, by what it can do. */
  private ShellClassifier.Verdict symbol(String name) {
    if (name.equals(SYSCALL_SYMBOL)) {
      return new ShellClassifier.Verdict(
          "system.modify",
          policy.fileDeletion().max(policy.systemModification()),
          "ctypes reaches the raw syscall() entry, which can delete or modify anything");
    }
    if (DELETE_SYMBOLS.contains(name)) {
      return new ShellClassifier.Verdict(
          "file.delete", policy.fileDeletion(), "ctypes reaches the C function " + name + "()");
    }
    if (MODIFY_SYMBOLS.contains(name)) {
      return new ShellClassifier.Verdict(
          "system.modify",
          policy.systemModification(),
          "ctypes reaches the C function " + name + "()");
    }
    return new ShellClassifier.Verdict("python", Action.ALLOW, "no rule matches");
  }
}
