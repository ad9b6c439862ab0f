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
MAX_SPEC = 1 << 20
BUFFER_LIMIT = 4 << 20
READY = b"AGENTNEST-VM-READY 1\n"
SPAWNED = b"AGENTNEST-VM-SPAWNED\n"

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC = 32, 4096, 16384
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38
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


def find_port():
    base = "/sys/class/virtio-ports"
    for _ in range(200):
        try:
            for name in sorted(os.listdir(base)):
                with open(os.path.join(base, name, "name")) as f:
                    if f.read().strip() == PORT_NAME:
                        return "/dev/" + name
        except OSError:
            pass
        time.sleep(0.05)
    raise OSError("no virtio-serial port named %s" % PORT_NAME)


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
    loopback_up()
    socket.sethostname(spec.get("hostname", "sandbox"))
    return group


def start(spec, group):
    uid, gid = int(spec["uid"]), int(spec["gid"])
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            write_file(group + "/cgroup.procs", str(os.getpid()))
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


class Relay:
    def __init__(self, port, to_agent, from_agent, pending):
        self.port = port
        self.to_agent = to_agent
        self.from_agent = from_agent
        self.down = bytearray(pending)  # host -> agent
        self.up = bytearray()  # agent -> host
        self.host_connected = True
        self.retry_at = 0.0
        self.agent_open = True
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
        r, w, _ = select.select(readers, writers, [], timeout)
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
    relay = Relay(port, to_agent, from_agent, pending)
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
