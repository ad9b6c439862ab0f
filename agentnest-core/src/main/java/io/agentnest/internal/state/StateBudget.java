package io.agentnest.internal.state;

import io.agentnest.AgentNestException;
import io.agentnest.internal.context.SandboxContext;
import java.util.concurrent.atomic.AtomicLong;

/**
 * How much state one fork or snapshot may carry out of a sandbox, all its streams together (files
 * and every session): twice the sandbox's memory limit plus 64 MiB. Its files (tmpfs) and its
 * sessions live in that memory, so honest state is smaller; whatever a sandbox streams beyond it is
 * refused, and the host never holds or writes more than this on its behalf.
 */
public final class StateBudget {
  static final long SLACK = 64L << 20;

  private final String sandboxId;
  private final long memoryBytes;
  private final long limit;
  private final AtomicLong used = new AtomicLong();

  StateBudget(String sandboxId, long memoryBytes) {
    this.sandboxId = sandboxId;
    this.memoryBytes = memoryBytes;
    this.limit = limitFor(memoryBytes);
  }

  public static StateBudget of(SandboxContext sb) {
    return new StateBudget(sb.id(), sb.config().memoryBytes());
  }

  /** 2 × memory + 64 MiB, saturating. */
  static long limitFor(long memoryBytes) {
    long twice =
        memoryBytes > (Long.MAX_VALUE - SLACK) / 2 ? Long.MAX_VALUE - SLACK : 2 * memoryBytes;
    return twice + SLACK;
  }

  long limit() {
    return limit;
  }

  long used() {
    return used.get();
  }

  /**
   * Counts {@code n} more bytes of {@code what}.
   *
   * @throws AgentNestException when the state would exceed the budget
   */
  void take(long n, String what) {
    if (used.addAndGet(n) > limit) {
      throw new AgentNestException(
          what
              + ": the state of sandbox "
              + (sandboxId.length() > 12 ? sandboxId.substring(0, 12) : sandboxId)
              + " is larger than "
              + limit
              + " bytes (twice its memory limit of "
              + memoryBytes
              + " bytes, plus 64 MiB), more than it can hold: refused");
    }
  }
}
