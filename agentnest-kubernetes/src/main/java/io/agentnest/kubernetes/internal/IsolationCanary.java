package io.agentnest.kubernetes.internal;

import io.agentnest.spi.SandboxSpec;
import io.fabric8.kubernetes.api.model.ContainerStateTerminated;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Does the cluster keep sandbox pods apart? A NetworkPolicy is only as good as the network plugin
 * that enforces it (Kubernetes stores it either way), so this does not read configuration: it
 * starts a listener pod and a prober pod in the tenant's namespace, with the deny-all policy in
 * place, and the prober tries to reach the listener and the node's kubelet. Anything that answers,
 * even with a refusal, means packets got through. Checked once per namespace and process, again
 * after {@link #TTL}.
 */
public final class IsolationCanary {
  static final Duration TTL = Duration.ofMinutes(10);
  static final String ROLE = "isolation-canary";
  private static final int PORT = 8080;
  private static final int REACHED = 10;

  /** What the canary found. */
  public record Result(boolean isolated, String detail, Instant checked) {}

  private static final String LISTENER =
      "import socket\n"
          + "s=socket.socket()\n"
          + "s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
          + "s.bind(('0.0.0.0',"
          + PORT
          + "))\n"
          + "s.listen(16)\n"
          + "for _ in range(100000):\n"
          + " c,_=s.accept()\n"
          + " c.close()\n";

  private static final String READY =
      "import socket\nsocket.create_connection(('127.0.0.1'," + PORT + "),2).close()\n";

  /** Exit 10 when any target answered (a connection or a refusal), 0 when none did. */
  private static final String PROBER =
      "import os,socket,sys,errno\n"
          + "hit=[]\n"
          + "for t in os.environ['TARGETS'].split(','):\n"
          + " h,p=t.rsplit(':',1)\n"
          + " for _ in range(3):\n"
          + "  try:\n"
          + "   socket.create_connection((h,int(p)),2).close()\n"
          + "   hit.append(t+' connected');break\n"
          + "  except ConnectionRefusedError:\n"
          + "   hit.append(t+' refused (it answered)');break\n"
          + "  except OSError as e:\n"
          + "   pass\n"
          + "print('; '.join(hit),file=open('/dev/termination-log','w'))\n"
          + "sys.exit("
          + REACHED
          + " if hit else 0)\n";

  private final KubernetesClient client;
  private final Clock clock;
  private final Map<String, Result> results = new ConcurrentHashMap<>();

  public IsolationCanary(KubernetesClient client, Clock clock) {
    this.client = client;
    this.clock = clock;
  }

  /**
   * The cached or a fresh result for {@code namespace}, checked with pods shaped like {@code spec}.
   */
  public Result check(String namespace, String tenant, SandboxSpec spec, Duration timeout) {
    Result r = results.get(namespace);
    if (r != null && r.checked().plus(TTL).isAfter(clock.instant())) {
      return r;
    }
    synchronized (this) {
      r = results.get(namespace);
      if (r != null && r.checked().plus(TTL).isAfter(clock.instant())) {
        return r;
      }
      r = run(namespace, tenant, spec, timeout);
      results.put(namespace, r);
      return r;
    }
  }

  private Result run(String namespace, String tenant, SandboxSpec spec, Duration timeout) {
    String suffix = UUID.randomUUID().toString().substring(0, 8);
    String listener = "agentnest-canary-listen-" + suffix;
    String prober = "agentnest-canary-probe-" + suffix;
    try {
      Pod l = canaryPod(listener, namespace, tenant, spec, LISTENER, null);
      l =
          new PodBuilder(l)
              .editSpec()
              .editFirstContainer()
              .withNewReadinessProbe()
              .withNewExec()
              .withCommand("python3", "-c", READY)
              .endExec()
              .withPeriodSeconds(1)
              .withTimeoutSeconds(3)
              .endReadinessProbe()
              .endContainer()
              .endSpec()
              .build();
      client.resource(l).create();
      Pod ready =
          client
              .pods()
              .inNamespace(namespace)
              .withName(listener)
              .waitUntilCondition(
                  p -> p == null || isReady(p) || "Failed".equals(p.getStatus().getPhase()),
                  timeout.toSeconds(),
                  TimeUnit.SECONDS);
      if (ready == null || !isReady(ready)) {
        return new Result(
            false, "the canary's listener pod did not become ready: cannot tell", clock.instant());
      }
      String target = ready.getStatus().getPodIP() + ":" + PORT;
      String hostIp = ready.getStatus().getHostIP();
      String targets = hostIp != null ? target + "," + hostIp + ":10250" : target;
      Pod p = canaryPod(prober, namespace, tenant, spec, PROBER, targets);
      client.resource(p).create();
      Pod done =
          client
              .pods()
              .inNamespace(namespace)
              .withName(prober)
              .waitUntilCondition(
                  x -> x == null || terminated(x) != null, timeout.toSeconds(), TimeUnit.SECONDS);
      ContainerStateTerminated t = done == null ? null : terminated(done);
      if (t == null) {
        return new Result(
            false, "the canary's prober did not finish: cannot tell", clock.instant());
      }
      if (t.getExitCode() == 0) {
        return new Result(
            true,
            "a pod in "
                + namespace
                + " could reach neither another pod ("
                + target
                + ") nor the node's kubelet",
            clock.instant());
      }
      String what = t.getMessage() == null ? "" : Text.bounded(t.getMessage().trim(), 300);
      return new Result(
          false,
          t.getExitCode() == REACHED
              ? "a pod in "
                  + namespace
                  + " reached "
                  + what
                  + " although the namespace has a deny-all NetworkPolicy: this cluster's network"
                  + " plugin does not enforce NetworkPolicy"
              : "the canary's prober failed (exit " + t.getExitCode() + "): cannot tell",
          clock.instant());
    } catch (KubernetesClientException e) {
      throw KubeErrors.of(e, "checking network isolation in '" + namespace + "'");
    } finally {
      for (String n : List.of(listener, prober)) {
        try {
          client.pods().inNamespace(namespace).withName(n).withGracePeriod(0).delete();
          // Gone before a sandbox is created: canary pods count against the tenant's quota.
          client
              .pods()
              .inNamespace(namespace)
              .withName(n)
              .waitUntilCondition(Objects::isNull, 60, TimeUnit.SECONDS);
        } catch (KubernetesClientException ignored) {
          // Best effort: 'prune' removes canary pods that outlive their process.
        }
      }
      releaseQuota(namespace);
    }
  }

  /**
   * The quota controller gives back a deleted pod's share of the tenant's quota some time after the
   * pod is gone; until then the canary's two pods would count against a tenant's first sandbox.
   */
  private void releaseQuota(String namespace) {
    try {
      int pods = client.pods().inNamespace(namespace).list().getItems().size();
      client
          .resourceQuotas()
          .inNamespace(namespace)
          .withName(Tenants.QUOTA)
          .waitUntilCondition(
              q ->
                  q == null
                      || q.getStatus() == null
                      || q.getStatus().getUsed() == null
                      || !q.getStatus().getUsed().containsKey("pods")
                      || Integer.parseInt(q.getStatus().getUsed().get("pods").getAmount()) <= pods,
              60,
              TimeUnit.SECONDS);
    } catch (KubernetesClientException | NumberFormatException e) {
      // Best effort: a sandbox refused for quota says so, naming the quota.
    }
  }

  private static Pod canaryPod(
      String name,
      String namespace,
      String tenant,
      SandboxSpec spec,
      String script,
      @Nullable String targets) {
    SandboxSpec small =
        SandboxSpec.builder()
            .image(spec.image())
            .runtime(spec.runtime())
            .command(spec.command())
            .user(spec.user())
            .cpus(0.1)
            .memoryBytes(64L << 20)
            .pidsLimit(spec.pidsLimit())
            .seccompProfileJson(spec.seccompProfileJson())
            .openFilesLimit(spec.openFilesLimit())
            .build();
    Pod base = PodSpecs.build(name, namespace, tenant, small, null, null, "IfNotPresent");
    base.getMetadata().getLabels().put(PodSpecs.ROLE_LABEL, ROLE);
    base.getSpec().getContainers().get(0).setCommand(List.of("python3", "-c", script));
    if (targets != null) {
      base.getSpec().getContainers().get(0).setEnv(List.of(new EnvVar("TARGETS", targets, null)));
    }
    return base;
  }

  private static boolean isReady(Pod p) {
    return p.getStatus() != null
        && p.getStatus().getConditions().stream()
            .anyMatch(c -> "Ready".equals(c.getType()) && "True".equals(c.getStatus()));
  }

  private static @Nullable ContainerStateTerminated terminated(Pod p) {
    if (p.getStatus() == null) {
      return null;
    }
    return p.getStatus().getContainerStatuses().stream()
        .map(ContainerStatus::getState)
        .filter(Objects::nonNull)
        .map(s -> s.getTerminated())
        .filter(Objects::nonNull)
        .findFirst()
        .orElse(null);
  }
}
