package io.agentnest.audit;

/**
 * Receives every record an {@link AuditLog} writes, in {@code seq} order, after the record is in
 * {@code events.jsonl} and in the index. Sinks run on the log's writer thread: a slow sink slows
 * the writer and, once the queue is full, {@link AuditLog#record} (backpressure). An exception
 * thrown by a sink is logged and does not stop the log or the other sinks.
 */
@FunctionalInterface
public interface AuditSink {
  void accept(AuditEvent e);

  /** Called once when the log closes (or when the sink is removed). */
  default void close() {}
}
