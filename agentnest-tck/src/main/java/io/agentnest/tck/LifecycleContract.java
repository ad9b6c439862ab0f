package io.agentnest.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.agentnest.Sandbox;
import io.agentnest.SandboxClosedException;
import io.agentnest.SandboxInfo;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** Create, find, expire, extend and destroy. */
public interface LifecycleContract extends BackendTarget {

  @Test
  default void aNewSandboxIsListedAndInspectableAndGoneAfterDestroy() {
    Sandbox sb = Sandbox.create(target().configure().build());
    try {
      assertThat(sb.isAlive()).isTrue();
      SandboxInfo info = target().backend().inspect(sb.id()).orElseThrow();
      assertThat(info.backend()).isEqualTo(target().backend().name());
      assertThat(info.image()).isEqualTo(target().config().image());
      assertThat(target().backend().list()).extracting(SandboxInfo::id).contains(sb.id());
    } finally {
      sb.destroy();
    }
    assertThat(sb.isAlive()).isFalse();
    assertThat(target().backend().inspect(sb.id())).isEmpty();
    sb.destroy(); // idempotent
    target().backend().destroy(sb.id()); // also at the SPI
  }

  @Test
  default void callsOnADestroyedSandboxFailAsClosed() {
    Sandbox sb = Sandbox.create(target().configure().build());
    sb.close();
    assertThatThrownBy(() -> sb.exec("true")).isInstanceOf(SandboxClosedException.class);
    assertThatThrownBy(() -> sb.runCode("1")).isInstanceOf(SandboxClosedException.class);
    assertThatThrownBy(() -> sb.files().read("x")).isInstanceOf(SandboxClosedException.class);
  }

  @Test
  default void anExpiredSandboxIsDestroyedOnItsOwn() {
    Sandbox sb = Sandbox.create(target().configure().ttl(Duration.ofSeconds(3)).build());
    try {
      await()
          .atMost(Duration.ofSeconds(90))
          .pollInterval(Duration.ofMillis(500))
          .until(() -> target().backend().inspect(sb.id()).isEmpty());
      assertThat(sb.isAlive()).isFalse();
    } finally {
      sb.destroy();
    }
  }

  @Test
  default void extendMovesTheExpiryLater(Sandbox sb) {
    Instant before = sb.expiresAt();
    sb.extend(Duration.ofMinutes(10));
    assertThat(sb.expiresAt()).isAfterOrEqualTo(before.plus(Duration.ofMinutes(10)));
    assertThat(sb.exec("echo still").stdout()).isEqualTo("still\n");
  }
}
