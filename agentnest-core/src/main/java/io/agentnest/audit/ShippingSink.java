package io.agentnest.audit;

/**
 * An {@link AuditSink} that ships records to a log collector ({@link AuditSinks#syslog}, {@link
 * AuditSinks#otlp}). {@link #accept} only puts the record in a bounded in-memory queue (it never
 * waits for the network); one daemon thread per sink sends. A record that does not fit in the
 * queue, or that the collector did not take, is dropped and counted; after drops the collector gets
 * one synthetic {@code shipping.gap} record with the count and the seq range. The local chain
 * ({@link AuditLog}) stays the source of truth: what a collector missed can be read back from it by
 * seq.
 */
public interface ShippingSink extends AuditSink {
  /** Counters and state, safe to read from any thread. */
  ShippingStats stats();

  /**
   * Sends what it can of the queue within the target's flush timeout, counts the rest as dropped,
   * then stops the sender thread.
   */
  @Override
  void close();
}
