package io.agentnest;

import java.time.Duration;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * How a {@link SandboxPool} keeps sandboxes warm. Build one with {@link #builder()}; the YAML
 * {@code pool:} block of a profile maps onto the same fields.
 *
 * @param name the pool's name, recorded in each member's {@code agentnest.pool} label
 * @param minIdle started sandboxes kept waiting for a user; refilled in the background
 * @param maxIdle at most this many wait; more are destroyed, not kept
 * @param maxTotal waiting, starting and handed out together; beyond it an acquire is exhausted
 * @param maxUses how often one sandbox is handed out; 1: never twice (the only value supported)
 * @param idleTtl a sandbox that waited this long is replaced by a fresh one
 * @param refillConcurrency sandboxes started at once by the refill
 * @param onExhausted what an acquire does when {@code maxTotal} are out
 * @param maxWait how long {@link Exhaustion#WAIT} waits before it fails
 */
public record PoolOptions(
    String name,
    int minIdle,
    int maxIdle,
    int maxTotal,
    int maxUses,
    Duration idleTtl,
    int refillConcurrency,
    Exhaustion onExhausted,
    Duration maxWait) {

  /** What an acquire does when the pool has handed out {@code maxTotal} sandboxes. */
  public enum Exhaustion {
    /** Waits up to {@code maxWait} for one to come free, then fails. */
    WAIT,
    /** Fails at once with {@link PoolExhaustedException}. */
    FAIL
  }

  private static final Pattern NAME = Pattern.compile("[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?");

  public PoolOptions {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(idleTtl, "idleTtl");
    Objects.requireNonNull(onExhausted, "onExhausted");
    Objects.requireNonNull(maxWait, "maxWait");
    if (!NAME.matcher(name).matches()) {
      throw new ConfigException(
          "pool name '"
              + name
              + "' is invalid: it goes into labels, so use lower-case letters, digits and '-'"
              + " (at most 40, starting and ending with a letter or digit), e.g. default");
    }
    if (minIdle < 0 || minIdle > 1000) {
      throw new ConfigException("pool min_idle must be 0 to 1000, got " + minIdle + ": e.g. 2");
    }
    if (maxIdle < minIdle) {
      throw new ConfigException(
          "pool max_idle " + maxIdle + " is below min_idle " + minIdle + ": raise max_idle");
    }
    if (maxTotal < Math.max(1, maxIdle)) {
      throw new ConfigException(
          "pool max_total "
              + maxTotal
              + " is below max_idle "
              + maxIdle
              + " (or 1): raise max_total, e.g. to "
              + Math.max(1, maxIdle) * 4);
    }
    if (maxUses != 1) {
      throw new ConfigException(
          "pool max_uses "
              + maxUses
              + " is not supported: a used sandbox cannot be proven clean of its user's files,"
              + " processes and secrets, so each is handed out once; leave max_uses at 1");
    }
    if (idleTtl.compareTo(Duration.ofSeconds(5)) < 0 || idleTtl.compareTo(Duration.ofDays(7)) > 0) {
      throw new ConfigException("pool idle_ttl must be 5s to 7d, got " + idleTtl + ": e.g. 30m");
    }
    if (refillConcurrency < 1 || refillConcurrency > 32) {
      throw new ConfigException(
          "pool refill_concurrency must be 1 to 32, got " + refillConcurrency + ": e.g. 2");
    }
    if (maxWait.isNegative() || maxWait.compareTo(Duration.ofHours(1)) > 0) {
      throw new ConfigException("pool max_wait must be 0 to 1h, got " + maxWait + ": e.g. 30s");
    }
  }

  /** Two idle, up to 16 in all, handed out once, replaced after 30 min idle, wait up to 30 s. */
  public static PoolOptions defaults() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  public Builder toBuilder() {
    Builder b = new Builder();
    b.name = name;
    b.minIdle = minIdle;
    b.maxIdle = maxIdle;
    b.maxTotal = maxTotal;
    b.maxUses = maxUses;
    b.idleTtl = idleTtl;
    b.refillConcurrency = refillConcurrency;
    b.onExhausted = onExhausted;
    b.maxWait = maxWait;
    return b;
  }

  /** Builds {@link PoolOptions}; {@code maxIdle} defaults to {@code minIdle}. */
  public static final class Builder {
    private String name = "default";
    private int minIdle = 2;
    private int maxIdle = -1;
    private int maxTotal = 16;
    private int maxUses = 1;
    private Duration idleTtl = Duration.ofMinutes(30);
    private int refillConcurrency = 1;
    private Exhaustion onExhausted = Exhaustion.WAIT;
    private Duration maxWait = Duration.ofSeconds(30);

    private Builder() {}

    public Builder name(String name) {
      this.name = name;
      return this;
    }

    public Builder minIdle(int n) {
      this.minIdle = n;
      return this;
    }

    public Builder maxIdle(int n) {
      this.maxIdle = n;
      return this;
    }

    public Builder maxTotal(int n) {
      this.maxTotal = n;
      return this;
    }

    public Builder maxUses(int n) {
      this.maxUses = n;
      return this;
    }

    public Builder idleTtl(Duration ttl) {
      this.idleTtl = ttl;
      return this;
    }

    public Builder refillConcurrency(int n) {
      this.refillConcurrency = n;
      return this;
    }

    public Builder onExhausted(Exhaustion e) {
      this.onExhausted = e;
      return this;
    }

    public Builder maxWait(Duration wait) {
      this.maxWait = wait;
      return this;
    }

    public PoolOptions build() {
      return new PoolOptions(
          name,
          minIdle,
          maxIdle < 0 ? minIdle : maxIdle,
          maxTotal,
          maxUses,
          idleTtl,
          refillConcurrency,
          onExhausted,
          maxWait);
    }
  }
}
