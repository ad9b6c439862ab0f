package io.agentnest.internal;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ApprovalPolicy;
import io.agentnest.ApprovalPolicy.Action;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The Python side of an {@link ApprovalPolicy}: which audit events (PEP 578) a session's worker
 * reports, and what a reported event needs. The worker only reports; the host decides, so the rules
 * live in one place. The hook runs inside the interpreter the sandboxed code controls: a guard rail
 * for cooperative code, not a boundary.
 */
final class PythonGuard {
  static final List<String> DELETE_EVENTS = List.of("os.remove", "os.rmdir", "shutil.rmtree");
  static final List<String> MODE_EVENTS = List.of("os.chmod", "os.chown", "os.chflags");

  /** Events reported only when they write outside the writable paths. */
  static final List<String> WRITE_EVENTS =
      List.of("open", "os.rename", "os.mkdir", "os.symlink", "os.link", "os.truncate");

  static final List<String> PROCESS_EVENTS =
      List.of(
          "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "pty.spawn");

  private final ApprovalPolicy policy;
  private final @Nullable ObjectNode watch;

  PythonGuard(ApprovalPolicy policy) {
    this.policy = policy;
    this.watch = policy.isInactive() ? null : buildWatch(policy);
  }

  /** What the worker must report, sent with every Python call; null when nothing. */
  @Nullable ObjectNode watch() {
    return watch;
  }

  private static ObjectNode buildWatch(ApprovalPolicy p) {
    Set<String> always = new LinkedHashSet<>();
    Set<String> outside = new LinkedHashSet<>();
    if (p.fileDeletion() != Action.ALLOW) {
      always.addAll(DELETE_EVENTS);
    }
    if (p.systemModification() != Action.ALLOW) {
      always.addAll(MODE_EVENTS);
      outside.addAll(WRITE_EVENTS);
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
    ArrayNode paths = w.putArray("writable");
    p.writablePaths().forEach(paths::add);
    return w;
  }

  /**
   * What a reported event needs. {@code target} is the path (made absolute), command or address the
   * worker saw; whether a write lies outside the writable paths is decided here again.
   */
  ShellClassifier.Verdict classify(String event, String target) {
    boolean outsideWritable = ShellClassifier.isOutside(target, policy.writablePaths());
    ShellClassifier.Verdict best =
        new ShellClassifier.Verdict("python", Action.ALLOW, "no rule matches");
    Action named = policy.pythonRules().get(event);
    if (named != null) {
      best = best.stricter(new ShellClassifier.Verdict("python", named, "rule for " + event));
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
      best = best.stricter(ShellClassifier.classify(target, policy));
    }
    return best;
  }
}
