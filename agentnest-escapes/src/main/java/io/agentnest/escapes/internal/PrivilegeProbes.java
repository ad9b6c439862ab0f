package io.agentnest.escapes.internal;

/** Privilege: root, setuid, capabilities, and the agent's own memory and channel. */
final class PrivilegeProbes {
  private PrivilegeProbes() {}

  static void addTo(ProbeList p) {
    p.script("privilege.running-as-root", "run as uid or gid 0 (real, effective or saved)");
    p.script(
        "privilege.setuid-binaries",
        "execute the image's setuid/setgid binaries (su, newgrp, ...) to gain euid 0");
    p.script(
        "privilege.capabilities",
        "hold any capability in the effective, permitted, bounding or ambient set");
    p.script("privilege.no-new-privs", "run without no_new_privs, so exec could raise privileges");
    p.script("privilege.setuid-syscall", "setuid(0)");
    p.script("privilege.rootfs-write", "write /etc/passwd, /etc/ld.so.preload or system binaries");
    p.script(
        "privilege.agent-memory",
        "read or write the agent's (or pid 1's) memory through /proc/PID/mem, or use"
            + " process_madvise on it: the agent runs as the same uid as sandbox code");
    p.script(
        "privilege.agent-channel",
        "take the agent's channel: open its (or pid 1's) pipes through /proc/PID/fd, copy"
            + " them with pidfd_open + pidfd_getfd, or connect to the agent link's socket, to"
            + " forge results, expiry or approvals",
        ProbeList.onGvisor(
            "gVisor's /proc (runsc 20221219 and 20240729) lets the same uid open a non-dumpable process's"
                + " fds, unlike Linux: code gets the agent's voice, and the host takes nothing"
                + " from it on trust (expiry is the host's clock, exit codes and limits are"
                + " audited as sandbox-reported, the approvals that are a boundary are"
                + " enforced on the host)"));
  }
}
