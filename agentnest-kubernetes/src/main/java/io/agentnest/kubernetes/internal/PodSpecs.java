package io.agentnest.kubernetes.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.UnsupportedControlException;
import io.agentnest.spi.Labels;
import io.agentnest.spi.SandboxSpec;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.SeccompProfile;
import io.fabric8.kubernetes.api.model.SeccompProfileBuilder;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeBuilder;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.VolumeMountBuilder;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A sandbox as a pod: the restricted Pod Security profile, its limits as requests and limits, its
 * scratch space as memory-backed emptyDirs, and its labels. The pod's own process holds the pod
 * open, reaps orphans and starts agents as its children; the agent's channel is an exec's streams,
 * which (unlike the main process's stdout) the node does not write to its container log files.
 */
public final class PodSpecs {
  /** The one container of a sandbox pod. */
  public static final String CONTAINER = "sandbox";

  /** Every label of the spec, JSON-encoded: Kubernetes label values cannot hold all of them. */
  public static final String LABELS_ANNOTATION = "agentnest.io/labels";

  /** Which seccomp profile the pod runs with ({@code Localhost/...} or {@code RuntimeDefault}). */
  public static final String SECCOMP_ANNOTATION = "agentnest.io/seccomp";

  /** The label that names a sandbox's tenant (the same key as the Docker backend's labels). */
  public static final String TENANT_LABEL = Labels.TENANT;

  /** What every managed object carries (the same key as the Docker backend's labels). */
  public static final String MANAGED_LABEL = Labels.MANAGED;

  /** The label every sandbox pod carries, for selection (its value says what it is). */
  public static final String ROLE_LABEL = "agentnest.role";

  /**
   * pid 1 ({@code holder.py}): holds the pod open, reaps orphans, and starts every agent as its own
   * child so that the pod's seccomp filter applies to it on every runtime; non-dumpable, stdio on
   * /dev/null (the source says why).
   */
  static final String HOLDER = source("holder.py");

  /**
   * What an exec runs to start an agent ({@code connector.py}, the agent's command as its
   * arguments): it passes the exec's stdio to pid 1 and ends with the agent.
   */
  static final String CONNECTOR = source("connector.py");

  /** Whether a label can go onto the pod as a Kubernetes label (else only in the annotation). */
  static boolean podLabel(String key, String value) {
    return LABEL_KEY.matcher(key).matches() && LABEL_VALUE.matcher(value).matches();
  }

  private static final Pattern LABEL_KEY =
      Pattern.compile(
          "([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?");
  private static final Pattern LABEL_VALUE =
      Pattern.compile("([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?");
  private static final Pattern USER = Pattern.compile("(\\d+)(?::(\\d+))?");
  private static final ObjectMapper JSON = new ObjectMapper();

  private PodSpecs() {}

  /** The exec command that starts {@code agent} as a child of the pod's pid 1. */
  static List<String> agentExec(List<String> agent) {
    List<String> cmd = new ArrayList<>(agent.size() + 3);
    cmd.add("python3");
    cmd.add("-c");
    cmd.add(CONNECTOR);
    cmd.addAll(agent);
    return cmd;
  }

  private static String source(String name) {
    try (InputStream in = PodSpecs.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException(name + " is missing from the agentnest-kubernetes jar");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * The pod for {@code spec}.
   *
   * @param runtimeClass the RuntimeClass for a runtime other than the cluster's default, or null
   * @param seccompLocalhost the node's profile path for {@code Localhost}, or null for {@code
   *     RuntimeDefault}
   */
  public static Pod build(
      String name,
      String namespace,
      String tenant,
      SandboxSpec spec,
      @Nullable String runtimeClass,
      @Nullable String seccompLocalhost,
      String imagePullPolicy) {
    long[] ids = user(spec.user());
    SeccompProfile seccomp =
        seccompLocalhost != null
            ? new SeccompProfileBuilder()
                .withType("Localhost")
                .withLocalhostProfile(seccompLocalhost)
                .build()
            : new SeccompProfileBuilder().withType("RuntimeDefault").build();
    Map<String, Quantity> limits = new LinkedHashMap<>();
    Map<String, Quantity> requests = new LinkedHashMap<>();
    if (spec.cpus() > 0) {
      long milli = Math.max(1, Math.round(spec.cpus() * 1000));
      limits.put("cpu", new Quantity(milli + "m"));
      // A sandbox mostly waits for its agent's next call: it is scheduled by a tenth of its CPU
      // limit, so that a node holds many; the limit still caps what it can use.
      requests.put("cpu", new Quantity(Math.max(1, milli / 10) + "m"));
    }
    if (spec.memoryBytes() > 0) {
      // Memory cannot be taken back: requested in full, so the node never overcommits it.
      limits.put("memory", new Quantity(Long.toString(spec.memoryBytes())));
      requests.put("memory", new Quantity(Long.toString(spec.memoryBytes())));
    }
    List<Volume> volumes = new ArrayList<>();
    List<VolumeMount> mounts = new ArrayList<>();
    int i = 0;
    for (Map.Entry<String, Long> t : new TreeMap<>(spec.tmpfs()).entrySet()) {
      String vol = "scratch-" + i++;
      volumes.add(
          new VolumeBuilder()
              .withName(vol)
              .withNewEmptyDir()
              .withMedium("Memory")
              .withSizeLimit(new Quantity(Long.toString(t.getValue())))
              .endEmptyDir()
              .build());
      mounts.add(new VolumeMountBuilder().withName(vol).withMountPath(t.getKey()).build());
    }
    List<EnvVar> env = new ArrayList<>();
    new TreeMap<>(spec.env()).forEach((k, v) -> env.add(new EnvVar(k, v, null)));
    Map<String, String> labels = new TreeMap<>();
    spec.labels()
        .forEach(
            (k, v) -> {
              if (LABEL_KEY.matcher(k).matches() && LABEL_VALUE.matcher(v).matches()) {
                labels.put(k, v);
              }
            });
    labels.put(MANAGED_LABEL, "true");
    labels.put(TENANT_LABEL, tenant);
    labels.put(ROLE_LABEL, "sandbox");
    Map<String, String> annotations = new TreeMap<>();
    try {
      annotations.put(LABELS_ANNOTATION, JSON.writeValueAsString(new TreeMap<>(spec.labels())));
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
    annotations.put(
        SECCOMP_ANNOTATION,
        seccompLocalhost != null ? "Localhost/" + seccompLocalhost : "RuntimeDefault");
    return new PodBuilder()
        .withNewMetadata()
        .withName(name)
        .withNamespace(namespace)
        .withLabels(labels)
        .withAnnotations(annotations)
        .endMetadata()
        .withNewSpec()
        .withRestartPolicy("Never")
        .withAutomountServiceAccountToken(false)
        .withEnableServiceLinks(false)
        .withHostNetwork(false)
        .withHostPID(false)
        .withHostIPC(false)
        .withShareProcessNamespace(false)
        .withTerminationGracePeriodSeconds(1L)
        .withRuntimeClassName(runtimeClass)
        // No DNS: a sandbox reaches the network only through the host's egress proxy, over the
        // agent's channel. A nameserver must be named; nothing answers on loopback here.
        .withDnsPolicy("None")
        .withNewDnsConfig()
        .withNameservers("127.0.0.1")
        .endDnsConfig()
        .withNewSecurityContext()
        .withRunAsNonRoot(true)
        .withRunAsUser(ids[0])
        .withRunAsGroup(ids[1])
        .withSeccompProfile(seccomp)
        .endSecurityContext()
        .withVolumes(volumes)
        .withContainers(
            new ContainerBuilder()
                .withName(CONTAINER)
                .withImage(spec.image())
                .withImagePullPolicy(imagePullPolicy)
                .withCommand(holder("--nofile", Long.toString(spec.openFilesLimit())))
                .withWorkingDir(spec.workdir())
                .withEnv(env)
                .withStdin(false)
                .withTty(false)
                .withTerminationMessagePolicy("File")
                .withNewResources()
                .withLimits(limits)
                .withRequests(requests)
                .endResources()
                .withVolumeMounts(mounts)
                .withNewSecurityContext()
                .withPrivileged(false)
                .withAllowPrivilegeEscalation(false)
                .withReadOnlyRootFilesystem(spec.readOnlyRootFilesystem())
                .withRunAsNonRoot(true)
                .withRunAsUser(ids[0])
                .withRunAsGroup(ids[1])
                .withNewCapabilities()
                .withDrop("ALL")
                .endCapabilities()
                .withSeccompProfile(seccomp)
                .endSecurityContext()
                .build())
        .endSpec()
        .build();
  }

  /**
   * Has the pod's pid 1 hold every process of the pod to {@code limit} tasks with RLIMIT_NPROC, for
   * a runtime whose own kernel counts it and which the node's podPidsLimit does not reach.
   */
  static void limitTasksInTheSandboxKernel(Pod pod, long limit) {
    Container c = pod.getSpec().getContainers().get(0);
    List<String> cmd = new ArrayList<>(c.getCommand());
    cmd.addAll(List.of("--nproc", Long.toString(limit)));
    c.setCommand(cmd);
  }

  /** The pod's main command: {@link #HOLDER} with {@code args}. */
  private static List<String> holder(String... args) {
    List<String> cmd = new ArrayList<>(List.of("python3", "-c", HOLDER));
    cmd.addAll(List.of(args));
    return cmd;
  }

  /** uid and gid from "uid[:gid]"; a name cannot be mapped without the image's passwd. */
  static long[] user(String user) {
    var m = USER.matcher(user);
    if (!m.matches()) {
      throw new UnsupportedControlException(
          "user '"
              + user
              + "': the kubernetes backend needs a numeric uid[:gid] (runAsNonRoot cannot be"
              + " checked for a name), e.g. 65534:65534");
    }
    long uid = Long.parseLong(m.group(1));
    long gid = m.group(2) != null ? Long.parseLong(m.group(2)) : uid;
    if (uid == 0) {
      throw new UnsupportedControlException(
          "user '" + user + "': a sandbox pod never runs as root; use a non-zero uid");
    }
    return new long[] {uid, gid};
  }
}
