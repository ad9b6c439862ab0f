package io.agentnest.kubernetes;

import io.agentnest.SandboxConfig;
import io.agentnest.tck.Prerequisites;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Integration tests need a real Kubernetes cluster: the one {@code scripts/k8s/cluster.sh up}
 * starts on this machine (the suite's script starts it), or any cluster KUBECONFIG names. The base
 * image is copied into the test cluster's container runtime from the Docker engine. Outside CI a
 * missing cluster skips with the reason; under {@code CI=true} it fails.
 */
public final class KubernetesClusterRequired implements BeforeAllCallback {
  static final Path TEST_CLUSTER_KUBECONFIG = Path.of("/var/lib/agentnest-k8s/admin.kubeconfig");

  /** The test cluster's node holds AgentNest's profile here, as docs/kubernetes.md tells admins. */
  static final Path TEST_CLUSTER_SECCOMP = Path.of("/var/lib/agentnest-k8s/kubelet/seccomp");

  static final String SECCOMP_PROPERTY = "agentnest.kubernetes.seccomp.profile";
  static final String SECCOMP_GVISOR_PROPERTY = "agentnest.kubernetes.seccomp.profile.gvisor";

  private static volatile boolean imported;

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    if (System.getenv("KUBECONFIG") == null && System.getProperty("kubeconfig") == null) {
      if (!Files.exists(TEST_CLUSTER_KUBECONFIG)) {
        missing("no KUBECONFIG and no test cluster: run scripts/k8s/cluster.sh up");
        return;
      }
      System.setProperty("kubeconfig", TEST_CLUSTER_KUBECONFIG.toString());
    }
    Path script = script();
    if (script != null && Files.exists(TEST_CLUSTER_KUBECONFIG)) {
      if (run(script, "status") != 0) {
        missing("the test cluster is not up: run scripts/k8s/cluster.sh up");
        return;
      }
      synchronized (KubernetesClusterRequired.class) {
        if (!imported) {
          if (run(script, "import", SandboxConfig.DEFAULT_IMAGE) != 0) {
            missing(
                "cannot import "
                    + SandboxConfig.DEFAULT_IMAGE
                    + " into the test cluster: build it with 'agentnest image build'");
            return;
          }
          imported = true;
        }
      }
      // Configured as an administrator would after installing the profile on the nodes.
      if (System.getProperty(SECCOMP_PROPERTY) == null
          && System.getenv("AGENTNEST_KUBERNETES_SECCOMP_PROFILE") == null) {
        if (!Files.exists(TEST_CLUSTER_SECCOMP.resolve("agentnest.json"))) {
          missing("the test cluster's node has no agentnest.json profile: run cluster.sh up");
          return;
        }
        System.setProperty(SECCOMP_PROPERTY, "agentnest.json");
      }
      if (System.getProperty(SECCOMP_GVISOR_PROPERTY) == null
          && System.getenv("AGENTNEST_KUBERNETES_SECCOMP_PROFILE_GVISOR") == null) {
        if (!Files.exists(TEST_CLUSTER_SECCOMP.resolve("agentnest-gvisor.json"))) {
          missing(
              "the test cluster's node has no agentnest-gvisor.json profile: run cluster.sh up");
          return;
        }
        System.setProperty(SECCOMP_GVISOR_PROPERTY, "agentnest-gvisor.json");
      }
    }
  }

  private static Path script() {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      Path s = p.resolve("scripts/k8s/cluster.sh");
      if (Files.isExecutable(s)) {
        return s;
      }
    }
    return null;
  }

  private static int run(Path script, String... args) throws IOException, InterruptedException {
    String[] cmd = new String[args.length + 1];
    cmd[0] = script.toString();
    System.arraycopy(args, 0, cmd, 1, args.length);
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    p.getInputStream().transferTo(System.err);
    if (!p.waitFor(10, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      return -1;
    }
    return p.exitValue();
  }

  static void missing(String problem) {
    Prerequisites.missing("the Kubernetes cluster", problem);
  }
}
