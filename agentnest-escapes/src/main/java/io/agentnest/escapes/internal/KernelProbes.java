package io.agentnest.escapes.internal;

/**
 * Kernel attack surface: modules, kexec, BPF, perf, userfaultfd, io_uring, ptrace and compat
 * syscalls.
 */
final class KernelProbes {
  private KernelProbes() {}

  static void addTo(ProbeList p) {
    p.script("kernel.module-loading", "load a kernel module (init_module, finit_module)");
    p.script("kernel.kexec", "load a new kernel or reboot (kexec_load, kexec_file_load, reboot)");
    p.script("kernel.bpf", "load a BPF program");
    p.script(
        "kernel.perf-event-open",
        "open a perf event",
        ProbeList.onGvisor(
            "gVisor does not implement perf events: the Sentry answers ENODEV and the host"
                + " kernel is never asked (with runsc's --oci-seccomp the profile refuses it"
                + " first)"));
    p.script("kernel.userfaultfd", "create a userfaultfd (a staple of kernel race exploits)");
    p.script("kernel.keyctl", "use the kernel keyring (add_key, keyctl)");
    p.script(
        "kernel.io-uring",
        "set up an io_uring (a large, often-exploited kernel surface)",
        ProbeList.onGvisor(
            "gVisor implements io_uring inside the Sentry; runsc without --oci-seccomp does not"
                + " apply the profile there, and its own host filter does not let io_uring reach"
                + " the host"));
    p.script(
        "kernel.open-by-handle-at",
        "open a host inode by a forged file handle (the 'shocker' escape)",
        ProbeList.onGvisor(
            "the Sentry answers ENOTSUP: gVisor has no file handles to forge (with runsc's"
                + " --oci-seccomp the profile refuses it first)"));
    p.script("kernel.ptrace", "ptrace pid 1");
    p.script(
        "kernel.compat-syscalls",
        "enter the 32-bit system call table with int 0x80 (and the x32 one) from executable"
            + " memory below 4 GiB: getpid, then calls the 64-bit profile refuses (unshare, bpf,"
            + " keyctl, io_uring, pidfd_getfd, ipc, ...)");
  }
}
