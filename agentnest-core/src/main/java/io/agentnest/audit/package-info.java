/**
 * The audit trail: {@link io.agentnest.audit.AuditLog} (the hash-chained log, the API's {@code
 * AuditTrail}), its query, index, verification and tail, and the sinks that ship it (syslog, OTLP),
 * made by the package's own small SPI ({@link io.agentnest.audit.AuditShipper}).
 *
 * <p>The top public floor: it may import the API, the SPI's support and the configuration; none of
 * them imports it, nor does it import {@code internal}.
 */
package io.agentnest.audit;
