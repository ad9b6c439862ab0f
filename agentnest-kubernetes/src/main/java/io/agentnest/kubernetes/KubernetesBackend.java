package io.agentnest.kubernetes;

import io.agentnest.BackendUnavailableException;
import io.agentnest.ConfigException;
import io.agentnest.SandboxClosedException;
import io.agentnest.SandboxInfo;
import io.agentnest.config.AgentNestConfig;
import io.agentnest.config.ConfigurableBackend;
import io.agentnest.config.KubernetesOptions;
import io.agentnest.kubernetes.internal.KubeCluster;
import io.agentnest.kubernetes.internal.KubeDoctor;
import io.agentnest.kubernetes.internal.KubeErrors;
import io.agentnest.kubernetes.internal.KubeSettings;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.HealthCheck;
import io.agentnest.spi.ManagedResource;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.spi.SandboxSpec;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Sandboxes as hardened pods on a Kubernetes cluster, one namespace per tenant. The cluster is the
 * one the kubeconfig names (as kubectl finds it, or the in-cluster service account); the rest of
 * the settings come from {@code AGENTNEST_KUBERNETES_*} over the configuration file's {@code
 * kubernetes:} block (see docs/kubernetes.md). The agent, its channel, the egress proxy, the policy
 * and the audit are the same as on Docker.
 */
public final class KubernetesBackend implements RuntimeBackend, ConfigurableBackend {
  private final @Nullable KubeSettings given;
  private volatile @Nullable KubeCluster cluster;
  private volatile @Nullable KubernetesOptions fromFile;

  /** ServiceLoader constructor; reads its settings and connects on first use. */
  public KubernetesBackend() {
    this.given = null;
  }

  /** A backend with explicit settings (tests, embedding). */
  public KubernetesBackend(KubeSettings settings) {
    this.given = settings;
  }

  private KubeCluster cluster() {
    KubeCluster c = cluster;
    if (c == null) {
      synchronized (this) {
        c = cluster;
        if (c == null) {
          c = KubeCluster.connect(settings());
          cluster = c;
        }
      }
    }
    return c;
  }

  private KubeSettings settings() {
    if (given != null) {
      return given;
    }
    KubernetesOptions file = fromFile;
    return file != null ? KubeSettings.fromEnvironment(file) : KubeSettings.fromEnvironment();
  }

  @Override
  public String name() {
    return "kubernetes";
  }

  /**
   * Takes the {@code kubernetes:} block of {@code config} (with {@code profile}) instead of the
   * discovered file's. Settings given to the constructor win; once connected, other settings are an
   * error (one backend instance talks to one cluster with one set of settings).
   */
  @Override
  public void configure(AgentNestConfig config, @Nullable String profile) {
    if (given != null) {
      return;
    }
    KubernetesOptions file = config.kubernetes(profile);
    synchronized (this) {
      KubeCluster c = cluster;
      if (c != null && !c.settings().equals(KubeSettings.fromEnvironment(file))) {
        throw new ConfigException(
            "the kubernetes backend is already connected with other settings: configure it"
                + " before its first use");
      }
      fromFile = file;
    }
  }

  @Override
  public BackendSandbox create(SandboxSpec spec) {
    try {
      return cluster().create(spec);
    } catch (KubeErrors.QuotaFull e) {
      // Only a pod's creation meets a quota: the one place the public type is made.
      throw new QuotaExceededException(String.valueOf(e.getMessage()), e);
    }
  }

  @Override
  public BackendSandbox attach(String id) {
    // The agent runs as an exec: attaching starts a new one, with the same command.
    BackendSandbox bs = cluster().attach(id, AgentCommand.get());
    try {
      bs.toAgent().write(AgentCommand.startBytes());
      bs.toAgent().flush();
    } catch (IOException e) {
      bs.close();
      throw new SandboxClosedException("could not start the agent in sandbox " + id + ": " + e);
    }
    return bs;
  }

  @Override
  public Optional<String> imageId(String image) {
    return cluster().imageId(image);
  }

  @Override
  public List<SandboxInfo> list() {
    return cluster().list();
  }

  @Override
  public Optional<SandboxInfo> inspect(String id) {
    return cluster().inspect(id);
  }

  @Override
  public boolean relabel(String id, Map<String, String> labels) {
    return cluster().relabel(id, labels);
  }

  @Override
  public void destroy(String id) {
    cluster().destroy(id);
  }

  @Override
  public List<ManagedResource> resources() {
    return cluster().resources();
  }

  @Override
  public List<HealthCheck> diagnose() {
    KubeCluster c;
    try {
      c = cluster();
    } catch (BackendUnavailableException e) {
      // The words every command prints when no cluster is configured, as a failed check.
      return List.of(
          HealthCheck.fail(
              "kubernetes api",
              String.valueOf(e.getMessage()),
              "export KUBECONFIG=PATH of the cluster's kubeconfig"));
    }
    return KubeDoctor.run(c);
  }
}
