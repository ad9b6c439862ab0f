package io.agentnest;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * Which operations inside a sandbox need a person's approval (or are refused outright). The network
 * has its own rules in {@link NetworkPolicy}; this policy covers the rest:
 *
 * <ul>
 *   <li>{@linkplain Builder#fileDeletion file deletion}: {@code files().delete}, {@code rm} in a
 *       shell command, {@code os.remove} / {@code shutil.rmtree} in a Python session;
 *   <li>{@linkplain Builder#systemModification system modification}: writes outside the {@linkplain
 *       Builder#writablePaths writable paths} (the workspace and {@code /tmp}), {@code chmod} /
 *       {@code chown}, package installation ({@code pip install}, {@code apt-get install}, ...);
 *   <li>{@linkplain Builder#shell shell commands} matching a regular expression;
 *   <li>{@linkplain Builder#python Python audit events} (PEP 578) by name, e.g. {@code
 *       socket.connect} or {@code subprocess.Popen}.
 * </ul>
 *
 * <pre>{@code
 * ApprovalPolicy policy = ApprovalPolicy.builder()
 *     .fileDeletion(ApprovalPolicy.Action.ASK)
 *     .shell("\\bgit\\s+push\\b", ApprovalPolicy.Action.DENY)
 *     .python("socket.connect", ApprovalPolicy.Action.ASK)
 *     .timeout(Duration.ofMinutes(2))
 *     .build();
 * }</pre>
 *
 * <p>Shell commands and file API calls are checked on the host before they reach the sandbox.
 * Python sessions check in the interpreter with an audit hook: a guard rail for cooperative code,
 * not a security boundary (code that calls the C library directly is not seen). An {@code ASK}
 * waits for the sandbox's {@link ApprovalHandler} at most {@link #timeout()}; no answer denies.
 */
public final class ApprovalPolicy {
  /** What happens to a matching operation. */
  public enum Action {
    /** Goes ahead without asking. */
    ALLOW,
    /** Waits for the approval handler; a timeout or no handler denies. */
    ASK,
    /** Refused without asking. */
    DENY;

    /** The stricter of two actions. */
    public Action max(Action other) {
      return compareTo(other) >= 0 ? this : other;
    }
  }

  /**
   * A shell rule: commands matching {@code pattern} (searched, not anchored) get {@code action}.
   */
  public record ShellRule(Pattern pattern, Action action) {
    public ShellRule {
      Objects.requireNonNull(pattern, "pattern");
      Objects.requireNonNull(action, "action");
    }
  }

  private static final Pattern EVENT_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_.]{0,99}");
  private static final ApprovalPolicy NONE = builder().build();

  private final Action fileDeletion;
  private final Action systemModification;
  private final List<ShellRule> shellRules;
  private final Map<String, Action> pythonRules;
  private final List<String> writablePaths;
  private final Duration timeout;

  private ApprovalPolicy(Builder b) {
    this.fileDeletion = b.fileDeletion;
    this.systemModification = b.systemModification;
    this.shellRules = List.copyOf(b.shellRules);
    this.pythonRules = Collections.unmodifiableMap(new LinkedHashMap<>(b.pythonRules));
    this.writablePaths = List.copyOf(b.writablePaths);
    this.timeout = b.timeout;
  }

  /** No approvals: everything the other policies allow goes ahead (the default). */
  public static ApprovalPolicy none() {
    return NONE;
  }

  /**
   * A sensible starting point for an agent working on a user's behalf: file deletion, system
   * modification, {@code git push}, {@code curl | sh} and subprocesses started from Python ask.
   */
  public static ApprovalPolicy recommended() {
    return builder()
        .fileDeletion(Action.ASK)
        .systemModification(Action.ASK)
        .shell("\\bgit\\s+push\\b", Action.ASK)
        .shell("\\b(curl|wget)\\b[^|]*\\|\\s*(ba|z|da)?sh\\b", Action.DENY)
        .python("subprocess.Popen", Action.ASK)
        .python("os.system", Action.ASK)
        .build();
  }

  public static Builder builder() {
    return new Builder();
  }

  public Builder toBuilder() {
    Builder b = new Builder();
    b.fileDeletion = fileDeletion;
    b.systemModification = systemModification;
    b.shellRules.addAll(shellRules);
    b.pythonRules.putAll(pythonRules);
    b.writablePaths.clear();
    b.writablePaths.addAll(writablePaths);
    b.timeout = timeout;
    return b;
  }

  public Action fileDeletion() {
    return fileDeletion;
  }

  public Action systemModification() {
    return systemModification;
  }

  /** Shell rules in the order given; every matching rule applies and the strictest wins. */
  public List<ShellRule> shellRules() {
    return shellRules;
  }

  /** Python audit event names and their actions. */
  public Map<String, Action> pythonRules() {
    return pythonRules;
  }

  /** Absolute directories where writing is not a system modification. */
  public List<String> writablePaths() {
    return writablePaths;
  }

  /** How long an {@code ASK} waits for the approval handler before it denies. */
  public Duration timeout() {
    return timeout;
  }

  /**
   * The stricter of this policy and {@code other}: each kind of operation gets the stricter action
   * of the two, the shell rules of both apply (the strictest match wins, as within one policy), a
   * Python event gets the stricter of its actions, writing is free only where both say so (the
   * writable paths both list), and an {@code ASK} waits the shorter of the two timeouts. A policy
   * that never asks or denies ({@link #isInactive()}) leaves the other as it is, timeout included.
   * A server combines its own floor with what a tenant asks for this way, so a request can add
   * rules but never loosen the server's.
   */
  public ApprovalPolicy stricter(ApprovalPolicy other) {
    Objects.requireNonNull(other, "other");
    if (other.isInactive()) {
      return this;
    }
    if (isInactive()) {
      return other;
    }
    Builder b = toBuilder();
    b.fileDeletion = fileDeletion.max(other.fileDeletion);
    b.systemModification = systemModification.max(other.systemModification);
    List<String> mine = shellRules.stream().map(ApprovalPolicy::key).toList();
    for (ShellRule r : other.shellRules) {
      if (!mine.contains(key(r))) {
        b.shellRules.add(r);
      }
    }
    other.pythonRules.forEach((event, action) -> b.pythonRules.merge(event, action, Action::max));
    b.writablePaths.retainAll(other.writablePaths);
    b.timeout = timeout.compareTo(other.timeout) <= 0 ? timeout : other.timeout;
    return b.build();
  }

  /** Whether this policy never asks or denies anything. */
  public boolean isInactive() {
    return fileDeletion == Action.ALLOW
        && systemModification == Action.ALLOW
        && shellRules.stream().allMatch(r -> r.action() == Action.ALLOW)
        && pythonRules.values().stream().allMatch(a -> a == Action.ALLOW);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ApprovalPolicy p
        && fileDeletion == p.fileDeletion
        && systemModification == p.systemModification
        && shellRules.stream()
            .map(ApprovalPolicy::key)
            .toList()
            .equals(p.shellRules.stream().map(ApprovalPolicy::key).toList())
        && pythonRules.equals(p.pythonRules)
        && writablePaths.equals(p.writablePaths)
        && timeout.equals(p.timeout);
  }

  private static String key(ShellRule r) {
    return r.pattern().pattern() + "\u0000" + r.action();
  }

  @Override
  public int hashCode() {
    return Objects.hash(fileDeletion, systemModification, pythonRules, writablePaths, timeout);
  }

  @Override
  public String toString() {
    return "ApprovalPolicy[fileDeletion="
        + fileDeletion
        + ", systemModification="
        + systemModification
        + ", shell="
        + shellRules.stream().map(r -> r.pattern().pattern() + "=" + r.action()).toList()
        + ", python="
        + pythonRules
        + ", writablePaths="
        + writablePaths
        + ", timeout="
        + timeout
        + "]";
  }

  /** Builder; {@link #build()} validates. */
  public static final class Builder {
    private Action fileDeletion = Action.ALLOW;
    private Action systemModification = Action.ALLOW;
    private final List<ShellRule> shellRules = new ArrayList<>();
    private final Map<String, Action> pythonRules = new LinkedHashMap<>();
    private final List<String> writablePaths =
        new ArrayList<>(List.of(SandboxConfig.WORKSPACE, "/tmp"));
    private Duration timeout = Duration.ofSeconds(60);

    private Builder() {}

    /** Deleting files and directories. */
    public Builder fileDeletion(Action action) {
      this.fileDeletion = Objects.requireNonNull(action, "action");
      return this;
    }

    /** Writes outside the writable paths, chmod/chown, package installation. */
    public Builder systemModification(Action action) {
      this.systemModification = Objects.requireNonNull(action, "action");
      return this;
    }

    /**
     * Shell commands (and commands a Python session starts) matching the Java regular expression
     * {@code regex} anywhere get {@code action}.
     */
    public Builder shell(String regex, Action action) {
      Objects.requireNonNull(regex, "regex");
      Objects.requireNonNull(action, "action");
      if (regex.isBlank()) {
        throw new ConfigException(
            "shell approval pattern is empty: give a regular expression, e.g. '\\bgit\\s+push\\b'");
      }
      try {
        shellRules.add(new ShellRule(Pattern.compile(regex), action));
      } catch (PatternSyntaxException e) {
        throw new ConfigException(
            "shell approval pattern '"
                + regex
                + "' is not a valid regular expression ("
                + e.getDescription()
                + " at index "
                + e.getIndex()
                + "): fix it, or quote it with \\Q...\\E to match literally");
      }
      return this;
    }

    /**
     * Python audit events (PEP 578) named {@code event}, e.g. {@code socket.connect}, {@code
     * subprocess.Popen}, {@code os.remove}, {@code open}, get {@code action}.
     */
    public Builder python(String event, Action action) {
      Objects.requireNonNull(event, "event");
      Objects.requireNonNull(action, "action");
      if (!EVENT_NAME.matcher(event).matches()) {
        throw new ConfigException(
            "Python audit event name '"
                + event
                + "' is invalid: use a name from the Python audit events table, e.g."
                + " 'socket.connect' or 'subprocess.Popen'");
      }
      pythonRules.put(event, action);
      return this;
    }

    /** Replaces the absolute directories where writing is not a system modification. */
    public Builder writablePaths(List<String> paths) {
      List<String> checked = new ArrayList<>();
      for (String p : paths) {
        String s = Objects.requireNonNull(p, "path").strip();
        if (!s.startsWith("/") || s.contains("..") || s.contains("\u0000")) {
          throw new ConfigException(
              "writable path '"
                  + p
                  + "' must be an absolute directory without '..', e.g. /workspace or /tmp");
        }
        checked.add(s.length() > 1 && s.endsWith("/") ? s.substring(0, s.length() - 1) : s);
      }
      writablePaths.clear();
      writablePaths.addAll(checked);
      return this;
    }

    /** How long an {@code ASK} waits before it denies; default 60 s. */
    public Builder timeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.isNegative() || timeout.isZero() || timeout.compareTo(Duration.ofHours(24)) > 0) {
        throw new ConfigException(
            "approval timeout " + timeout + " is out of range: use more than 0 and at most 24h");
      }
      this.timeout = timeout;
      return this;
    }

    public ApprovalPolicy build() {
      return new ApprovalPolicy(this);
    }
  }
}
