package io.agentnest.internal.audit;

import io.agentnest.SandboxBudgets;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * One sandbox's limits on the host work it can cause: its egress-tunnel and approval-question
 * budgets, and its audit output, where repeated identical denials are folded. Whatever the sandbox
 * sends, what it costs the host's audit store is bounded by these (see docs/audit.md).
 */
public final class HostBudgets {
  private final AuditCoalescer audit;
  private final Budget tunnels;
  private final Budget asks;
  private final int asksPerCall;
  private final Consumer<Budget.Kind> overBudget;

  /**
   * @param sink where records go (the audit log)
   * @param overBudget called (once per kind) when the sandbox keeps pressing past a budget
   */
  public HostBudgets(
      SandboxBudgets b,
      Budget.Recorder sink,
      Consumer<Budget.Kind> overBudget,
      LongSupplier nanos) {
    this.audit = new AuditCoalescer(sink);
    Budget.Recorder folded = audit::record;
    this.tunnels =
        new Budget(
            Budget.Kind.EGRESS_TUNNELS,
            b.tunnelsPerSecond(),
            b.tunnelBurst(),
            b.destroyAfterRefusals(),
            folded,
            nanos);
    this.asks =
        new Budget(
            Budget.Kind.APPROVAL_ASKS,
            b.asksPerSecond(),
            b.askBurst(),
            b.destroyAfterRefusals(),
            folded,
            nanos);
    this.asksPerCall = b.asksPerCall();
    this.overBudget = overBudget;
  }

  /** The sandbox's audit output: denials folded, everything else as is. */
  public Budget.Recorder audit() {
    return audit::record;
  }

  public Budget tunnels() {
    return tunnels;
  }

  public Budget asks() {
    return asks;
  }

  public int asksPerCall() {
    return asksPerCall;
  }

  /** What to run when the sandbox keeps pressing past the budget of {@code kind}. */
  public Runnable overBudget(Budget.Kind kind) {
    return () -> overBudget.accept(kind);
  }

  /** Writes open streak counts and folded denials: the sandbox is going away. */
  public void close() {
    tunnels.close();
    asks.close();
    audit.close();
  }
}
