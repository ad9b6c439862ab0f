package io.agentnest.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.SandboxConfig;
import io.agentnest.escapes.EscapeReport;
import io.agentnest.escapes.EscapeSuite;
import io.agentnest.escapes.Outcome;
import io.agentnest.escapes.ProbeResult;
import java.util.List;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The whole escape suite against sandbox pods on the real cluster, on runc and on the gVisor
 * RuntimeClass: the same hostile programs as on Docker, judged the same way.
 */
@ExtendWith(KubernetesClusterRequired.class)
class KubernetesEscapeSuiteIT {
  /**
   * The test cluster's containerd root (images, snapshots), its scratch directory (a
   * user-namespaced pod's idmapped overlay is mounted there) and kubelet root (each pod's
   * /etc/hosts and termination log), as scripts/k8s/cluster.sh lays them out.
   */
  private static final List<String> ENGINE_ROOTS =
      List.of(
          "/var/lib/agentnest-k8s/containerd/root",
          "/var/lib/agentnest-k8s/containerd/tmp",
          "/var/lib/agentnest-k8s/kubelet");

  static EscapeReport runOn(SandboxConfig base) {
    String runtime = EscapeSuite.backendOf(base);
    EscapeReport report =
        EscapeSuite.builder()
            .base(base)
            .runtime(base.runtime())
            .engineRoots(ENGINE_ROOTS)
            .build()
            .run();
    System.out.println("\nescape suite on kubernetes/" + runtime + ":\n" + report.table(110));
    return report;
  }

  static void assertNothingGotThrough(EscapeReport report, String runtime) {
    assertThat(report.results()).hasSize(EscapeSuite.probes().size());
    assertThat(report.failures())
        .as(
            "probes that got through or broke on kubernetes/" + runtime + ":\n%s",
            new EscapeReport(report.failures()).table(400))
        .isEmpty();
  }

  @Test
  void nothingGetsThroughOnRuncPods() {
    EscapeReport report = runOn(SandboxConfig.builder().backend("kubernetes").build());
    assertNothingGotThrough(report, "runc");
    // runc pods run the node's kernel: nothing may be excused as contained in a user-space kernel.
    assertThat(report.counts()).doesNotContainKey(Outcome.CONTAINED);
  }

  @Nested
  @ExtendWith(GvisorRuntimeClassRequired.class)
  class OnGvisor {
    @Test
    void nothingGetsThroughOnGvisorPods() {
      // The test cluster allows gVisor pods an unenforced pids limit (KubernetesClusterRequired):
      // the thread bomb is then contained by gVisor's kernel and the memory limit.
      EscapeReport report =
          runOn(SandboxConfig.builder().backend("kubernetes").runtime("gvisor").build());
      assertNothingGotThrough(report, "gvisor");
      for (ProbeResult r : report.results()) {
        if (r.outcome() == Outcome.CONTAINED) {
          assertThat(r.detail()).as(r.probe()).contains("gVisor");
        }
      }
    }
  }
}
