"""AgentNest microVM init (PID 1 of the guest; Python standard library only).

The host's QEMU gives the guest a virtio-serial port named "agentnest" whose other end is a Unix
socket the host holds. This init says READY on it, reads one JSON line (the sandbox's command,
user, limits and mounts), prepares the guest (mounts, cgroup limits, loopback), starts the command
as the sandbox user with its stdin and stdout on pipes, says SPAWNED, and then relays bytes between
the port and those pipes until the command ends; then it powers the guest off.

The relay exists so the host can drop and re-open its connection (attach) without the command
seeing end-of-file: while no host is connected, the port reads as end-of-file and writes fail.
Everything here runs before any sandbox code, as root of a guest that is itself the boundary.
"""

import ctypes
import errno
import fcntl
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
import time

PORT_NAME = "agentnest"
CONTROL_PORT_NAME = "agentnest-ctl"
MAX_CONTROL_LINE = 4096
RNDADDENTROPY, RNDRESEEDCRNG = 0x40085203, 0x5207
MAX_SPEC = 1 << 20
BUFFER_LIMIT = 4 << 20
READY = b"AGENTNEST-VM-READY 1\n"
SPAWNED = b"AGENTNEST-VM-SPAWNED\n"

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC = 32, 4096, 16384
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP = 24, 38, 22
MS_PRIVATE = 1 << 18
CLONE_NEWNS, CLONE_NEWPID = 0x00020000, 0x20000000
RB_POWER_OFF = 0x4321FEDC

libc = ctypes.CDLL(None, use_errno=True)


def log(msg):
    try:
        os.write(2, ("agentnest-vminit: %s\n" % msg).encode("utf-8", "replace"))
    except OSError:
        pass


def power_off(code):
    log("powering off (%s)" % code)
    try:
        os.sync()
    except OSError:
        pass
    libc.reboot(RB_POWER_OFF)
    os._exit(code)


def mount(source, target, fstype, flags=0, data=None):
    os.makedirs(target, exist_ok=True)
    rc = libc.mount(
        source.encode(),
        target.encode(),
        fstype.encode() if fstype else None,
        ctypes.c_ulong(flags),
        data.encode() if data else None,
    )
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, "mount %s on %s: %s" % (source, target, os.strerror(e)))


def find_port(wanted=PORT_NAME, attempts=200):
    base = "/sys/class/virtio-ports"
    for _ in range(attempts):
        try:
            for name in sorted(os.listdir(base)):
                with open(os.path.join(base, name, "name")) as f:
                    if f.read().strip() == wanted:
                        return "/dev/" + name
        except OSError:
            pass
        time.sleep(0.05)
    raise OSError("no virtio-serial port named %s" % wanted)


def read_spec(port):
    """Says READY until the host's JSON line arrives (a host that connected late still hears it)."""
    buf = b""
    next_ready = 0.0
    while True:
        now = time.monotonic()
        if now >= next_ready:
            try:
                os.write(port, READY)
            except OSError:
                pass
            next_ready = now + 0.5
        r, _, _ = select.select([port], [], [], 0.1)
        if not r:
            continue
        try:
            chunk = os.read(port, 65536)
        except BlockingIOError:
            continue
        if not chunk:
            time.sleep(0.1)  # no host connected yet
            continue
        buf += chunk
        if b"\n" in buf:
            line, _, rest = buf.partition(b"\n")
            return json.loads(line.decode("utf-8")), rest
        if len(buf) > MAX_SPEC:
            raise ValueError("the host's spec line is longer than %d bytes" % MAX_SPEC)


def write_file(path, text):
    with open(path, "w") as f:
        f.write(text)


def setup_cgroup(spec):
    """A cgroup for everything the sandbox runs, seen by the agent at /sys/fs/cgroup."""
    mount("cgroup2", "/run/agentnest/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    root = "/run/agentnest/cgroup"
    write_file(root + "/cgroup.subtree_control", "+memory +pids +cpu")
    group = root + "/sandbox"
    os.makedirs(group, exist_ok=True)
    write_file(group + "/memory.max", str(int(spec["memoryBytes"])))
    try:
        write_file(group + "/memory.swap.max", "0")
    except OSError:
        pass
    write_file(group + "/pids.max", str(int(spec["pidsLimit"])))
    cpus = float(spec.get("cpus", 0))
    if cpus > 0:
        write_file(group + "/cpu.max", "%d 100000" % max(1000, int(cpus * 100000)))
    mount(group, "/sys/fs/cgroup", None, MS_BIND)
    mount("none", "/sys/fs/cgroup", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    return group


def loopback_up():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ifreq = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(s, 0x8913, ifreq))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(s, 0x8914, struct.pack("16sH14s", b"lo", flags | 1, b""))  # SIOCSIFFLAGS, IFF_UP
    finally:
        s.close()


def prepare(spec):
    uid, gid = int(spec["uid"]), int(spec["gid"])
    mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m")
    for path, size in sorted(spec.get("tmpfs", {}).items()):
        mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=%d" % int(size))
    workspace = spec.get("workspace")
    if workspace:
        flags = MS_NOSUID | MS_NODEV | (MS_RDONLY if spec.get("workspaceReadOnly") else 0)
        mount("/dev/vdb", workspace, "ext4", flags)
        try:
            # ext4's lost+found is root's: the workspace must hold only what the sandbox wrote.
            os.rmdir(os.path.join(workspace, "lost+found"))
        except OSError:
            pass
        if not spec.get("workspaceReadOnly"):
            os.chown(workspace, uid, gid)
            os.chmod(workspace, 0o755)
    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=64m")
    # Overcommit as the host does: an allocation larger than the guest's RAM then meets the
    # sandbox's memory limit (an OOM kill the agent reports as MEMORY), not an early ENOMEM.
    write_file("/proc/sys/vm/overcommit_memory", "1")
    group = setup_cgroup(spec)
    harden_kernel()
    loopback_up()
    socket.sethostname(spec.get("hostname", "sandbox"))
    return group


# The guest is the boundary; inside it the sandbox still gets the container's view and filter, so
# that its code cannot reach more of the guest kernel than it could of a host's (a guest kernel
# bug must not be a shortcut to root in the guest, and from there to QEMU's devices).

# Paths Docker masks in every container: a file gets /dev/null over it, a directory an empty tmpfs.
MASKED = ("/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/key-users",
          "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
          "/proc/scsi", "/sys/firmware", "/sys/kernel/debug", "/sys/kernel/security",
          "/sys/kernel/tracing", "/sys/class/dmi")
SYSCTLS = {
    "kernel/unprivileged_userns_clone": "0",
    "kernel/kptr_restrict": "2",
    "kernel/dmesg_restrict": "1",
    "kernel/perf_event_paranoid": "3",
    "vm/unprivileged_userfaultfd": "0",
    "kernel/unprivileged_bpf_disabled": "1",
}


def harden_kernel():
    for name, value in SYSCTLS.items():
        try:
            write_file("/proc/sys/" + name, value)
        except OSError:
            pass


def mask_paths():
    for path in MASKED:
        try:
            if os.path.isdir(path):
                mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555")
            elif os.path.exists(path):
                mount("/dev/null", path, None, MS_BIND)
        except OSError:
            pass


# A seccomp filter (classic BPF) for what the container profile refuses and a guest would serve:
# any ABI but x86-64 (the 32-bit int 0x80 and x32 entries), namespaces, io_uring, keyrings,
# userfaultfd, BPF, perf, module loading, cross-process memory, and sockets beyond UNIX/INET.
AUDIT_ARCH_X86_64 = 0xC000003E
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
DENIED = {
    272: errno.EPERM,   # unshare
    308: errno.EPERM,   # setns
    425: errno.ENOSYS, 426: errno.ENOSYS, 427: errno.ENOSYS,  # io_uring_*
    248: errno.EPERM, 249: errno.EPERM, 250: errno.EPERM,  # add_key, request_key, keyctl
    323: errno.EPERM,   # userfaultfd
    321: errno.EPERM,   # bpf
    298: errno.EPERM,   # perf_event_open
    175: errno.EPERM, 313: errno.EPERM, 176: errno.EPERM,  # init_module, finit_module, delete_module
    246: errno.EPERM, 320: errno.EPERM,  # kexec_load, kexec_file_load
    310: errno.EPERM, 311: errno.EPERM,  # process_vm_readv, process_vm_writev
    440: errno.EPERM, 438: errno.EPERM,  # process_madvise, pidfd_getfd
    304: errno.EPERM, 303: errno.EPERM,  # open_by_handle_at, name_to_handle_at
    101: errno.EPERM,   # ptrace
    169: errno.EPERM,   # reboot
    165: errno.EPERM, 166: errno.EPERM, 155: errno.EPERM,  # mount, umount2, pivot_root
    161: errno.EPERM,   # chroot
    103: errno.EPERM,   # syslog
    435: errno.ENOSYS,  # clone3: glibc falls back to clone, whose flags are checked below
    134: errno.EPERM,   # uselib
    139: errno.EPERM,   # sysfs
    156: errno.EPERM,   # _sysctl
    212: errno.EPERM,   # lookup_dcookie
}
SYS_SOCKET, SYS_SOCKETPAIR, SYS_CLONE = 41, 53, 56
ALLOWED_FAMILIES = (1, 2, 10)  # AF_UNIX, AF_INET, AF_INET6
CLONE_NS_FLAGS = 0x7E020000  # NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET


def seccomp_filter():
    BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_JSET_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
    prog = []

    def ins(code, k, jt=0, jf=0):
        prog.append((code, jt, jf, k))

    ins(BPF_LD_W_ABS, 4)                                   # arch
    ins(BPF_JEQ_K, AUDIT_ARCH_X86_64, 1, 0)
    ins(BPF_RET_K, SECCOMP_RET_ERRNO | errno.ENOSYS)
    ins(BPF_LD_W_ABS, 0)                                   # nr
    ins(BPF_JGE_K, 0x40000000, 0, 1)                       # the x32 ABI
    ins(BPF_RET_K, SECCOMP_RET_ERRNO | errno.ENOSYS)
    for nr, err in sorted(DENIED.items()):
        ins(BPF_JEQ_K, nr, 0, 1)
        ins(BPF_RET_K, SECCOMP_RET_ERRNO | err)
    # socket(domain, ...) and socketpair: only UNIX and IP families
    for call in (SYS_SOCKET, SYS_SOCKETPAIR):
        ins(BPF_JEQ_K, call, 0, 2 + 2 * len(ALLOWED_FAMILIES))
        ins(BPF_LD_W_ABS, 16)                              # args[0], low word
        for fam in ALLOWED_FAMILIES:
            ins(BPF_JEQ_K, fam, 0, 1)
            ins(BPF_RET_K, SECCOMP_RET_ALLOW)
        ins(BPF_RET_K, SECCOMP_RET_ERRNO | errno.EAFNOSUPPORT)
    # clone(flags, ...): no new namespaces
    ins(BPF_JEQ_K, SYS_CLONE, 0, 3)
    ins(BPF_LD_W_ABS, 16)
    ins(BPF_JSET_K, CLONE_NS_FLAGS, 0, 1)
    ins(BPF_RET_K, SECCOMP_RET_ERRNO | errno.EPERM)
    ins(BPF_RET_K, SECCOMP_RET_ALLOW)
    return b"".join(struct.pack("HBBI", *i) for i in prog), len(prog)


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_seccomp():
    code, n = seccomp_filter()
    buf = ctypes.create_string_buffer(code, len(code))
    prog = SockFprog(n, ctypes.addressof(buf))
    if libc.prctl(PR_SET_SECCOMP, 2, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp filter")


def start(spec, group):
    uid, gid = int(spec["uid"]), int(spec["gid"])
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            write_file(group + "/cgroup.procs", str(os.getpid()))
            # Its own PID and mount namespaces, as in a container: the sandbox sees its own
            # processes only, under a /proc mounted for them with the usual paths masked.
            if libc.unshare(CLONE_NEWPID | CLONE_NEWNS) != 0:
                raise OSError(ctypes.get_errno(), "unshare")
            mount("none", "/", None, MS_REC | MS_PRIVATE)
            inner = os.fork()
            if inner != 0:
                os.close(in_r)
                os.close(out_w)
                os.close(in_w)
                os.close(out_r)
                while True:
                    try:
                        _, status = os.waitpid(inner, 0)
                        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
                    except InterruptedError:
                        continue
            mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
            mask_paths()
            nofile = int(spec["openFilesLimit"])
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
            for cap in range(64):
                if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                    break
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "no_new_privs")
            install_seccomp()
            os.dup2(in_r, 0)
            os.dup2(out_w, 1)
            for fd in (in_r, in_w, out_r, out_w):
                os.close(fd)
            os.chdir(spec.get("cwd") or "/")
            env = dict(spec.get("env", {}))
            argv = spec["argv"]
            os.execvpe(argv[0], argv, env)
        except BaseException as e:  # noqa: BLE001 - report anything, then end the child
            log("cannot start the sandbox command: %s" % e)
            os._exit(127)
    os.close(in_r)
    os.close(out_w)
    return pid, in_w, out_r


def reseed(seed):
    """Credits the host's fresh bytes to the kernel's pool and reseeds its generator at once."""
    fd = os.open("/dev/urandom", os.O_WRONLY)
    try:
        fcntl.ioctl(fd, RNDADDENTROPY, struct.pack("ii", len(seed) * 8, len(seed)) + seed)
        fcntl.ioctl(fd, RNDRESEEDCRNG)
    finally:
        os.close(fd)


class Control:
    """The host's control port, written only by the host (root-only in the guest, like the agent's).

    A guest restored from a checkpoint (a fork's copy, a restored snapshot, and the parent after
    its pause) runs on with the memory it had: its clock is behind by the time it was paused, and
    every copy would draw the same numbers from the kernel's generator. The host then sends one
    line, {"op": "resumed", "time_ns": <its clock>, "seed": <64 hex digits>}: the clock is set and
    the generator reseeded, so no two copies share a random stream; the init answers "resumed".
    Like the agent's port, it reads as end-of-file while no host is connected, and is probed again
    (every 0.2 s) then.
    """

    def __init__(self, fd):
        self.fd = fd
        self.buf = b""
        self.connected = True
        self.retry_at = 0.0

    def wanted(self, now):
        if not self.connected and now >= self.retry_at:
            self.connected = True
        return self.connected

    def read(self):
        try:
            chunk = os.read(self.fd, MAX_CONTROL_LINE)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.connected = False
            self.retry_at = time.monotonic() + 0.2
            self.buf = b""
            return
        self.buf += chunk
        while b"\n" in self.buf:
            line, _, self.buf = self.buf.partition(b"\n")
            self.handle(line)
        if len(self.buf) > MAX_CONTROL_LINE:
            self.buf = b""

    def handle(self, line):
        try:
            msg = json.loads(line.decode("ascii"))
        except (ValueError, UnicodeDecodeError):
            return
        if not isinstance(msg, dict) or msg.get("op") != "resumed":
            return
        seed = msg.get("seed")
        if isinstance(seed, str) and len(seed) == 64:
            try:
                reseed(bytes.fromhex(seed))
            except (ValueError, OSError) as e:
                log("cannot reseed the random generator: %s" % e)
        t = msg.get("time_ns")
        if isinstance(t, int) and t > 0:
            try:
                time.clock_settime_ns(time.CLOCK_REALTIME, t)
            except OSError as e:
                log("cannot set the clock: %s" % e)
        try:
            os.write(self.fd, b"resumed\n")  # the host waits for this before it goes on
        except OSError:
            pass


class Relay:
    def __init__(self, port, to_agent, from_agent, pending, control=None):
        self.port = port
        self.to_agent = to_agent
        self.from_agent = from_agent
        self.down = bytearray(pending)  # host -> agent
        self.up = bytearray()  # agent -> host
        self.host_connected = True
        self.retry_at = 0.0
        self.agent_open = True
        self.control = control
        for fd in (port, to_agent, from_agent):
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)

    def step(self):
        now = time.monotonic()
        readers, writers = [], []
        if self.agent_open and len(self.up) < BUFFER_LIMIT:
            readers.append(self.from_agent)
        if self.host_connected and len(self.down) < BUFFER_LIMIT:
            readers.append(self.port)
        if self.down:
            writers.append(self.to_agent)
        if self.up and self.host_connected:
            writers.append(self.port)
        timeout = 1.0 if self.host_connected else max(0.0, min(1.0, self.retry_at - now))
        control = self.control
        if control is not None:
            if control.wanted(now):
                readers.append(control.fd)
            else:
                timeout = max(0.0, min(timeout, control.retry_at - now))
        r, w, _ = select.select(readers, writers, [], timeout)
        # Before the agent's traffic: a restored guest's clock and generator are fixed first.
        if control is not None and control.fd in r:
            control.read()
        if not self.host_connected and time.monotonic() >= self.retry_at:
            self.probe_host()
        if self.from_agent in r:
            try:
                chunk = os.read(self.from_agent, 65536)
                if chunk:
                    self.up += chunk
                else:
                    self.agent_open = False
            except BlockingIOError:
                pass
        if self.port in r:
            self.read_host()
        if self.to_agent in w and self.down:
            try:
                n = os.write(self.to_agent, self.down)
                del self.down[:n]
            except BlockingIOError:
                pass
            except BrokenPipeError:
                self.down.clear()
        if self.port in w and self.up:
            self.write_host()

    def read_host(self):
        try:
            chunk = os.read(self.port, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            self.down += chunk
        else:
            self.host_connected = False
            self.retry_at = time.monotonic() + 0.1

    def probe_host(self):
        # A disconnected port reads as end-of-file; data or EAGAIN means a host is back.
        self.host_connected = True
        self.read_host()

    def write_host(self):
        try:
            n = os.write(self.port, self.up)
            del self.up[:n]
        except BlockingIOError:
            pass
        except OSError as e:
            if e.errno in (errno.EPIPE, errno.ENODEV, errno.ECONNRESET):
                # Nobody is attached: like a container's stdout with no one attached, it is lost.
                self.up.clear()
                self.host_connected = False
                self.retry_at = time.monotonic() + 0.1
            else:
                raise


def reap(agent_pid):
    ended = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid == 0:
            return ended
        if pid == agent_pid:
            ended = os.waitstatus_to_exitcode(status)


def main():
    signal.signal(signal.SIGCHLD, lambda *_: None)
    port = os.open(find_port(), os.O_RDWR | os.O_NONBLOCK)
    spec, pending = read_spec(port)
    group = prepare(spec)
    pid, to_agent, from_agent = start(spec, group)
    os.write(port, SPAWNED)
    try:
        control = Control(os.open(find_port(CONTROL_PORT_NAME, 20), os.O_RDWR | os.O_NONBLOCK))
    except OSError:
        control = None  # a QEMU without the control port: nothing is ever restored there
    relay = Relay(port, to_agent, from_agent, pending, control)
    code = None
    ended_at = 0.0
    while True:
        relay.step()
        ended = reap(pid)
        if ended is not None:
            code, ended_at = ended, time.monotonic()
        # A background child may hold the agent's stdout open: wait for it briefly, not forever.
        if code is not None and (not relay.agent_open or time.monotonic() - ended_at > 2.0):
            break
    deadline = time.monotonic() + 2.0
    while relay.up and relay.host_connected and time.monotonic() < deadline:
        relay.step()
    power_off(0 if code == 0 else 1)


if __name__ == "__main__":
    try:
        main()
    except BaseException as e:  # noqa: BLE001 - PID 1 must never just die
        log("failed: %r" % (e,))
        power_off(1)
