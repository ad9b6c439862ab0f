package io.agentnest.kubernetes.internal;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.AgentNestException;
import io.agentnest.BackendUnavailableException;
import io.agentnest.ConfigException;
import io.agentnest.ImageNotFoundException;
import io.agentnest.SandboxInfo;
import io.agentnest.SandboxNotFoundException;
import io.agentnest.UnsupportedControlException;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.ManagedResource;
import io.agentnest.spi.SandboxSpec;
import io.agentnest.spi.support.StartTrace;
import io.fabric8.kubernetes.api.model.ContainerImage;
import io.fabric8.kubernetes.api.model.ContainerStateWaiting;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.node.v1.RuntimeClass;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.ExecWatch;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.io.File;
import java.io.IOException;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cluster as the backend sees it: sandbox pods in tenant namespaces, created hardened, started,
 * connected to with an exec, listed and removed. Everything that can only be refused is refused
 * before a pod exists; everything that fails after is cleaned up.
 *
 * <p>Why it is over 600 lines: it is the order of a pod's life (refusals, tenant, canary, create,
 * wait, pids, connect, list, delete) in one place, so that what is refused before a pod exists and
 * what is cleaned up after can be checked by reading; pod specs, tenants, the canary and doctor are
 * their own classes.
 */
public final class KubeCluster {
  private static final Logger LOG = LoggerFactory.getLogger(KubeCluster.class);
  private static final Pattern ID = Pattern.compile("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Set<String> IMAGE_MISSING =
      Set.of("ErrImageNeverPull", "ImagePullBackOff", "ErrImagePull", "InvalidImageName");
  private static final Set<String> START_FAILED =
      Set.of("CreateContainerConfigError", "CreateContainerError", "RunContainerError");

  /** Where a sandbox's effective pids limit is recorded. */
  public static final String PIDS_ANNOTATION = "agentnest.io/pids-limit";

  /** Set on a pod that runs although the canary found the network not isolated (opt-out). */
  public static final String ISOLATION_ANNOTATION = "agentnest.io/network-isolation";

  private final KubernetesClient client;
  private final KubeSettings settings;
  private final Tenants tenants;
  private final IsolationCanary canary;
  private final UserNamespaces userNamespaces;
  private final AgentSandboxes agentSandboxes;
  private final Map<String, Long> nodePids = new ConcurrentHashMap<>();

  /** Pods this process created: their namespace and labels, so a relabel needs no lookup. */
  private record Made(String namespace, Map<String, String> labels) {}

  private final Map<String, Made> made = new ConcurrentHashMap<>();

  public KubeCluster(KubernetesClient client, KubeSettings settings) {
    this.client = client;
    this.settings = settings;
    this.tenants = new Tenants(client, settings);
    this.canary = new IsolationCanary(client, Clock.systemUTC());
    this.agentSandboxes = new AgentSandboxes(client);
    this.userNamespaces = UserNamespaces.of(client);
  }

  public static KubeCluster connect(KubeSettings settings) {
    Config config;
    if (settings.kubeconfig() != null) {
      File file = new File(settings.kubeconfig());
      if (!file.isFile()) {
        throw new ConfigException(
            "AGENTNEST_KUBERNETES_KUBECONFIG names "
                + settings.kubeconfig()
                + ", which is not a file: give the path of a kubeconfig, or unset it to use"
                + " KUBECONFIG / ~/.kube/config");
      }
      config = Config.fromKubeconfig(settings.context(), file);
    } else {
      String missing = noKubeconfig(System.getenv("KUBECONFIG"), System.getProperty("user.home"));
      if (missing != null) {
        throw new BackendUnavailableException(missing);
      }
      config = Config.autoConfigure(settings.context());
    }
    return new KubeCluster(new KubernetesClientBuilder().withConfig(config).build(), settings);
  }

  /**
   * Why no cluster can be found, or null when a kubeconfig or an in-cluster account is there; the
   * same words for every command (run, doctor, ls), instead of the client's failed list call.
   */
  static @Nullable String noKubeconfig(@Nullable String kubeconfigEnv, String home) {
    if (kubeconfigEnv != null && !kubeconfigEnv.isBlank()) {
      for (String f : kubeconfigEnv.split(File.pathSeparator)) {
        if (!f.isBlank() && new File(f).isFile()) {
          return null;
        }
      }
      return "KUBECONFIG names "
          + kubeconfigEnv
          + ", where there is no kubeconfig file: point it at the cluster's kubeconfig (for the"
          + " test cluster: export KUBECONFIG=\"$(scripts/k8s/cluster.sh up)\")";
    }
    if (new File(home, ".kube/config").isFile()
        || new File("/var/run/secrets/kubernetes.io/serviceaccount/token").isFile()) {
      return null;
    }
    return "no Kubernetes cluster is configured: KUBECONFIG is not set, ~/.kube/config does not"
        + " exist and this is not a pod with a service account; export KUBECONFIG=PATH of the"
        + " cluster's kubeconfig (for the test cluster: export KUBECONFIG=\"$(scripts/k8s/cluster.sh"
        + " up)\"), then 'agentnest doctor --backend kubernetes' checks the rest";
  }

  public KubernetesClient client() {
    return client;
  }

  public KubeSettings settings() {
    return settings;
  }

  public IsolationCanary canary() {
    return canary;
  }

  UserNamespaces userNamespaces() {
    return userNamespaces;
  }

  AgentSandboxes agentSandboxes() {
    return agentSandboxes;
  }

  public Tenants tenants() {
    return tenants;
  }

  // --------------------------------------------------------------------------------- create

  public BackendSandbox create(SandboxSpec spec) {
    refuseWeakened(spec);
    String tenant = spec.labels().getOrDefault(PodSpecs.TENANT_LABEL, settings.tenant());
    String ns = settings.namespaceOf(tenant);
    RuntimeClass rc = runtimeClass(spec.runtime());
    String runtimeClass = rc == null ? null : rc.getMetadata().getName();
    boolean pidsReachTheSandbox = refusePidsOutsideTheNodesKernel(rc, spec.pidsLimit());
    String seccomp = seccompProfileFor(rc);
    StartTrace.mark("runtime class");
    tenants.ensure(tenant, ns);
    StartTrace.mark("tenant namespace");
    IsolationCanary.Result iso = canary.check(ns, tenant, spec, settings.startTimeout());
    StartTrace.mark("isolation canary");
    if (!iso.isolated() && !settings.allowUnisolatedNetwork()) {
      throw new UnsupportedControlException(
          "network: sandboxes in namespace "
              + ns
              + " would not be isolated: "
              + iso.detail()
              + ". Install a network plugin that enforces NetworkPolicy (Calico, Cilium, ...), or"
              + " accept it knowingly with AGENTNEST_KUBERNETES_ALLOW_UNISOLATED_NETWORK=true");
    }
    String id = "sb-" + HexFormat.of().formatHex(randomBytes(10));
    Pod pod =
        PodSpecs.build(id, ns, tenant, spec, runtimeClass, seccomp, settings.imagePullPolicy());
    if (!iso.isolated()) {
      pod.getMetadata().getAnnotations().put(ISOLATION_ANNOTATION, "not enforced: " + iso.detail());
    }
    UserNamespaces.Decision userns = userNamespaces.forRuntime(rc);
    if (userns.use()) {
      pod.getSpec().setHostUsers(false);
    }
    pod.getMetadata().getAnnotations().put(UserNamespaces.ANNOTATION, userns.annotation());
    StartTrace.mark("user namespace");
    List<String> violations = RestrictedProfile.violations(pod);
    if (!violations.isEmpty()) {
      throw new IllegalStateException(
          "the sandbox pod does not meet the restricted Pod Security profile: " + violations);
    }
    try {
      if (settings.agentSandbox()) {
        agentSandboxes.create(pod);
      } else {
        client.resource(pod).create();
      }
    } catch (KubernetesClientException e) {
      throw KubeErrors.of(e, "creating sandbox pod " + ns + "/" + id);
    }
    made.put(id, new Made(ns, labels(pod)));
    StartTrace.mark("pod create");
    try {
      Pod running = waitRunning(ns, id, spec.image());
      StartTrace.mark("pod running");
      long pids = pidsReachTheSandbox ? checkPids(running, spec.pidsLimit()) : 0;
      String enforced =
          pids > 0
              ? Long.toString(pids)
              : pidsReachTheSandbox ? null : "unenforced (RuntimeClass " + runtimeClass + ")";
      if (enforced != null) {
        // One merge patch, not an edit (a GET and a PUT): it is on every cold start's path.
        ObjectNode patch = JSON.createObjectNode();
        patch.putObject("metadata").putObject("annotations").put(PIDS_ANNOTATION, enforced);
        client
            .pods()
            .inNamespace(ns)
            .withName(id)
            .patch(PatchContext.of(PatchType.JSON_MERGE), patch.toString());
      }
      StartTrace.mark("pids check");
      BackendSandbox agent = connect(ns, id, spec.command());
      StartTrace.mark("agent exec");
      return agent;
    } catch (RuntimeException e) {
      deleteQuietly(ns, id);
      throw e;
    }
  }

  private static byte[] randomBytes(int n) {
    byte[] b = new byte[n];
    RANDOM.nextBytes(b);
    return b;
  }

  static void refuseWeakened(SandboxSpec spec) {
    spec.requireHardened("kubernetes");
    spec.refuseGpus("kubernetes");
  }

  /** The RuntimeClass for {@code runtime}: none for the default (runc), else one that exists. */
  @Nullable RuntimeClass runtimeClass(@Nullable String runtime) {
    if (runtime == null || runtime.isBlank() || runtime.equals("runc")) {
      return null;
    }
    List<String> candidates =
        switch (runtime) {
          case "gvisor", "runsc" -> List.of("gvisor", "runsc");
          case "kata", "kata-runtime" -> List.of("kata", "kata-runtime", "kata-qemu");
          default -> List.of(runtime);
        };
    List<RuntimeClass> all;
    try {
      all = client.resources(RuntimeClass.class).list().getItems();
    } catch (KubernetesClientException e) {
      throw KubeErrors.of(e, "listing RuntimeClasses");
    }
    for (String c : candidates) {
      for (RuntimeClass rc : all) {
        if (c.equals(rc.getMetadata().getName())) {
          return rc;
        }
      }
    }
    List<String> known = all.stream().map(rc -> rc.getMetadata().getName()).toList();
    throw new UnsupportedControlException(
        "runtime '"
            + runtime
            + "' has no RuntimeClass in the cluster (it has "
            + known
            + "): an administrator installs the runtime on the nodes and creates a RuntimeClass"
            + " named "
            + candidates.get(0)
            + "; 'agentnest doctor --backend kubernetes' lists them");
  }

  /**
   * The node's {@code Localhost} profile for pods of {@code rc}. runsc reads a profile its own way
   * (every refusal is EPERM, so glibc cannot fall back from clone3 and no thread starts; it does
   * not know the name pselect6): gVisor pods get the adapted profile, and are refused rather than
   * broken when the administrator installed only the runc one.
   */
  private @Nullable String seccompProfileFor(@Nullable RuntimeClass rc) {
    String base = settings.seccompLocalhostProfile();
    if (rc == null) {
      return base;
    }
    String handler = rc.getHandler();
    if (handler == null || !(handler.contains("runsc") || handler.contains("gvisor"))) {
      return base;
    }
    if (settings.seccompLocalhostProfileGvisor() != null || base == null) {
      return settings.seccompLocalhostProfileGvisor();
    }
    throw new UnsupportedControlException(
        "seccomp: RuntimeClass "
            + rc.getMetadata().getName()
            + " runs gVisor (handler "
            + handler
            + "), which would break sandboxes under the runc profile Localhost/"
            + base
            + " (every refusal becomes EPERM, so no thread can start): install AgentNest's gVisor"
            + " profile (seccomp-gvisor.json, docs/kubernetes.md) on the nodes too and name it with"
            + " AGENTNEST_KUBERNETES_SECCOMP_PROFILE_GVISOR");
  }

  /**
   * The only per-pod process limit Kubernetes 1.20 has is the kubelet's podPidsLimit, a cgroup
   * count of the node's tasks. A RuntimeClass with a kernel of its own (gVisor, Kata) runs the
   * sandbox's processes where that count does not reach them (gVisor's threads are not node tasks;
   * the escape suite's thread bomb started 5,000 under a limit of 256), and the CRI passes no pids
   * limit for the runtime to apply itself. So a pids limit is refused there, before anything is
   * created, rather than promised and not kept, unless the administrator opted out; the pod's
   * {@code agentnest.io/pids-limit} annotation then says "unenforced".
   *
   * @return whether the node's pids limit reaches the sandbox's processes
   */
  private boolean refusePidsOutsideTheNodesKernel(@Nullable RuntimeClass rc, long pidsLimit) {
    if (rc == null || pidsLimit <= 0) {
      return true;
    }
    String runtimeClass = rc.getMetadata().getName();
    String handler = rc.getHandler();
    if (handler != null && UserNamespaces.NODE_KERNEL_HANDLERS.contains(handler)) {
      return true;
    }
    if (settings.allowUnenforcedPids()) {
      LOG.warn(
          "pids limit {} not enforced on RuntimeClass {} (the administrator allowed it)",
          pidsLimit,
          runtimeClass);
      return false;
    }
    throw new UnsupportedControlException(
        "pids: a limit of "
            + pidsLimit
            + " cannot be enforced on RuntimeClass "
            + runtimeClass
            + " (handler "
            + handler
            + "): the kubelet's podPidsLimit counts only the node's own tasks, and this runtime"
            + " runs the sandbox's processes in a kernel of its own. Use runc pods, or, to rely"
            + " on the memory and CPU limits there, the administrator sets"
            + " AGENTNEST_KUBERNETES_ALLOW_UNENFORCED_PIDS=true");
  }

  private Pod waitRunning(String ns, String id, String image) {
    Pod p;
    try {
      p =
          client
              .pods()
              .inNamespace(ns)
              .withName(id)
              .waitUntilCondition(
                  x -> x == null || startEnded(x),
                  settings.startTimeout().toSeconds(),
                  TimeUnit.SECONDS);
    } catch (KubernetesClientException e) {
      if (e.getCause() instanceof TimeoutException
          || String.valueOf(e.getMessage()).toLowerCase(Locale.ROOT).contains("timed out")) {
        throw new AgentNestException(
            "sandbox pod "
                + ns
                + "/"
                + id
                + " did not start within "
                + settings.startTimeout().toSeconds()
                + " s ("
                + describe(ns, id)
                + "): check the node ('kubectl describe pod') or raise"
                + " AGENTNEST_KUBERNETES_START_TIMEOUT_SECONDS");
      }
      throw KubeErrors.of(e, "waiting for sandbox pod " + ns + "/" + id);
    }
    if (p == null) {
      throw new AgentNestException("sandbox pod " + ns + "/" + id + " was deleted while starting");
    }
    ContainerStateWaiting w = waiting(p);
    if (w != null && IMAGE_MISSING.contains(w.getReason())) {
      throw new ImageNotFoundException(
          "image '"
              + image
              + "' is not on the cluster's nodes and cannot be pulled ("
              + w.getReason()
              + "): push it to a registry the nodes pull from, or import it into the nodes'"
              + " container runtime (scripts/k8s/cluster.sh import "
              + image
              + " on the test cluster)");
    }
    if (!"Running".equals(p.getStatus().getPhase())) {
      throw new AgentNestException(
          "sandbox pod " + ns + "/" + id + " did not start: " + describe(p));
    }
    return p;
  }

  private static boolean startEnded(Pod p) {
    if (p.getStatus() == null) {
      return false;
    }
    String phase = p.getStatus().getPhase();
    if ("Running".equals(phase) || "Failed".equals(phase) || "Succeeded".equals(phase)) {
      return true;
    }
    ContainerStateWaiting w = waiting(p);
    return w != null
        && (IMAGE_MISSING.contains(w.getReason()) || START_FAILED.contains(w.getReason()));
  }

  private static @Nullable ContainerStateWaiting waiting(Pod p) {
    if (p.getStatus() == null) {
      return null;
    }
    return p.getStatus().getContainerStatuses().stream()
        .map(ContainerStatus::getState)
        .filter(Objects::nonNull)
        .map(s -> s.getWaiting())
        .filter(Objects::nonNull)
        .findFirst()
        .orElse(null);
  }

  /** A bounded, escaped account of a pod's state, for error messages. */
  static String describe(Pod p) {
    StringBuilder b = new StringBuilder();
    var st = p.getStatus();
    b.append("phase ").append(st == null ? "unknown" : st.getPhase());
    if (st != null) {
      for (ContainerStatus cs : st.getContainerStatuses()) {
        var s = cs.getState();
        if (s != null && s.getWaiting() != null) {
          b.append(", waiting: ").append(s.getWaiting().getReason());
          if (s.getWaiting().getMessage() != null) {
            b.append(" (").append(s.getWaiting().getMessage()).append(')');
          }
        }
        if (s != null && s.getTerminated() != null) {
          b.append(", terminated: ")
              .append(s.getTerminated().getReason())
              .append(" exit ")
              .append(s.getTerminated().getExitCode());
        }
      }
      if (st.getMessage() != null) {
        b.append(", ").append(st.getMessage());
      }
      for (PodCondition c : st.getConditions()) {
        // "0/1 nodes are available: 1 Insufficient cpu." is what a user needs to act on.
        if ("PodScheduled".equals(c.getType()) && "False".equals(c.getStatus())) {
          b.append(", not scheduled: ").append(c.getReason());
          if (c.getMessage() != null) {
            b.append(" (").append(c.getMessage()).append(')');
          }
        }
      }
    }
    return Text.bounded(b.toString(), 800);
  }

  private String describe(String ns, String id) {
    try {
      Pod p = client.pods().inNamespace(ns).withName(id).get();
      return p == null ? "gone" : describe(p);
    } catch (KubernetesClientException e) {
      return "state unknown";
    }
  }

  /**
   * The pids limit the sandbox's node enforces per pod: Kubernetes 1.20 has no per-pod setting, so
   * the kubelet's {@code podPidsLimit} is the limit. Refused when no limit applies.
   */
  private long checkPids(Pod pod, long wanted) {
    if (wanted <= 0) {
      return 0;
    }
    String node = pod.getSpec().getNodeName();
    long limit = node == null ? 0 : nodePids.computeIfAbsent(node, this::readNodePids);
    if (limit <= 0) {
      limit = settings.nodePidsLimit();
    }
    if (limit <= 0) {
      throw new UnsupportedControlException(
          "pids: node "
              + node
              + " sets no per-pod process limit (the kubelet's podPidsLimit), and this backend"
              + " cannot set one per pod (Kubernetes has no per-pod setting): set podPidsLimit in"
              + " the kubelets' configuration (e.g. 1024); where the API server may not proxy to"
              + " the kubelet (its configz), state it on the node ('kubectl annotate node "
              + node
              + " "
              + NODE_PIDS_ANNOTATION
              + "=1024') or with AGENTNEST_KUBERNETES_NODE_PIDS_LIMIT");
    }
    return limit;
  }

  /**
   * The node annotation where an administrator states the kubelet's {@code podPidsLimit}, for
   * clusters whose API server may not proxy to the kubelet (a kubelet on a loopback or link-local
   * address: Kubernetes refuses to proxy there).
   */
  public static final String NODE_PIDS_ANNOTATION = "agentnest.io/pod-pids-limit";

  /** The kubelet's own configuration first, then what the administrator put on the node. */
  private long readNodePids(String node) {
    try {
      String body = client.raw("/api/v1/nodes/" + node + "/proxy/configz");
      if (body != null) {
        long limit = JSON.readTree(body).path("kubeletconfig").path("podPidsLimit").asLong(0);
        if (limit > 0) {
          return limit;
        }
      }
    } catch (IOException | KubernetesClientException e) {
      LOG.debug("cannot read the kubelet configuration of node {}", node, e);
    }
    try {
      Node n = client.nodes().withName(node).get();
      return n == null ? 0 : annotatedPids(n);
    } catch (KubernetesClientException e) {
      LOG.debug("cannot read node {}", node, e);
      return 0;
    }
  }

  /** The limit {@link #NODE_PIDS_ANNOTATION} states; 0 when absent or not a positive number. */
  static long annotatedPids(Node n) {
    Map<String, String> a = n.getMetadata().getAnnotations();
    String v = a == null ? null : a.get(NODE_PIDS_ANNOTATION);
    if (v == null) {
      return 0;
    }
    if (!v.matches("[1-9][0-9]{0,9}")) {
      LOG.warn(
          "node {}: annotation {}='{}' is not a positive whole number; ignored",
          n.getMetadata().getName(),
          NODE_PIDS_ANNOTATION,
          Text.bounded(v, 40));
      return 0;
    }
    return Long.parseLong(v);
  }

  // -------------------------------------------------------------------------------- connect

  private BackendSandbox connect(String ns, String id, List<String> command) {
    ByteTail err = new ByteTail(16 * 1024);
    ExecWatch w;
    try {
      w =
          client
              .pods()
              .inNamespace(ns)
              .withName(id)
              .inContainer(PodSpecs.CONTAINER)
              .redirectingInput()
              .redirectingOutput()
              .writingError(err)
              .exec(PodSpecs.agentExec(command).toArray(String[]::new));
    } catch (KubernetesClientException e) {
      throw KubeErrors.of(e, "starting the agent in sandbox pod " + ns + "/" + id);
    }
    return new KubeSandbox(id, w, err, () -> describe(ns, id));
  }

  public BackendSandbox attach(String id, List<String> command) {
    Pod p = find(id).orElseThrow(() -> notFound(id));
    if (!"Running".equals(p.getStatus().getPhase())) {
      throw new SandboxNotFoundException(
          "sandbox "
              + id
              + " is not running ("
              + describe(p)
              + "): destroy it with 'agentnest rm'");
    }
    return connect(p.getMetadata().getNamespace(), id, command);
  }

  private static SandboxNotFoundException notFound(String id) {
    return new SandboxNotFoundException(
        "no sandbox pod '"
            + Text.bounded(id, 80)
            + "' in the cluster's AgentNest namespaces: 'agentnest ls' lists them");
  }

  // ---------------------------------------------------------------------------- list & remove

  Optional<Pod> find(String id) {
    if (!ID.matcher(id).matches()) {
      return Optional.empty();
    }
    try {
      Pod p = client.pods().inNamespace(settings.namespaceOf(null)).withName(id).get();
      if (p != null && managed(p)) {
        return Optional.of(p);
      }
      return managedPods().stream().filter(x -> x.getMetadata().getName().equals(id)).findFirst();
    } catch (KubernetesClientException e) {
      throw KubeErrors.of(e, "looking up sandbox " + id);
    }
  }

  private boolean managed(Pod p) {
    return "true".equals(p.getMetadata().getLabels().get(PodSpecs.MANAGED_LABEL))
        && p.getMetadata().getNamespace().startsWith(settings.namespacePrefix());
  }

  /** Every pod this backend manages, in every tenant namespace the account may list. */
  List<Pod> managedPods() {
    try {
      return client
          .pods()
          .inAnyNamespace()
          .withLabel(PodSpecs.MANAGED_LABEL, "true")
          .list()
          .getItems()
          .stream()
          .filter(this::managed)
          .toList();
    } catch (KubernetesClientException e) {
      if (e.getCode() != 403) {
        throw KubeErrors.of(e, "listing sandbox pods");
      }
      // A tenant-scoped account: its own namespace only.
      return client
          .pods()
          .inNamespace(settings.namespaceOf(null))
          .withLabel(PodSpecs.MANAGED_LABEL, "true")
          .list()
          .getItems();
    }
  }

  public List<SandboxInfo> list() {
    return managedPods().stream()
        .filter(p -> "sandbox".equals(p.getMetadata().getLabels().get(PodSpecs.ROLE_LABEL)))
        .map(KubeCluster::info)
        .toList();
  }

  public Optional<SandboxInfo> inspect(String id) {
    return find(id).map(KubeCluster::info);
  }

  static SandboxInfo info(Pod p) {
    String phase = p.getStatus() == null ? "Unknown" : String.valueOf(p.getStatus().getPhase());
    String state =
        switch (phase) {
          case "Running" -> "running";
          case "Pending" -> "created";
          case "Succeeded", "Failed" -> "exited";
          default -> "unknown";
        };
    String rc = p.getSpec().getRuntimeClassName();
    return new SandboxInfo(
        p.getMetadata().getName(),
        "kubernetes",
        p.getSpec().getContainers().get(0).getImage(),
        rc == null ? "runc" : rc,
        state,
        created(p),
        labels(p));
  }

  private static Instant created(Pod p) {
    try {
      return Instant.parse(p.getMetadata().getCreationTimestamp());
    } catch (RuntimeException e) {
      return Instant.EPOCH;
    }
  }

  static Map<String, String> labels(Pod p) {
    String json = p.getMetadata().getAnnotations().get(PodSpecs.LABELS_ANNOTATION);
    if (json == null || json.length() > 256 * 1024) {
      return p.getMetadata().getLabels();
    }
    try {
      Map<String, String> m = JSON.readValue(json, new TypeReference<Map<String, String>>() {});
      m.put(
          PodSpecs.TENANT_LABEL,
          p.getMetadata().getLabels().getOrDefault(PodSpecs.TENANT_LABEL, ""));
      // From the pod's spec as the API server holds it, never from anything the sandbox says.
      m.put(
          UserNamespaces.LABEL,
          Boolean.toString(
              p.getSpec() != null && Boolean.FALSE.equals(p.getSpec().getHostUsers())));
      return m;
    } catch (IOException e) {
      return p.getMetadata().getLabels();
    }
  }

  /**
   * Sets {@code labels} on sandbox pod {@code id} (a pooled sandbox's owner and expiry at
   * hand-out): in the labels annotation that {@link #info} reads, and as pod labels where they are
   * valid ones. One merge patch; false when the pod is gone.
   */
  public boolean relabel(String id, Map<String, String> labels) {
    Made m = made.get(id);
    if (m == null) {
      Optional<Pod> found = find(id);
      if (found.isEmpty()) {
        return false;
      }
      m = new Made(found.get().getMetadata().getNamespace(), labels(found.get()));
    }
    Map<String, String> all = new TreeMap<>(m.labels());
    all.remove(PodSpecs.TENANT_LABEL); // info() adds it from the pod's own label
    all.putAll(labels);
    ObjectNode patch = JSON.createObjectNode();
    ObjectNode meta = patch.putObject("metadata");
    ObjectNode podLabels = meta.putObject("labels");
    labels.forEach(
        (k, v) -> {
          if (PodSpecs.podLabel(k, v)) {
            podLabels.put(k, v);
          }
        });
    try {
      meta.putObject("annotations").put(PodSpecs.LABELS_ANNOTATION, JSON.writeValueAsString(all));
      client
          .pods()
          .inNamespace(m.namespace())
          .withName(id)
          .patch(PatchContext.of(PatchType.JSON_MERGE), JSON.writeValueAsString(patch));
      made.put(id, new Made(m.namespace(), all));
      return true;
    } catch (IOException e) {
      throw new AgentNestException("cannot encode the labels of sandbox " + id + ": " + e, e);
    } catch (KubernetesClientException e) {
      throw KubeErrors.of(e, "labelling sandbox pod " + id);
    }
  }

  public void destroy(String id) {
    made.remove(id);
    Optional<Pod> p = find(id);
    if (p.isEmpty()) {
      return;
    }
    deleteAndWait(p.get().getMetadata().getNamespace(), id, ownedBySandbox(p.get()));
  }

  /** Whether an agent-sandbox Sandbox made the pod (its controller would make it again). */
  private static boolean ownedBySandbox(Pod p) {
    return p.getMetadata().getOwnerReferences().stream()
        .anyMatch(o -> "Sandbox".equals(o.getKind()) && o.getApiVersion().startsWith("agents."));
  }

  private void deleteAndWait(String ns, String id, boolean sandboxObject) {
    try {
      if (sandboxObject) {
        agentSandboxes.delete(ns, id);
      }
      client.pods().inNamespace(ns).withName(id).withGracePeriod(0).delete();
      client
          .pods()
          .inNamespace(ns)
          .withName(id)
          .waitUntilCondition(Objects::isNull, 60, TimeUnit.SECONDS);
    } catch (KubernetesClientException e) {
      throw KubeErrors.of(e, "deleting sandbox pod " + ns + "/" + id);
    }
  }

  private void deleteQuietly(String ns, String id) {
    try {
      if (settings.agentSandbox()) {
        agentSandboxes.delete(ns, id);
      }
      client.pods().inNamespace(ns).withName(id).withGracePeriod(0).delete();
    } catch (KubernetesClientException e) {
      LOG.warn("could not delete sandbox pod {}/{}: {}", ns, id, e.getMessage());
    }
  }

  public List<ManagedResource> resources() {
    List<ManagedResource> out = new ArrayList<>();
    for (Pod p : managedPods()) {
      SandboxInfo i = info(p);
      out.add(
          new ManagedResource(
              "container",
              i.id(),
              p.getMetadata().getNamespace() + "/" + i.id(),
              i.state(),
              i.created(),
              0,
              i.labels()));
    }
    return out;
  }

  /**
   * The id of {@code image} as the nodes hold it ({@code sha256:...}), from the nodes' image lists;
   * empty where no node has it or this account may not list nodes.
   */
  public Optional<String> imageId(String image) {
    Set<String> names = new HashSet<>(List.of(image, "docker.io/" + image));
    String withTag = image.contains(":") ? image : image + ":latest";
    names.add(withTag);
    names.add("docker.io/" + withTag);
    if (!image.contains("/")) {
      names.add("docker.io/library/" + withTag);
    }
    try {
      for (Node n : client.nodes().list().getItems()) {
        if (n.getStatus() == null) {
          continue;
        }
        for (ContainerImage ci : n.getStatus().getImages()) {
          if (ci.getNames().stream().anyMatch(names::contains)) {
            // An image imported into the node's runtime may be listed without a digest: its
            // size then stands for its identity (a rebuilt image almost always differs in it).
            return Optional.of(
                ci.getNames().stream()
                    .filter(x -> x.startsWith("sha256:") || x.contains("@sha256:"))
                    .map(x -> x.substring(x.indexOf("sha256:")))
                    .findFirst()
                    .orElse("size:" + ci.getSizeBytes()));
          }
        }
      }
    } catch (KubernetesClientException e) {
      LOG.debug("cannot list the nodes' images", e);
    }
    return Optional.empty();
  }

  public List<RuntimeClass> runtimeClasses() {
    return client.resources(RuntimeClass.class).list().getItems();
  }

  public Duration startTimeout() {
    return settings.startTimeout();
  }
}
