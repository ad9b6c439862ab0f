package io.agentnest.kubernetes.internal;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeRuntimeHandler;
import io.fabric8.kubernetes.api.model.node.v1.RuntimeClass;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Whether a sandbox pod runs in a user namespace of its own ({@code hostUsers: false}): uid 0 in
 * the pod is then an unprivileged uid on the node, so a process that breaks out of the container is
 * nobody there. Used where every node says its runtime handler supports it (the kubelet reports
 * {@code status.runtimeHandlers[].features.userNamespaces}: Kubernetes 1.33+, containerd 2, a
 * kernel with idmapped mounts); never for a runtime with a kernel of its own: gVisor's shim claims
 * support but its gofer cannot join the pod's namespace (the pod sandbox fails "setting namespace
 * of type user ... invalid argument"), and its Sentry is that boundary already.
 */
public final class UserNamespaces {
  /** Where a pod records the decision: {@code true}, or {@code no: <why>}. */
  public static final String ANNOTATION = "agentnest.io/user-namespace";

  /** The label a sandbox's info carries: {@code true} or {@code false}. */
  public static final String LABEL = "agentnest.user-namespace";

  /** RuntimeClass handlers whose containers are processes of the node's own kernel. */
  static final Set<String> NODE_KERNEL_HANDLERS = Set.of("runc", "crun");

  private static final Duration FRESH = Duration.ofSeconds(60);

  /** The decision for one runtime handler. */
  public record Decision(boolean use, String detail) {
    String annotation() {
      return use ? "true" : "no: " + detail;
    }
  }

  private record Seen(Decision decision, Instant at) {}

  private final Supplier<List<Node>> nodes;
  private final Clock clock;
  private final ConcurrentHashMap<String, Seen> byHandler = new ConcurrentHashMap<>();

  UserNamespaces(Supplier<List<Node>> nodes, Clock clock) {
    this.nodes = nodes;
    this.clock = clock;
  }

  static UserNamespaces of(KubernetesClient client) {
    return new UserNamespaces(() -> client.nodes().list().getItems(), Clock.systemUTC());
  }

  /** For pods of {@code rc} (null: the cluster's default runtime); nodes read once a minute. */
  public Decision forRuntime(@Nullable RuntimeClass rc) {
    String handler = rc == null ? "" : String.valueOf(rc.getHandler());
    if (rc != null && !NODE_KERNEL_HANDLERS.contains(handler)) {
      return new Decision(
          false,
          "RuntimeClass "
              + rc.getMetadata().getName()
              + " (handler "
              + handler
              + ") runs a kernel of its own, which is the boundary there; gVisor's shim cannot"
              + " put a pod in a user namespace");
    }
    Instant now = clock.instant();
    Seen seen = byHandler.get(handler);
    if (seen == null || seen.at.plus(FRESH).isBefore(now)) {
      seen = new Seen(decide(handler), now);
      byHandler.put(handler, seen);
    }
    return seen.decision;
  }

  private Decision decide(String handler) {
    List<Node> all;
    try {
      all = nodes.get();
    } catch (KubernetesClientException e) {
      return new Decision(
          false,
          "cannot list the nodes to see whether they support user namespaces (HTTP "
              + e.getCode()
              + "): grant the backend's account 'list' on nodes (deploy/kubernetes/rbac.yaml)");
    }
    return decide(handler, all);
  }

  static Decision decide(String handler, List<Node> all) {
    if (all.isEmpty()) {
      return new Decision(false, "the cluster has no nodes");
    }
    for (Node n : all) {
      if (!supports(n, handler)) {
        return new Decision(
            false,
            "node "
                + n.getMetadata().getName()
                + " does not report user namespaces for runtime handler '"
                + handler
                + "' (they need Kubernetes 1.33+, containerd 2 or CRI-O 1.30+, and Linux 6.3+)");
      }
    }
    return new Decision(true, "every node supports them for runtime handler '" + handler + "'");
  }

  private static boolean supports(Node n, String handler) {
    if (n.getStatus() == null || n.getStatus().getRuntimeHandlers() == null) {
      return false;
    }
    for (NodeRuntimeHandler h : n.getStatus().getRuntimeHandlers()) {
      String name = h.getName() == null ? "" : h.getName();
      if (name.equals(handler)) {
        return h.getFeatures() != null && Boolean.TRUE.equals(h.getFeatures().getUserNamespaces());
      }
    }
    return false;
  }
}
