package io.agentnest;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One network connection attempt from a sandbox, as the egress proxy saw it: exactly one event per
 * attempt, allowed or not.
 *
 * @param sandboxId the sandbox
 * @param time when the attempt started
 * @param method {@code CONNECT}, or the HTTP method of a plain HTTP request ({@code GET}, ...);
 *     {@code -} when no request line could be read
 * @param host the target host as requested (canonical form for names); empty when unknown
 * @param port the target port; 0 when unknown
 * @param resolvedAddress the address connected to (or the address that caused a refusal), or null
 * @param decision what the policy decided
 * @param rule the matching rule ({@code *.pypi.org}, {@code 127.0.0.0/8}) when allowed, {@code
 *     approval} when approved, {@code approval-remembered} when approved by an answer given earlier
 *     in the sandbox's life, or a short reason code when denied ({@code not-allowlisted}, {@code
 *     ip-literal}, {@code non-public-address}, {@code host-mismatch}, {@code approval-denied},
 *     {@code approval-denied-remembered}, {@code approval-timeout}, {@code bad-request}); null when
 *     there is none
 * @param reason a human-readable explanation, including upstream failures (answered with 502)
 * @param bytesUp bytes sent to the destination
 * @param bytesDown bytes received from the destination
 * @param duration how long the attempt took, until both directions were closed
 */
public record NetworkEvent(
    String sandboxId,
    Instant time,
    String method,
    String host,
    int port,
    @Nullable String resolvedAddress,
    Decision decision,
    @Nullable String rule,
    String reason,
    long bytesUp,
    long bytesDown,
    Duration duration) {

  /** What the policy decided about an attempt. */
  public enum Decision {
    /** A rule allowed it. */
    ALLOWED,
    /** Refused: not allowed, a non-public address, a bad request, or no approval. */
    DENIED,
    /** No rule allowed it, the {@link ApprovalHandler} approved it. */
    APPROVED
  }

  public NetworkEvent {
    Objects.requireNonNull(sandboxId, "sandboxId");
    Objects.requireNonNull(time, "time");
    Objects.requireNonNull(method, "method");
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(decision, "decision");
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(duration, "duration");
  }

  /**
   * Whether the decision is a person's earlier answer about the same target, remembered for the
   * sandbox's life ({@link NetworkPolicy#remembersDecisions()}) rather than asked again.
   */
  public boolean remembered() {
    return "approval-remembered".equals(rule) || "approval-denied-remembered".equals(rule);
  }

  /** {@code host:port}, with IPv6 literals in brackets. */
  public String target() {
    return (host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host) + ":" + port;
  }
}
