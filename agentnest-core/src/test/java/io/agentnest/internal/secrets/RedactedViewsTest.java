package io.agentnest.internal.secrets;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalRequest;
import io.agentnest.NetworkEvent;
import io.agentnest.internal.redact.Redactor;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class RedactedViewsTest {
  static final String SECRET = "tok-9f8e7d6c5b4a39281706";
  static final Redactor R = Redactor.of(Map.of("TOKEN", SECRET));

  @Test
  void auditDataIsMaskedAtEveryDepthKeysIncluded() {
    Map<String, Object> data =
        RedactedViews.auditData(
            R,
            Map.of(
                "host",
                SECRET + ".evil.example",
                "nested",
                Map.of(SECRET, List.of("x " + SECRET, 7)),
                "count",
                3));
    assertThat(data.toString()).doesNotContain(SECRET);
    assertThat(data).containsEntry("host", "[REDACTED:TOKEN].evil.example");
    assertThat(data).containsEntry("count", 3);
    assertThat(data.get("nested"))
        .isEqualTo(Map.of("[REDACTED:TOKEN]", List.of("x [REDACTED:TOKEN]", 7)));
  }

  @Test
  void aSecretUsedAsAHostNameIsMaskedInTheNetworkEvent() {
    NetworkEvent e =
        new NetworkEvent(
            "sb",
            Instant.now(),
            "CONNECT",
            SECRET + ".evil.example",
            443,
            null,
            NetworkEvent.Decision.DENIED,
            null,
            SECRET + ".evil.example is not on the allowlist",
            0,
            0,
            Duration.ZERO);
    NetworkEvent r = RedactedViews.networkEvent(R, e);
    assertThat(r.host()).isEqualTo("[REDACTED:TOKEN].evil.example");
    assertThat(r.reason()).doesNotContain(SECRET);
    assertThat(r.port()).isEqualTo(443);
    assertThat(r.decision()).isEqualTo(NetworkEvent.Decision.DENIED);
  }

  @Test
  void theApprovalHandlerIsAskedWithTheTargetAndDetailMasked() {
    List<ApprovalRequest> asked = new ArrayList<>();
    ApprovalHandler inner =
        req -> {
          asked.add(req);
          return CompletableFuture.completedFuture(new ApprovalDecision(false, "no", "test"));
        };
    ApprovalHandler h = RedactedViews.approvals(R, inner);
    h.decide(
        new ApprovalRequest(
            "sb", "network", SECRET + ".x:443", "CONNECT " + SECRET, Instant.now()));
    assertThat(asked).hasSize(1);
    assertThat(asked.get(0).target()).isEqualTo("[REDACTED:TOKEN].x:443");
    assertThat(asked.get(0).detail()).isEqualTo("CONNECT [REDACTED:TOKEN]");
    assertThat(RedactedViews.approvals(R, null)).isNull();
  }
}
