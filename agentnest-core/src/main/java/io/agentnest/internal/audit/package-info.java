/**
 * What the runtime records about sandboxes: recording in the shared audit log ({@code
 * AuditLog.shared()}) without failing an operation after the fact, coalescing of floods, the rate
 * budgets whose overrun is itself audited, and network events. The disk reserve is {@code
 * io.agentnest.spi.support.DiskGuard}.
 *
 * <p>A sandbox can make any of these fire, so every path here is bounded and rate-limited. It must
 * not depend on sandboxes or channels; the public log format lives in {@code io.agentnest.audit}.
 */
package io.agentnest.internal.audit;
