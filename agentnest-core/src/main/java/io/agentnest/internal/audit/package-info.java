/**
 * What the runtime records about sandboxes: the shared audit log, coalescing of floods, the rate
 * budgets whose overrun is itself audited, network events and the host disk reserve.
 *
 * <p>A sandbox can make any of these fire, so every path here is bounded and rate-limited. It must
 * not depend on sandboxes or channels; the public log format lives in {@code io.agentnest.audit}.
 */
package io.agentnest.internal.audit;
