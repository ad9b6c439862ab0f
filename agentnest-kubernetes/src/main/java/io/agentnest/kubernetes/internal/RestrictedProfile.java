package io.agentnest.kubernetes.internal;

import io.fabric8.kubernetes.api.model.Capabilities;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSecurityContext;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.SeccompProfile;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.Volume;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The "restricted" Pod Security Standard, checked on our own pod specs before they are sent.
 * Kubernetes 1.20 has no Pod Security admission, and a cluster's policy may be laxer than ours: the
 * backend does not rely on the cluster to catch a regression in what it builds.
 */
public final class RestrictedProfile {
  private static final Set<String> VOLUME_TYPES_ALLOWED =
      Set.of("emptyDir", "configMap", "secret", "projected", "downwardAPI", "csi", "ephemeral");

  private RestrictedProfile() {}

  /** Every way {@code pod} falls short of the restricted profile; empty when it meets it. */
  public static List<String> violations(Pod pod) {
    List<String> out = new ArrayList<>();
    PodSpec spec = pod.getSpec();
    if (spec == null) {
      out.add("the pod has no spec");
      return out;
    }
    if (Boolean.TRUE.equals(spec.getHostNetwork())) {
      out.add("hostNetwork is set");
    }
    if (Boolean.TRUE.equals(spec.getHostPID())) {
      out.add("hostPID is set");
    }
    if (Boolean.TRUE.equals(spec.getHostIPC())) {
      out.add("hostIPC is set");
    }
    if (!Boolean.FALSE.equals(spec.getAutomountServiceAccountToken())) {
      out.add("the service-account token is mounted (automountServiceAccountToken must be false)");
    }
    for (Volume v : spec.getVolumes()) {
      String type = volumeType(v);
      if (!VOLUME_TYPES_ALLOWED.contains(type)) {
        out.add("volume '" + v.getName() + "' is of type " + type);
      }
    }
    PodSecurityContext psc = spec.getSecurityContext();
    boolean podNonRoot = psc != null && Boolean.TRUE.equals(psc.getRunAsNonRoot());
    boolean podSeccomp = psc != null && seccompOk(psc.getSeccompProfile());
    if (psc != null && psc.getRunAsUser() != null && psc.getRunAsUser() == 0) {
      out.add("the pod runs as uid 0");
    }
    if (psc != null && !psc.getSysctls().isEmpty()) {
      out.add("the pod sets sysctls");
    }
    List<Container> all = new ArrayList<>(spec.getInitContainers());
    all.addAll(spec.getContainers());
    for (Container c : all) {
      String n = "container '" + c.getName() + "'";
      SecurityContext sc = c.getSecurityContext();
      if (sc == null) {
        out.add(n + " has no securityContext");
        continue;
      }
      if (Boolean.TRUE.equals(sc.getPrivileged())) {
        out.add(n + " is privileged");
      }
      if (!Boolean.FALSE.equals(sc.getAllowPrivilegeEscalation())) {
        out.add(n + " allows privilege escalation");
      }
      if (!(podNonRoot || Boolean.TRUE.equals(sc.getRunAsNonRoot()))
          || Boolean.FALSE.equals(sc.getRunAsNonRoot())) {
        out.add(n + " may run as root (runAsNonRoot is not true)");
      }
      if (sc.getRunAsUser() != null && sc.getRunAsUser() == 0) {
        out.add(n + " runs as uid 0");
      }
      if (!(podSeccomp || seccompOk(sc.getSeccompProfile()))
          || (sc.getSeccompProfile() != null && !seccompOk(sc.getSeccompProfile()))) {
        out.add(n + " has no RuntimeDefault or Localhost seccomp profile");
      }
      if (!dropsAll(sc.getCapabilities())) {
        out.add(n + " does not drop ALL capabilities");
      }
      if (sc.getCapabilities() != null && !sc.getCapabilities().getAdd().isEmpty()) {
        out.add(n + " adds capabilities " + sc.getCapabilities().getAdd());
      }
      if (sc.getProcMount() != null && !sc.getProcMount().equals("Default")) {
        out.add(n + " unmasks /proc");
      }
      if (c.getPorts().stream().anyMatch(p -> p.getHostPort() != null && p.getHostPort() != 0)) {
        out.add(n + " binds a host port");
      }
    }
    return out;
  }

  private static boolean seccompOk(@Nullable SeccompProfile p) {
    return p != null && ("RuntimeDefault".equals(p.getType()) || "Localhost".equals(p.getType()));
  }

  private static boolean dropsAll(@Nullable Capabilities caps) {
    return caps != null && caps.getDrop().contains("ALL");
  }

  private static String volumeType(Volume v) {
    if (v.getEmptyDir() != null) {
      return "emptyDir";
    }
    if (v.getConfigMap() != null) {
      return "configMap";
    }
    if (v.getSecret() != null) {
      return "secret";
    }
    if (v.getProjected() != null) {
      return "projected";
    }
    if (v.getDownwardAPI() != null) {
      return "downwardAPI";
    }
    if (v.getCsi() != null) {
      return "csi";
    }
    if (v.getEphemeral() != null) {
      return "ephemeral";
    }
    if (v.getHostPath() != null) {
      return "hostPath";
    }
    return "another type";
  }
}
