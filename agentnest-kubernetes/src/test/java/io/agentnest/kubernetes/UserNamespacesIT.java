package io.agentnest.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ExecOptions;
import io.agentnest.Execution;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.kubernetes.internal.UserNamespaces;
import io.agentnest.spi.Backends;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.OptionalLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Sandbox pods on runc run in a user namespace of their own on the test cluster's node (Kubernetes
 * 1.35, containerd 2, Linux 6.x): read from both sides, the sandbox's view of its uid map and the
 * node's view of the sandbox's process. The node is this machine, so its /proc is read directly.
 */
@ExtendWith(KubernetesClusterRequired.class)
class UserNamespacesIT {
  private static SandboxInfo info(Sandbox sb) {
    return Backends.get("kubernetes").inspect(sb.id()).orElseThrow();
  }

  private static Pod pod(SandboxInfo info) {
    try (KubernetesClient admin =
        new KubernetesClientBuilder().withConfig(Config.autoConfigure(null)).build()) {
      return admin.pods().inAnyNamespace().list().getItems().stream()
          .filter(p -> p.getMetadata().getName().equals(info.id()))
          .findFirst()
          .orElseThrow();
    }
  }

  @Test
  void uidZeroInTheSandboxIsAnUnprivilegedUidOnTheNode() throws Exception {
    try (Sandbox sb = Sandbox.create(SandboxConfig.builder().backend("kubernetes").build())) {
      SandboxInfo info = info(sb);
      assertThat(info.labels()).containsEntry(UserNamespaces.LABEL, "true");
      assertThat(pod(info).getSpec().getHostUsers()).isFalse();
      assertThat(pod(info).getMetadata().getAnnotations())
          .containsEntry(UserNamespaces.ANNOTATION, "true");

      // The sandbox's side: uid 0 inside starts a range far from the node's uid 0.
      String[] map = sb.exec("head -1 /proc/self/uid_map").stdout().trim().split("\\s+");
      assertThat(map).hasSize(3);
      assertThat(Long.parseLong(map[0])).isZero();
      long hostBase = Long.parseLong(map[1]);
      assertThat(hostBase).as("the node uid of the pod's uid 0").isPositive();
      long inside = Long.parseLong(sb.exec("id -u").stdout().trim());

      // The node's side: the same process, seen in the node's /proc, has the mapped uid.
      String marker = "987." + (System.nanoTime() % 1_000_000);
      Execution sleeper = sb.start("exec sleep " + marker, ExecOptions.defaults());
      try {
        OptionalLong hostUid = OptionalLong.empty();
        for (int i = 0; i < 100 && hostUid.isEmpty(); i++) {
          hostUid = hostUidOfProcess("sleep", marker);
          if (hostUid.isEmpty()) {
            Thread.sleep(100);
          }
        }
        assertThat(hostUid)
            .as("the sandbox's sleep " + marker + " in the node's /proc")
            .isPresent();
        assertThat(hostUid.getAsLong())
            .isEqualTo(hostBase + inside)
            .isNotEqualTo(inside)
            .isNotZero();
      } finally {
        sleeper.cancel();
      }
    }
  }

  /** The real uid of the node's process running exactly {@code argv}, from its /proc entry. */
  private static OptionalLong hostUidOfProcess(String... argv) throws IOException {
    byte[] want = (String.join("\0", argv) + "\0").getBytes(StandardCharsets.UTF_8);
    try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
      for (Path p : procs.filter(p -> p.getFileName().toString().matches("\\d+")).toList()) {
        try {
          if (Arrays.equals(Files.readAllBytes(p.resolve("cmdline")), want)) {
            for (String line : Files.readAllLines(p.resolve("status"))) {
              if (line.startsWith("Uid:")) {
                return OptionalLong.of(Long.parseLong(line.split("\\s+")[1]));
              }
            }
          }
        } catch (IOException gone) {
          // the process ended between the listing and the read
        }
      }
    }
    return OptionalLong.empty();
  }

  @Nested
  @ExtendWith(GvisorRuntimeClassRequired.class)
  class OnGvisor {
    @Test
    void aGvisorPodHasNoneAndItsPodSaysWhy() {
      SandboxConfig config =
          SandboxConfig.builder().backend("kubernetes").runtime("gvisor").build();
      try (Sandbox sb = Sandbox.create(config)) {
        SandboxInfo info = info(sb);
        assertThat(info.labels()).containsEntry(UserNamespaces.LABEL, "false");
        Pod pod = pod(info);
        assertThat(pod.getSpec().getHostUsers()).isNotEqualTo(Boolean.FALSE);
        assertThat(pod.getMetadata().getAnnotations().get(UserNamespaces.ANNOTATION))
            .startsWith("no: RuntimeClass gvisor")
            .contains("kernel of its own");
        assertThat(sb.exec("echo ok").stdout()).isEqualTo("ok\n");
      }
    }
  }
}
