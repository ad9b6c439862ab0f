package io.agentnest.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.kubernetes.internal.PodSpecs;
import io.agentnest.kubernetes.internal.Tenants;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.Labels;
import io.agentnest.spi.SandboxSpec;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.SecurityContextBuilder;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.ServiceAccountBuilder;
import io.fabric8.kubernetes.api.model.authentication.TokenRequestBuilder;
import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import io.fabric8.kubernetes.api.model.rbac.RoleBindingBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tenants on a real cluster: one tenant's account cannot see, attach to or delete another tenant's
 * sandboxes, the API server enforces the restricted Pod Security standard in every tenant
 * namespace, and a full quota is an error that names it.
 */
@ExtendWith(KubernetesClusterRequired.class)
class TenancyIT {
  @TempDir static Path dir;
  static KubernetesClient admin;
  static KubernetesBackend adminBackend;
  static final List<String> created = new ArrayList<>();

  @BeforeAll
  static void connect() {
    admin = new KubernetesClientBuilder().withConfig(Config.autoConfigure(null)).build();
    adminBackend = backend(Map.of("NODE_PIDS_LIMIT", "256"));
  }

  @AfterAll
  static void cleanUp() {
    for (String id : created) {
      adminBackend.destroy(id);
    }
    admin.close();
  }

  static KubernetesBackend backend(Map<String, String> settings) {
    return new KubernetesBackend(KubeSettingsAccess.of(settings));
  }

  static SandboxSpec spec(String tenant) {
    return SandboxSpec.builder()
        .image(SandboxConfig.DEFAULT_IMAGE)
        .command("python3", "-u", "-c", "import time; time.sleep(600)")
        .labels(
            Map.of(
                Labels.MANAGED, "true", PodSpecs.TENANT_LABEL, tenant, "agentnest-tck", "tenancy"))
        .cpus(0.2)
        .memoryBytes(64L << 20)
        .pidsLimit(64)
        .tmpfs(Map.of("/tmp", 8L << 20))
        .seccompProfileJson("{}")
        .openFilesLimit(1024)
        .build();
  }

  static String start(KubernetesBackend b, String tenant) {
    BackendSandbox s = b.create(spec(tenant));
    s.close();
    created.add(s.id());
    return s.id();
  }

  @Test
  void aTenantsAccountCannotSeeAttachToOrDeleteAnotherTenantsSandboxes() throws Exception {
    String other = start(adminBackend, "rbac-b");
    String own = start(adminBackend, "rbac-a");
    Path kubeconfig = tenantKubeconfig("agentnest-rbac-a");
    KubernetesBackend tenant =
        backend(
            Map.of(
                "KUBECONFIG", kubeconfig.toString(),
                "TENANT", "rbac-a",
                "NODE_PIDS_LIMIT", "256"));

    assertThat(tenant.list()).extracting(SandboxInfo::id).contains(own).doesNotContain(other);
    assertThat(tenant.inspect(other)).isEmpty();
    assertThatThrownBy(() -> tenant.attach(other)).hasMessageContaining("no sandbox pod");
    tenant.destroy(other);
    assertThat(adminBackend.inspect(other)).isPresent();

    // The same account, straight at the API: refused by RBAC, not just unlisted by the backend.
    try (KubernetesClient c =
        new KubernetesClientBuilder()
            .withConfig(Config.fromKubeconfig(kubeconfig.toFile()))
            .build()) {
      var theirs = c.pods().inNamespace("agentnest-rbac-b").withName(other);
      assertThatThrownBy(theirs::get).isInstanceOf(KubernetesClientException.class);
      assertThatThrownBy(() -> theirs.withGracePeriod(0).delete())
          .isInstanceOf(KubernetesClientException.class)
          .satisfies(e -> assertThat(((KubernetesClientException) e).getCode()).isEqualTo(403));
      assertThatThrownBy(
              () -> c.pods().inNamespace("agentnest-rbac-b").withName(other).exec("true"))
          .isInstanceOf(KubernetesClientException.class);
      // Nor can it lift its own quota or deny-all policy.
      assertThatThrownBy(
              () ->
                  c.resourceQuotas()
                      .inNamespace("agentnest-rbac-a")
                      .withName("agentnest-quota")
                      .withGracePeriod(0)
                      .delete())
          .isInstanceOf(KubernetesClientException.class);
    }
    assertThat(adminBackend.inspect(other)).isPresent();

    // In its own namespace it runs sandboxes (the quota and policy were applied by the admin).
    String mine = start(tenant, "rbac-a");
    assertThat(admin.pods().inNamespace("agentnest-rbac-a").withName(mine).get()).isNotNull();
    tenant.destroy(mine);
    assertThat(admin.pods().inNamespace("agentnest-rbac-a").withName(mine).get()).isNull();
  }

  @Test
  void theApiServerItselfRefusesAPodShortOfTheRestrictedStandardInATenantNamespace() {
    start(adminBackend, "psa");
    assertThat(admin.namespaces().withName("agentnest-psa").get().getMetadata().getLabels())
        .containsAllEntriesOf(Tenants.POD_SECURITY_LABELS);

    // Created straight at the API with the administrator's own account: not the backend's check.
    for (Pod p :
        List.of(
            probe(
                "agentnest-psa",
                "psa-sys-admin",
                new SecurityContextBuilder()
                    .withNewCapabilities()
                    .addToAdd("SYS_ADMIN")
                    .endCapabilities()
                    .build()),
            probe(
                "agentnest-psa",
                "psa-root",
                new SecurityContextBuilder().withRunAsUser(0L).build()))) {
      assertThatThrownBy(() -> admin.resource(p).create())
          .isInstanceOf(KubernetesClientException.class)
          .satisfies(
              e -> {
                assertThat(((KubernetesClientException) e).getCode()).isEqualTo(403);
                assertThat(e.getMessage()).contains("violates PodSecurity", "restricted");
              });
      assertThat(
              admin.pods().inNamespace("agentnest-psa").withName(p.getMetadata().getName()).get())
          .isNull();
    }
  }

  @Test
  void aTenantNamespaceMadeWithoutPodSecurityLabelsGetsThemBeforeItsFirstSandbox() {
    // A namespace of its own per run, removed after: the labels are what is under test.
    String tenant = "psa-old-" + Long.toHexString(System.nanoTime());
    String ns = "agentnest-" + tenant;
    admin
        .resource(
            new NamespaceBuilder()
                .withNewMetadata()
                .withName(ns)
                .addToLabels(PodSpecs.MANAGED_LABEL, "true")
                .endMetadata()
                .build())
        .create();
    try {
      assertThat(admin.namespaces().withName(ns).get().getMetadata().getLabels())
          .doesNotContainKey("pod-security.kubernetes.io/enforce");

      String id = start(adminBackend, tenant);

      assertThat(admin.namespaces().withName(ns).get().getMetadata().getLabels())
          .containsAllEntriesOf(Tenants.POD_SECURITY_LABELS);
      assertThatThrownBy(
              () ->
                  admin
                      .resource(
                          probe(
                              ns,
                              "psa-root",
                              new SecurityContextBuilder().withRunAsUser(0L).build()))
                      .create())
          .isInstanceOf(KubernetesClientException.class)
          .hasMessageContaining("violates PodSecurity");
      adminBackend.destroy(id);
      created.remove(id);
    } finally {
      admin.namespaces().withName(ns).delete();
    }
  }

  private static Pod probe(String ns, String name, SecurityContext sc) {
    return new PodBuilder()
        .withNewMetadata()
        .withName(name)
        .withNamespace(ns)
        .endMetadata()
        .withNewSpec()
        .addNewContainer()
        .withName("c")
        .withImage(SandboxConfig.DEFAULT_IMAGE)
        .withCommand("sleep", "1")
        .withSecurityContext(sc)
        .endContainer()
        .endSpec()
        .build();
  }

  @Test
  void aFullQuotaIsAnErrorNamingTheQuota() {
    KubernetesBackend b = backend(Map.of("QUOTA_PODS", "2", "NODE_PIDS_LIMIT", "256"));
    start(b, "quota-it");
    start(b, "quota-it");
    assertThatThrownBy(() -> b.create(spec("quota-it")))
        .isInstanceOf(QuotaExceededException.class)
        .hasMessageContaining("agentnest-quota")
        .hasMessageContaining("pods");
    assertThat(admin.pods().inNamespace("agentnest-quota-it").list().getItems()).hasSize(2);
  }

  /** A service account bound to the agentnest-tenant role in {@code ns}, as a kubeconfig. */
  static Path tenantKubeconfig(String ns) throws Exception {
    try (InputStream in = Files.newInputStream(rbacYaml())) {
      for (HasMetadata r : admin.load(in).items()) {
        if (r instanceof ClusterRole) {
          admin.resource(r).createOr(x -> x.update());
        }
      }
    }
    ServiceAccount sa =
        new ServiceAccountBuilder()
            .withNewMetadata()
            .withName("agentnest")
            .withNamespace(ns)
            .endMetadata()
            .build();
    admin.resource(sa).createOr(x -> x.update());
    admin
        .resource(
            new RoleBindingBuilder()
                .withNewMetadata()
                .withName("agentnest-tenant")
                .withNamespace(ns)
                .endMetadata()
                .addNewSubject()
                .withKind("ServiceAccount")
                .withName("agentnest")
                .withNamespace(ns)
                .endSubject()
                .withNewRoleRef()
                .withApiGroup("rbac.authorization.k8s.io")
                .withKind("ClusterRole")
                .withName("agentnest-tenant")
                .endRoleRef()
                .build())
        .createOr(x -> x.update());
    // A short-lived token from the TokenRequest API, as kubectl create token makes (no token
    // secrets since Kubernetes 1.24).
    String token =
        admin
            .serviceAccounts()
            .inNamespace(ns)
            .withName("agentnest")
            .tokenRequest(
                new TokenRequestBuilder()
                    .withNewSpec()
                    .withExpirationSeconds(3600L)
                    .endSpec()
                    .build())
            .getStatus()
            .getToken();
    Config a = admin.getConfiguration();
    Path file = dir.resolve(ns + ".kubeconfig");
    Files.writeString(
        file,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "
            + a.getMasterUrl()
            + "\n    certificate-authority: "
            + a.getCaCertFile()
            + "\nusers:\n- name: u\n  user:\n    token: "
            + token
            + "\ncontexts:\n- name: t\n  context: {cluster: c, user: u, namespace: "
            + ns
            + "}\ncurrent-context: t\n");
    return file;
  }

  private static Path rbacYaml() {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      Path f = p.resolve("deploy/kubernetes/rbac.yaml");
      if (Files.isRegularFile(f)) {
        return f;
      }
    }
    throw new IllegalStateException(
        "deploy/kubernetes/rbac.yaml not found above the working directory");
  }
}
