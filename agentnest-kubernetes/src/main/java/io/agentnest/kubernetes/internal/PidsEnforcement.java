package io.agentnest.kubernetes.internal;

import io.agentnest.UnsupportedControlException;
import io.fabric8.kubernetes.api.model.node.v1.RuntimeClass;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Who holds a sandbox pod to its process limit. Kubernetes has no per-pod setting: the kubelet's
 * podPidsLimit is a cgroup count of the node's tasks, which reaches runc pods. A RuntimeClass with
 * a kernel of its own runs the sandbox's tasks where that count does not reach them (gVisor's
 * threads are not node tasks: the escape suite's thread bomb started 5,000 under a limit of 256),
 * and the CRI passes no pids limit for the runtime to apply. gVisor's kernel does count
 * RLIMIT_NPROC, per user, on every task it starts (threads too; {@code TaskSet.NewTask}): the pod's
 * pid 1 sets it before any sandbox code runs, and every sandbox process runs as that one
 * unprivileged user, without CAP_SYS_RESOURCE to raise it. Other kernels of their own (Kata) are
 * refused unless the administrator accepts an unenforced limit.
 */
enum PidsEnforcement {
  /** The node's podPidsLimit on the pod's cgroup (runc pods). */
  NODE,
  /** RLIMIT_NPROC in the sandbox's own kernel, set by the pod's pid 1 (gVisor pods). */
  SANDBOX_KERNEL,
  /** None: the administrator accepted that (AGENTNEST_KUBERNETES_ALLOW_UNENFORCED_PIDS). */
  UNENFORCED;

  /** RuntimeClass handlers of gVisor, whose kernel counts RLIMIT_NPROC. */
  static final Set<String> GVISOR_HANDLERS = Set.of("runsc", "gvisor");

  static PidsEnforcement of(@Nullable RuntimeClass rc, long pidsLimit, boolean allowUnenforced) {
    if (rc == null || pidsLimit <= 0) {
      return NODE;
    }
    String handler = String.valueOf(rc.getHandler());
    if (UserNamespaces.NODE_KERNEL_HANDLERS.contains(handler)) {
      return NODE;
    }
    if (GVISOR_HANDLERS.contains(handler)) {
      return SANDBOX_KERNEL;
    }
    if (allowUnenforced) {
      return UNENFORCED;
    }
    throw new UnsupportedControlException(
        "pids: a limit of "
            + pidsLimit
            + " cannot be enforced on RuntimeClass "
            + rc.getMetadata().getName()
            + " (handler "
            + handler
            + "): the kubelet's podPidsLimit counts only the node's own tasks, and this runtime"
            + " runs the sandbox's processes in a kernel of its own. Use runc or gVisor pods, or,"
            + " to rely on the memory and CPU limits there, the administrator sets"
            + " AGENTNEST_KUBERNETES_ALLOW_UNENFORCED_PIDS=true");
  }
}
