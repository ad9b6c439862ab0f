package io.agentnest;

/**
 * How much host work code in a sandbox may cause, enforced on the host whatever the sandbox sends.
 * Egress tunnels and approval questions each have a token bucket: a burst, refilled at a steady
 * rate. Beyond it the host refuses (a tunnel is closed at once, a question is denied unasked) and
 * audits the streak once; a sandbox that keeps pressing, {@link #destroyAfterRefusals} refusals
 * before its bucket has filled up again, is destroyed. Each approval-asking call also has its own
 * cap, {@link #asksPerCall}.
 *
 * <pre>{@code
 * SandboxConfig.builder()
 *     .budgets(SandboxBudgets.defaults().withTunnelsPerSecond(50).withTunnelBurst(500))
 *     .build();
 * }</pre>
 *
 * @param tunnelsPerSecond egress connections a sandbox may open per second, sustained
 * @param tunnelBurst egress connections it may open at once (the bucket's size)
 * @param asksPerSecond approval questions from Python sessions per second, sustained
 * @param askBurst approval questions at once
 * @param asksPerCall approval questions one call may ask; more are denied without asking
 * @param destroyAfterRefusals refusals in one streak (before the bucket is full again) after which
 *     the sandbox is destroyed; 0 never destroys it
 */
public record SandboxBudgets(
    double tunnelsPerSecond,
    int tunnelBurst,
    double asksPerSecond,
    int askBurst,
    int asksPerCall,
    int destroyAfterRefusals) {

  private static final SandboxBudgets DEFAULTS = new SandboxBudgets(20, 200, 5, 50, 256, 1000);

  /** Validates every field; the message names the YAML key and a sane value. */
  public SandboxBudgets {
    rate("tunnels_per_second", tunnelsPerSecond, 10_000, "20");
    count("tunnel_burst", tunnelBurst, 1, 100_000, "200");
    rate("asks_per_second", asksPerSecond, 1_000, "5");
    count("ask_burst", askBurst, 1, 10_000, "50");
    count("asks_per_call", asksPerCall, 1, 10_000, "256");
    count("destroy_after_refusals", destroyAfterRefusals, 0, 1_000_000_000, "1000 (0: never)");
  }

  /**
   * 20 tunnels a second after a burst of 200; 5 questions a second after 50, 256 per call; a
   * sandbox refused 1000 times in one streak is destroyed.
   */
  public static SandboxBudgets defaults() {
    return DEFAULTS;
  }

  public SandboxBudgets withTunnelsPerSecond(double v) {
    return new SandboxBudgets(
        v, tunnelBurst, asksPerSecond, askBurst, asksPerCall, destroyAfterRefusals);
  }

  public SandboxBudgets withTunnelBurst(int v) {
    return new SandboxBudgets(
        tunnelsPerSecond, v, asksPerSecond, askBurst, asksPerCall, destroyAfterRefusals);
  }

  public SandboxBudgets withAsksPerSecond(double v) {
    return new SandboxBudgets(
        tunnelsPerSecond, tunnelBurst, v, askBurst, asksPerCall, destroyAfterRefusals);
  }

  public SandboxBudgets withAskBurst(int v) {
    return new SandboxBudgets(
        tunnelsPerSecond, tunnelBurst, asksPerSecond, v, asksPerCall, destroyAfterRefusals);
  }

  public SandboxBudgets withAsksPerCall(int v) {
    return new SandboxBudgets(
        tunnelsPerSecond, tunnelBurst, asksPerSecond, askBurst, v, destroyAfterRefusals);
  }

  public SandboxBudgets withDestroyAfterRefusals(int v) {
    return new SandboxBudgets(
        tunnelsPerSecond, tunnelBurst, asksPerSecond, askBurst, asksPerCall, v);
  }

  private static void rate(String key, double v, double max, String example) {
    if (!(v > 0 && v <= max)) {
      throw new ConfigException(
          "budgets." + key + " must be in (0, " + (long) max + "], got " + v + ": e.g. " + example);
    }
  }

  private static void count(String key, long v, long min, long max, String example) {
    if (v < min || v > max) {
      throw new ConfigException(
          "budgets."
              + key
              + " must be from "
              + min
              + " to "
              + max
              + ", got "
              + v
              + ": e.g. "
              + example);
    }
  }
}
