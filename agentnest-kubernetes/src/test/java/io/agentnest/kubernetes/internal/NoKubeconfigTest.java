package io.agentnest.kubernetes.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Without a cluster configured, every command says so in the same words, with the fix. */
class NoKubeconfigTest {
  @Test
  void noKubeconfigAnywhereSaysWhatToExport(@TempDir Path home) {
    assertThat(KubeCluster.noKubeconfig(null, home.toString()))
        .contains("no Kubernetes cluster is configured", "export KUBECONFIG=");
  }

  @Test
  void aKubeconfigVariableNamingNoFileSaysSo(@TempDir Path home) {
    assertThat(KubeCluster.noKubeconfig(home.resolve("missing").toString(), home.toString()))
        .contains("KUBECONFIG names", "where there is no kubeconfig file");
  }

  @Test
  void aKubeconfigInTheVariableOrTheHomeIsEnough(@TempDir Path home) throws Exception {
    Path file = Files.writeString(home.resolve("config"), "apiVersion: v1\n");
    assertThat(KubeCluster.noKubeconfig(file.toString(), home.toString())).isNull();
    Files.createDirectories(home.resolve(".kube"));
    Files.writeString(home.resolve(".kube/config"), "apiVersion: v1\n");
    assertThat(KubeCluster.noKubeconfig(null, home.toString())).isNull();
  }
}
