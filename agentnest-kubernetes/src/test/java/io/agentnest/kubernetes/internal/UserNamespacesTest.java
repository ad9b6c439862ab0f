package io.agentnest.kubernetes.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.spi.HealthCheck;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.node.v1.RuntimeClass;
import io.fabric8.kubernetes.api.model.node.v1.RuntimeClassBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

class UserNamespacesTest {
  /** A node whose kubelet reports {@code handler -> userNamespaces} for each pair. */
  private static Node node(String name, Object... handlers) {
    NodeBuilder b = new NodeBuilder().withNewMetadata().withName(name).endMetadata();
    var status = b.withNewStatus();
    for (int i = 0; i < handlers.length; i += 2) {
      status
          .addNewRuntimeHandler()
          .withName((String) handlers[i])
          .withNewFeatures()
          .withUserNamespaces((Boolean) handlers[i + 1])
          .endFeatures()
          .endRuntimeHandler();
    }
    return status.endStatus().build();
  }

  private static RuntimeClass runtimeClass(String name, String handler) {
    return new RuntimeClassBuilder()
        .withNewMetadata()
        .withName(name)
        .endMetadata()
        .withHandler(handler)
        .build();
  }

  private static UserNamespaces over(Supplier<List<Node>> nodes) {
    return new UserNamespaces(nodes, Clock.fixed(Instant.EPOCH, ZoneOffset.UTC));
  }

  @Test
  void runcPodsGetOneWhereEveryNodeSupportsIt() {
    UserNamespaces u =
        over(() -> List.of(node("a", "", true, "runc", true), node("b", "", true, "runc", true)));
    assertThat(u.forRuntime(null).use()).isTrue();
    assertThat(u.forRuntime(runtimeClass("runc", "runc")).use()).isTrue();
    assertThat(u.forRuntime(null).annotation()).isEqualTo("true");
  }

  @Test
  void oneNodeWithoutSupportKeepsEveryPodOnTheNodesUidsAndIsNamed() {
    UserNamespaces.Decision d =
        over(() -> List.of(node("a", "", true), node("old-node", "", false))).forRuntime(null);
    assertThat(d.use()).isFalse();
    assertThat(d.annotation()).startsWith("no: node old-node").contains("Kubernetes 1.33+");
    // A kubelet that reports no runtime handlers at all (before 1.30) counts as no support.
    assertThat(over(() -> List.of(node("older"))).forRuntime(null).use()).isFalse();
  }

  @Test
  void gvisorPodsNeverGetOneEvenWhenTheNodeClaimsSupport() {
    UserNamespaces.Decision d =
        over(() -> List.of(node("a", "runsc", true))).forRuntime(runtimeClass("gvisor", "runsc"));
    assertThat(d.use()).isFalse();
    assertThat(d.detail()).contains("RuntimeClass gvisor").contains("kernel of its own");
  }

  @Test
  void anAccountThatMayNotListNodesIsToldWhichGrantIsMissing() {
    UserNamespaces.Decision d =
        over(() -> {
              throw new KubernetesClientException("forbidden", 403, null);
            })
            .forRuntime(null);
    assertThat(d.use()).isFalse();
    assertThat(d.detail()).contains("HTTP 403").contains("'list' on nodes");
  }

  @Test
  void theNodesAreReadOnceAMinuteNotOnEveryCreate() {
    AtomicInteger reads = new AtomicInteger();
    Instant[] now = {Instant.EPOCH};
    Clock clock =
        new Clock() {
          @Override
          public ZoneOffset getZone() {
            return ZoneOffset.UTC;
          }

          @Override
          public Clock withZone(ZoneId zone) {
            return this;
          }

          @Override
          public Instant instant() {
            return now[0];
          }
        };
    UserNamespaces u =
        new UserNamespaces(
            () -> {
              reads.incrementAndGet();
              return List.of(node("a", "", true));
            },
            clock);
    for (int i = 0; i < 5; i++) {
      u.forRuntime(null);
    }
    assertThat(reads).hasValue(1);
    now[0] = now[0].plus(Duration.ofSeconds(61));
    u.forRuntime(null);
    assertThat(reads).hasValue(2);
  }

  @Test
  void theDoctorSaysWhetherRuncPodsGetOneAndWhatTheNodesNeed() {
    HealthCheck ok = KubeDoctor.userNamespaces(new UserNamespaces.Decision(true, "every node"));
    assertThat(ok.status()).isEqualTo(HealthCheck.Status.OK);
    assertThat(ok.detail()).contains("hostUsers: false");
    HealthCheck warn =
        KubeDoctor.userNamespaces(
            over(() -> List.of(node("old-node", "", false))).forRuntime(null));
    assertThat(warn.status()).isEqualTo(HealthCheck.Status.WARN);
    assertThat(warn.detail()).contains("old-node");
    assertThat(warn.fix()).contains("containerd 2");
  }
}
