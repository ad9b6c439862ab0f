/**
 * Audit shipping: the sinks behind {@code AuditSinks.syslog} and {@code AuditSinks.otlp}. {@link
 * io.agentnest.internal.audit.shipping.Shipper} owns the bounded queue, the one sender thread per
 * sink, reconnect backoff, drop counting and the synthetic gap record; a {@link
 * io.agentnest.internal.audit.shipping.Transport} puts a batch on the wire (syslog RFC 5424 over
 * UDP, TCP or TLS in {@link io.agentnest.internal.audit.shipping.SyslogTransport}, formatted by
 * {@link io.agentnest.internal.audit.shipping.SyslogFormat}; OTLP/HTTP logs in {@link
 * io.agentnest.internal.audit.shipping.OtlpTransport}). Nothing here runs network I/O on the audit
 * log's writer thread.
 */
package io.agentnest.internal.audit.shipping;
