package io.agentnest.escapes.internal;

/** Devices: kernel log, memory, block and host devices. */
final class DeviceProbes {
  private DeviceProbes() {}

  static void addTo(ProbeList p) {
    p.script(
        "devices.kmsg",
        "read the kernel log (/dev/kmsg, syslog(2))",
        ProbeList.onGvisor(
            "gVisor's syslog(2) returns the Sentry's own synthetic boot messages, never the host"
                + " kernel's log (with runsc's --oci-seccomp the profile refuses it there too)"));
    p.script(
        "devices.memory", "open /dev/mem, /dev/kmem, /dev/port or raise the I/O privilege level");
    p.script("devices.mknod", "create and open device nodes for memory and disks (mknod)");
    p.script("devices.block-devices", "find and open a block device");
    p.script(
        "devices.host-devices",
        "open /dev/fuse, /dev/kvm, /dev/net/tun, vhost, GPU or vsock devices",
        ProbeList.onGvisor(
            "/dev/fuse and /dev/net/tun are devices emulated inside gVisor's Sentry; with"
                + " --network=none the tun device reaches no host network"));
  }
}
