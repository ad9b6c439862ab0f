package io.agentnest.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ForkReport;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.Backends;
import io.agentnest.spi.Labels;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.spi.SandboxSpec;
import io.agentnest.tck.BackendContract;
import io.agentnest.tck.BackendUnderTest;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The Kubernetes backend with pods on the {@code gvisor} RuntimeClass passes the backend contract
 * on a real cluster: the same pod hardening, with gVisor's kernel between the sandbox and the node.
 * The node's podPidsLimit does not reach gVisor's tasks: the pod's pid 1 holds them to the limit
 * with RLIMIT_NPROC, which gVisor's kernel counts, with no waiver from the administrator.
 */
@ExtendWith({KubernetesClusterRequired.class, GvisorRuntimeClassRequired.class})
class KubernetesGvisorContractIT implements BackendContract {
  private static final RuntimeBackend BACKEND = Backends.get("kubernetes");

  @Override
  public BackendUnderTest target() {
    return new BackendUnderTest(
        BACKEND,
        SandboxConfig.builder().backend("kubernetes").runtime("gvisor").build(),
        ForkReport.Mode.STATE_TRANSFER,
        false,
        true);
  }

  /** Not only the contract: the pod's kernel is gVisor's, not the node's (this JVM's host). */
  @Test
  void theSandboxDoesNotSeeTheNodesKernel() {
    try (Sandbox sb = Sandbox.create(target().config())) {
      String release = sb.exec("uname -r").stdout().strip();
      assertThat(release).isNotBlank().isNotEqualTo(System.getProperty("os.version"));
    }
  }

  /**
   * The path a user takes with no seccomp setting (the runtime's default profile, which refuses
   * clone3 with ENOSYS so that the C library falls back to clone) and no pids setting (the node
   * states its podPidsLimit): threads start, where an EPERM for clone3 used to end every agent.
   */
  @Test
  void aGvisorPodUnderTheRuntimesDefaultSeccompProfileStartsThreads() throws Exception {
    KubernetesBackend plain = new KubernetesBackend(KubeSettingsAccess.of(Map.of()));
    SandboxSpec spec =
        gvisorSpec(
            "gvisor-default-seccomp",
            "python3",
            "-c",
            "import threading, sys\n"
                + "t = threading.Thread(target=lambda: None)\n"
                + "t.start(); t.join()\n"
                + "sys.stdout.write('threads started: %d\\n' % threading.active_count())\n"
                + "sys.stdout.flush()\n"
                + "sys.stdin.read()\n");
    BackendSandbox sb = plain.create(spec);
    try {
      byte[] line = new byte[64];
      int n = sb.fromAgent().readNBytes(line, 0, "threads started: 1\n".length());
      assertThat(new String(line, 0, n, StandardCharsets.UTF_8))
          .as(sb.diagnostics())
          .isEqualTo("threads started: 1\n");
    } finally {
      sb.close();
      plain.destroy(sb.id());
    }
  }

  /**
   * Without any waiver, the pids limit holds inside gVisor's kernel (RLIMIT_NPROC set by the pod's
   * pid 1): threads past it are refused to the sandbox's code, and the pod's annotation says how.
   */
  @Test
  void aGvisorPodIsHeldToItsPidsLimitByGvisorsOwnKernel() throws Exception {
    KubernetesBackend plain = new KubernetesBackend(KubeSettingsAccess.of(Map.of()));
    SandboxSpec spec =
        gvisorSpec(
            "gvisor-pids",
            "python3",
            "-c",
            "import threading, time, sys\n"
                + "n = 0\n"
                + "try:\n"
                + "    for _ in range(1000):\n"
                + "        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
                + "        n += 1\n"
                + "except RuntimeError:\n"
                + "    pass\n"
                + "sys.stdout.write('started %04d\\n' % n)\n"
                + "sys.stdout.flush()\n"
                + "sys.stdin.read()\n");
    BackendSandbox sb = plain.create(spec);
    try {
      byte[] line = new byte[64];
      int n = sb.fromAgent().readNBytes(line, 0, "started 0000\n".length());
      String out = new String(line, 0, n, StandardCharsets.UTF_8);
      assertThat(out).as(sb.diagnostics()).startsWith("started ");
      int started = Integer.parseInt(out.substring(8).trim());
      // 64 tasks of the pod's user in all: pid 1, the exec's connector, the agent, its threads.
      assertThat(started).as("threads started under a limit of 64").isBetween(1, 63);
      assertThat(plain.inspect(sb.id())).isPresent();
      try (KubernetesClient admin =
          new KubernetesClientBuilder().withConfig(Config.autoConfigure(null)).build()) {
        Pod pod =
            admin.pods().inAnyNamespace().list().getItems().stream()
                .filter(p -> p.getMetadata().getName().equals(sb.id()))
                .findFirst()
                .orElseThrow();
        assertThat(pod.getMetadata().getAnnotations().get("agentnest.io/pids-limit"))
            .isEqualTo("64 (RLIMIT_NPROC in the RuntimeClass's own kernel)");
      }
    } finally {
      sb.close();
      plain.destroy(sb.id());
    }
  }

  /** A small gVisor sandbox running {@code command}, labelled {@code tck} for leftovers. */
  private static SandboxSpec gvisorSpec(String tck, String... command) {
    return SandboxSpec.builder()
        .image(SandboxConfig.DEFAULT_IMAGE)
        .runtime("gvisor")
        .command(command)
        .labels(Map.of(Labels.MANAGED, "true", "agentnest-tck", tck))
        .cpus(0.2)
        .memoryBytes(64L << 20)
        .pidsLimit(64)
        .openFilesLimit(1024)
        .tmpfs(Map.of("/tmp", 8L << 20))
        .seccompProfileJson("{}")
        .build();
  }
}
