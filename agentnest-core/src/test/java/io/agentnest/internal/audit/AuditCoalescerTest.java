package io.agentnest.internal.audit;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Folding repeated identical denials, on a clock the test moves. */
class AuditCoalescerTest {
  private record Rec(String type, Map<String, Object> data) {}

  private final AtomicReference<Instant> now =
      new AtomicReference<>(Instant.parse("2026-12-03T10:00:00Z"));
  private final List<Rec> out = new ArrayList<>();
  private final AuditCoalescer c =
      new AuditCoalescer(
          (t, d) -> out.add(new Rec(t, new LinkedHashMap<String, Object>(d))), now::get, false);

  private static Map<String, Object> denied(String host, long durationMs) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("method", "CONNECT");
    m.put("host", host);
    m.put("port", 443);
    m.put("decision", "DENIED");
    m.put("rule", "not-allowlisted");
    m.put("reason", host + ":443 is not on the allowlist");
    m.put("bytes_up", 0L);
    m.put("bytes_down", 0L);
    m.put("duration_ms", durationMs);
    return m;
  }

  private void tick(long millis) {
    now.set(now.get().plusMillis(millis));
  }

  @Test
  void identicalDenialsInAWindowBecomeOneRecordAndOneCount() {
    for (int i = 0; i < 1000; i++) {
      c.record("network.attempt", denied("evil.test", i % 7));
      tick(10);
    }
    assertThat(out).hasSize(1);
    c.close();
    assertThat(out).hasSize(2);
    Map<String, Object> summary = out.get(1).data();
    assertThat(summary)
        .containsEntry("host", "evil.test")
        .containsEntry("repeated", 999L)
        .containsEntry("first_repeat", "2026-12-03T10:00:00.010Z")
        .containsEntry("last_repeat", "2026-12-03T10:00:09.990Z");
  }

  @Test
  void differentTargetsAreNotFolded() {
    c.record("network.attempt", denied("a.test", 1));
    c.record("network.attempt", denied("b.test", 1));
    c.record("network.attempt", denied("a.test", 1));
    assertThat(out).extracting(r -> r.data().get("host")).containsExactly("a.test", "b.test");
  }

  @Test
  void aNewWindowStartsWithARecordAndTheOldCountGoesOut() {
    c.record("policy.violation", Map.of("kind", "network", "target", "x:1", "waited_ms", 0L));
    c.record("policy.violation", Map.of("kind", "network", "target", "x:1", "waited_ms", 3L));
    tick(AuditCoalescer.WINDOW.toMillis());
    c.record("policy.violation", Map.of("kind", "network", "target", "x:1", "waited_ms", 0L));
    assertThat(out).hasSize(3);
    assertThat(out.get(1).data()).containsEntry("repeated", 1L);
    assertThat(out.get(2).data()).doesNotContainKey("repeated");
  }

  @Test
  void expiredWindowsAreFlushedWithoutANewRecord() {
    c.record("policy.violation", Map.of("target", "x"));
    c.record("policy.violation", Map.of("target", "x"));
    c.flushExpired();
    assertThat(out).hasSize(1);
    tick(Duration.ofMinutes(2).toMillis());
    c.flushExpired();
    assertThat(out).hasSize(2);
  }

  @Test
  void allowedAttemptsAndOtherRecordsPassStraightThrough() {
    Map<String, Object> allowed = denied("ok.test", 1);
    allowed.put("decision", "ALLOWED");
    for (int i = 0; i < 5; i++) {
      c.record("network.attempt", allowed);
      c.record("exec.started", Map.of("call", 1));
    }
    assertThat(out).hasSize(10);
  }

  @Test
  void beyondTheKeyCapRecordsPassThroughUnfolded() {
    for (int i = 0; i < AuditCoalescer.MAX_KEYS + 10; i++) {
      c.record("policy.violation", Map.of("target", "t" + i));
    }
    for (int i = 0; i < AuditCoalescer.MAX_KEYS + 10; i++) {
      c.record("policy.violation", Map.of("target", "t" + i));
    }
    // The first MAX_KEYS fold their repeat; the rest are written each time.
    assertThat(out).hasSize(AuditCoalescer.MAX_KEYS + 10 + 10);
  }
}
