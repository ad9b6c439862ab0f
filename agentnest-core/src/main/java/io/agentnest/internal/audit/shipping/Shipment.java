package io.agentnest.internal.audit.shipping;

import io.agentnest.audit.AuditEvent;
import org.jspecify.annotations.Nullable;

/** A record waiting to be shipped, with its sandbox's tenant when known. */
record Shipment(AuditEvent event, @Nullable String tenant) {}
