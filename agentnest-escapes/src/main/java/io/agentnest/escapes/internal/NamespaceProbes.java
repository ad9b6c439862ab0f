package io.agentnest.escapes.internal;

import java.util.Map;

/**
 * Namespaces: mounts, unshare/setns, the host's root, cgroups and kernel helpers that run as host
 * root.
 */
final class NamespaceProbes {
  private NamespaceProbes() {}

  static void addTo(ProbeList p) {
    p.script("namespaces.mount", "mount a tmpfs (mount(2) and the new fsopen API)");
    p.script(
        "namespaces.unshare",
        "unshare user, mount and network namespaces (the first step of most kernel exploits)",
        ProbeList.onGvisor(
            "gVisor's Sentry implements user and mount namespaces itself: no host kernel"
                + " namespace is created and no host kernel code is reached (with runsc's"
                + " --oci-seccomp the profile refuses it there too)"));
    p.script(
        "namespaces.setns", "join pid 1's mount, network, pid or user namespace with setns(2)");
    p.script("namespaces.proc1-root", "reach another root filesystem through /proc/1/root");
    p.script(
        "namespaces.cgroup-release-agent",
        "write a cgroup release_agent or mount a cgroup hierarchy (the CVE-2022-0492 escape)");
    p.script(
        "namespaces.core-pattern",
        "set /proc/sys/kernel/core_pattern to a program (runs as host root)");
    p.script("namespaces.sysrq", "trigger /proc/sysrq-trigger or enable sysrq");
    p.script(
        "namespaces.usermode-helpers",
        "set modprobe, uevent_helper, hotplug or register a binfmt_misc handler");
    p.add(
        "namespaces.host-processes",
        "see host processes or another sandbox's processes in /proc",
        Map.of(),
        ctx ->
            ctx.script(
                "namespaces.host-processes",
                Map.of("marker", new StringBuilder(ctx.marker).reverse().toString())));
  }
}
