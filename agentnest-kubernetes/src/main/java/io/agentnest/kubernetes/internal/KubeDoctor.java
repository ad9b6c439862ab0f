package io.agentnest.kubernetes.internal;

import io.agentnest.AgentNestException;
import io.agentnest.SandboxConfig;
import io.agentnest.spi.HealthCheck;
import io.agentnest.spi.SandboxSpec;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.ResourceQuota;
import io.fabric8.kubernetes.api.model.authorization.v1.SelfSubjectAccessReview;
import io.fabric8.kubernetes.api.model.authorization.v1.SelfSubjectAccessReviewBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.util.ArrayList;
import java.util.List;

/** {@code agentnest doctor --backend kubernetes}: what the backend needs from the cluster. */
public final class KubeDoctor {
  private KubeDoctor() {}

  /** What the backend does in a tenant namespace, as (verb, resource, subresource). */
  static final List<String[]> NEEDED =
      List.of(
          new String[] {"create", "pods", ""},
          new String[] {"get", "pods", ""},
          new String[] {"list", "pods", ""},
          new String[] {"delete", "pods", ""},
          new String[] {"create", "pods", "exec"},
          new String[] {"get", "resourcequotas", ""},
          new String[] {"get", "networkpolicies", ""});

  public static List<HealthCheck> run(KubeCluster cluster) {
    List<HealthCheck> out = new ArrayList<>();
    KubernetesClient c = cluster.client();
    KubeSettings s = cluster.settings();
    String ns = s.namespaceOf(null);
    try {
      var v = c.getKubernetesVersion();
      out.add(
          HealthCheck.ok(
              "kubernetes api", c.getMasterUrl() + " answers, version " + v.getGitVersion()));
    } catch (KubernetesClientException e) {
      out.add(
          HealthCheck.fail(
              "kubernetes api",
              "no answer from the cluster: " + Text.bounded(String.valueOf(e.getMessage()), 300),
              "check KUBECONFIG (or AGENTNEST_KUBERNETES_CONTEXT) and that the cluster is up"));
      return out;
    }
    List<String> missing = new ArrayList<>();
    for (String[] n : NEEDED) {
      if (!allowed(c, ns, n[0], n[1], n[2])) {
        missing.add(n[0] + " " + n[1] + (n[2].isEmpty() ? "" : "/" + n[2]));
      }
    }
    out.add(
        missing.isEmpty()
            ? HealthCheck.ok("kubernetes rbac", "the account may run sandboxes in " + ns)
            : HealthCheck.fail(
                "kubernetes rbac",
                "in " + ns + " the account may not: " + String.join(", ", missing),
                "apply deploy/kubernetes/rbac.yaml for this tenant (kubectl apply -f ...)"));
    if (s.agentSandbox()) {
      out.add(
          cluster.agentSandboxes().installed(ns)
              ? HealthCheck.ok(
                  "kubernetes agent-sandbox",
                  "the cluster serves Sandbox (agents.x-k8s.io/v1beta1) in " + ns)
              : HealthCheck.fail(
                  "kubernetes agent-sandbox",
                  AgentSandboxes.NOT_INSTALLED,
                  AgentSandboxes.INSTALL));
    }
    try {
      var rcs = cluster.runtimeClasses().stream().map(r -> r.getMetadata().getName()).toList();
      out.add(
          rcs.isEmpty()
              ? HealthCheck.warn(
                  "kubernetes runtime classes",
                  "none: sandboxes run on the nodes' default runtime (runc)",
                  "for stronger isolation install gVisor or Kata on the nodes and create a"
                      + " RuntimeClass (deploy/kubernetes/runtimeclass-gvisor.yaml)")
              : HealthCheck.ok("kubernetes runtime classes", String.join(", ", rcs)));
    } catch (KubernetesClientException e) {
      out.add(
          HealthCheck.warn(
              "kubernetes runtime classes",
              "cannot list them: " + Text.bounded(String.valueOf(e.getMessage()), 200),
              "grant 'list runtimeclasses' (deploy/kubernetes/rbac.yaml)"));
    }
    out.add(userNamespaces(cluster.userNamespaces().forRuntime(null)));
    out.add(
        s.seccompLocalhostProfile() != null
            ? HealthCheck.ok(
                "kubernetes seccomp",
                "Localhost/"
                    + s.seccompLocalhostProfile()
                    + " (AgentNest's profile on the nodes)"
                    + (s.seccompLocalhostProfileGvisor() != null
                        ? "; gVisor pods: Localhost/" + s.seccompLocalhostProfileGvisor()
                        : "; gVisor pods refused: no AGENTNEST_KUBERNETES_SECCOMP_PROFILE_GVISOR"))
            : HealthCheck.warn(
                "kubernetes seccomp",
                "RuntimeDefault: the container runtime's default profile, not AgentNest's",
                "copy AgentNest's profile to each node's kubelet seccomp directory and set"
                    + " AGENTNEST_KUBERNETES_SECCOMP_PROFILE (docs/kubernetes.md)"));
    try {
      cluster.tenants().ensure(s.tenant(), ns);
      ResourceQuota q = c.resourceQuotas().inNamespace(ns).withName(Tenants.QUOTA).get();
      out.add(
          q == null || q.getStatus() == null
              ? HealthCheck.warn("kubernetes quota", "no quota status in " + ns, "")
              : HealthCheck.ok(
                  "kubernetes quota",
                  ns + ": used " + q.getStatus().getUsed() + " of " + q.getStatus().getHard()));
      out.add(podSecurity(c, ns));
      IsolationCanary.Result iso =
          cluster.canary().check(ns, s.tenant(), canarySpec(), s.startTimeout());
      out.add(
          iso.isolated()
              ? HealthCheck.ok("kubernetes network isolation", iso.detail())
              : s.allowUnisolatedNetwork()
                  ? HealthCheck.warn(
                      "kubernetes network isolation",
                      iso.detail() + " (accepted: AGENTNEST_KUBERNETES_ALLOW_UNISOLATED_NETWORK)",
                      "install a network plugin that enforces NetworkPolicy")
                  : HealthCheck.fail(
                      "kubernetes network isolation",
                      iso.detail() + "; sandboxes are refused",
                      "install a network plugin that enforces NetworkPolicy (Calico, Cilium,"
                          + " ...)"));
    } catch (AgentNestException e) {
      out.add(
          HealthCheck.fail("kubernetes tenant", String.valueOf(e.getMessage()), "see the message"));
    }
    return out;
  }

  /** Whether runc pods get a user namespace of their own (gVisor pods never do: see the class). */
  static HealthCheck userNamespaces(UserNamespaces.Decision d) {
    return d.use()
        ? HealthCheck.ok(
            "kubernetes user namespaces",
            "runc pods run with hostUsers: false (uid 0 in a pod is an unprivileged uid on its"
                + " node): "
                + d.detail())
        : HealthCheck.warn(
            "kubernetes user namespaces",
            "runc pods share the node's uids: " + d.detail(),
            "run nodes with Kubernetes 1.33+, containerd 2 (or CRI-O 1.30+) and Linux 6.3+;"
                + " gVisor pods do not need them");
  }

  /** Whether the API server enforces the restricted Pod Security standard in the namespace. */
  static HealthCheck podSecurity(KubernetesClient c, String ns) {
    Namespace n;
    try {
      n = c.namespaces().withName(ns).get();
    } catch (KubernetesClientException e) {
      return HealthCheck.warn(
          "kubernetes pod security",
          "cannot read namespace " + ns + " (a tenant's account may not)",
          "an administrator checks its pod-security.kubernetes.io labels"
              + " (deploy/kubernetes/tenant.yaml)");
    }
    if (n != null && Tenants.podSecurityLabelled(n)) {
      return HealthCheck.ok(
          "kubernetes pod security", ns + ": the API server enforces the restricted standard");
    }
    return HealthCheck.warn(
        "kubernetes pod security",
        ns + " lacks the label pod-security.kubernetes.io/enforce=restricted",
        "label it as deploy/kubernetes/tenant.yaml does (the backend does when its account may)");
  }

  private static SandboxSpec canarySpec() {
    return SandboxSpec.builder()
        .image(SandboxConfig.DEFAULT_IMAGE)
        .command("python3")
        .cpus(0.1)
        .memoryBytes(64L << 20)
        .pidsLimit(64)
        .seccompProfileJson("{}")
        .openFilesLimit(1024)
        .build();
  }

  static boolean allowed(KubernetesClient c, String ns, String verb, String resource, String sub) {
    SelfSubjectAccessReview r =
        new SelfSubjectAccessReviewBuilder()
            .withNewSpec()
            .withNewResourceAttributes()
            .withNamespace(ns.isEmpty() ? null : ns)
            .withVerb(verb)
            .withResource(resource)
            .withSubresource(sub.isEmpty() ? null : sub)
            .endResourceAttributes()
            .endSpec()
            .build();
    try {
      SelfSubjectAccessReview res = c.authorization().v1().selfSubjectAccessReview().create(r);
      return res.getStatus() != null && Boolean.TRUE.equals(res.getStatus().getAllowed());
    } catch (KubernetesClientException e) {
      return false;
    }
  }
}
