package io.agentnest;

import java.time.Instant;
import java.util.Objects;

/**
 * A question to an {@link ApprovalHandler}.
 *
 * @param sandboxId the sandbox asking
 * @param kind what is asked for, e.g. {@code network}
 * @param target what it is about, e.g. {@code example.com:443}
 * @param detail more context, e.g. {@code CONNECT example.com:443} or {@code GET
 *     http://example.com/x}
 * @param requestedAt when the sandbox asked
 */
public record ApprovalRequest(
    String sandboxId, String kind, String target, String detail, Instant requestedAt) {
  public ApprovalRequest {
    Objects.requireNonNull(sandboxId, "sandboxId");
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(target, "target");
    Objects.requireNonNull(detail, "detail");
    Objects.requireNonNull(requestedAt, "requestedAt");
  }
}
