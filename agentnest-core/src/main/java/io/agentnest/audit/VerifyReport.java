package io.agentnest.audit;

import org.jspecify.annotations.Nullable;

/**
 * Outcome of {@link AuditLog#verify()}.
 *
 * @param ok whether every line parsed, every hash matched and the chain is unbroken
 * @param problem the first problem found, with its line number and seq; empty when ok
 * @param checked records verified before the first problem (all of them when ok)
 * @param line 1-based line number of the first problem; 0 when ok
 * @param seq seq of the record at that line when known; 0 otherwise
 * @param lastHash hash of the last verified record ({@link AuditEvent#GENESIS} for an empty log):
 *     export it elsewhere as an anchor (see docs/audit.md)
 */
public record VerifyReport(
    boolean ok, String problem, long checked, long line, long seq, String lastHash) {

  static VerifyReport good(long checked, String lastHash) {
    return new VerifyReport(true, "", checked, 0, 0, lastHash);
  }

  static VerifyReport bad(
      String problem, long checked, long line, long seq, @Nullable String lastHash) {
    return new VerifyReport(
        false, problem, checked, line, seq, lastHash == null ? AuditEvent.GENESIS : lastHash);
  }

  @Override
  public String toString() {
    return ok
        ? "ok: " + checked + " records, chain intact, last hash " + lastHash
        : "FAILED after " + checked + " good records: " + problem;
  }
}
