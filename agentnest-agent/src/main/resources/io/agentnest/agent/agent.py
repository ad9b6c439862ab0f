# AgentNest in-sandbox agent. Python 3 standard library only.
#
# It is started by the bootstrap (bootstrap.py) with this source sent over stdin, so that any image
# with python3 works and nothing has to be written into a read-only root filesystem. It speaks the
# AgentNest channel protocol over its original stdin/stdout (the container's attach stream), and on
# Docker with runc also over the agent link, a socket the bootstrap connected (Channel):
#
#   frame := MAGIC(2) | header_len u32 BE | payload_len u32 BE | header (UTF-8 JSON) | payload
#
# The host treats every frame it gets from here as untrusted; the agent in turn validates what it
# reads, because a process in the sandbox could write into the same pipe.
#
# Why one file of this size: the bootstrap sends the agent as a single source over stdin (nothing
# may be written into a read-only root filesystem, and every image only needs python3), so the
# agent cannot import sibling modules. It is laid out in sections instead: protocol names and the
# channel, paths, limits, commands, sessions, files, archives, egress, then the Agent (all mutable
# state in one object) and OPS, the dispatch table (op name -> handler). Importing it has no side
# effects: main() runs only under the bootstrap, which runs it as __main__. Host-side unit tests
# live in src/test/python; `python3 agent.py --protocol` prints the op list for the Java test that
# keeps it in step with io.agentnest.internal.Ops and docs/architecture.md.
import base64
import fcntl
import json
import os
import resource
import select
import selectors
import signal
import socket
import stat as statmod
import struct
import subprocess
import sys
import termios
import threading
import time

MAGIC = b"\xa9N"
MAX_HEADER = 1 << 20
MAX_PAYLOAD = 8 << 20
CHUNK = 64 * 1024
READ_AHEAD = 64 * 1024
PROTOCOL_VERSION = 1
WORKSPACE = os.environ.get("AGENTNEST_WORKSPACE", "/workspace")
DEFAULT_TIMEOUT_MS = 60_000
KILL_GRACE_S = 2.0
# Approval questions from a session: at most this many per call; an unanswered one is denied
# this long after the host's own approval timeout.
MAX_ASKS_PER_CALL = 256
ASK_MARGIN_S = 15.0
MAX_CTL_MESSAGE = 64 << 20
READ_ONLY_MESSAGE = (
    "%r is on a read-only file system: this sandbox's workspace is read-only (readOnlyWorkspace),"
    " nothing in it can be created, changed or deleted; write under /tmp, or create the sandbox"
    " without readOnlyWorkspace"
)

# Frame types the agent sends (the "ev" header field); the ops it serves are the keys of OPS at
# the end of this file. Both lists are io.agentnest.internal.Ops on the host.
EV_READY = "ready"
EV_EXPIRED = "expired"
EV_RESULT = "res"
EV_ERROR = "err"
EV_OUT = "out"
EV_DATA = "data"
EV_RICH = "rich"
EV_ASK = "ask"
EV_TCP_OPEN = "tcp_open"
EV_TCP_DATA = "tcp_data"
EV_TCP_EOF = "tcp_eof"
EV_TCP_ACK = "tcp_ack"
EV_TCP_CLOSE = "tcp_close"


class Channel:
    """The framed, multiplexed pipe to the host. Sends are serialised by one lock (many threads
    answer calls at once); reads happen on one thread per channel (the frame loop; on the agent
    link, the link's reader and the frame loop on the stdio side).

    Reads are buffered: one read takes whatever the host has sent (several frames, often), where
    reading a frame field by field cost five reads. Under gVisor every system call traps into the
    sentry (tens of microseconds each on a busy host), so this is most of a small frame's cost."""

    def __init__(self, fd_in, fd_out, link=False):
        self.fd_in = fd_in
        self.fd_out = fd_out
        self.write_lock = threading.Lock()
        self.rbuf = bytearray()
        self.rpos = 0
        # The agent link (a socket the bootstrap connected, see bootstrap.py): sends use
        # MSG_NOSIGNAL, since SIGPIPE is at its default here and a host that went away must not
        # end the sandbox with it; `up` turns false for good at its end.
        self.sock = socket.socket(fileno=fd_out) if link else None
        self.up = True
        # The container's stdin/stdout beside the link, where a host that attaches later talks.
        self.stdio_side = None

    @staticmethod
    def open_private():
        """The channel is the agent's private copy of the original fds; 0/1/2 are pointed at
        /dev/null so that nothing else can write protocol bytes by accident (a child inheriting
        fd 1, say). On the agent link, fds 0 and 1 are the link, and the container's own stdin and
        stdout come from the bootstrap as the channel's stdio side."""
        chan_in = os.dup(0)
        chan_out = os.dup(1)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.set_inheritable(chan_in, False)
        os.set_inheritable(chan_out, False)
        stdio = globals().get("AGENTNEST_STDIO")  # set by the bootstrap on the agent link
        if not stdio:
            return Channel(chan_in, chan_out)
        for fd in stdio:
            os.set_inheritable(fd, False)
        channel = Channel(chan_in, chan_out, link=True)
        channel.stdio_side = Channel(stdio[0], stdio[1])
        return channel

    def end_link(self):
        """The link ended (its host detached, closed it or died): frames go to the stdio side
        from now on. Called by the link's reader, its only one."""
        with self.write_lock:
            if self.sock is None or not self.up:
                return
            self.up = False
        self.sock.close()
        os.close(self.fd_in)

    def _write(self, view):
        if self.sock is None:
            return os.write(self.fd_out, view)
        try:
            return self.sock.send(view, socket.MSG_NOSIGNAL)
        except OSError:
            # The host is gone: what was in flight is lost, as on a stdout nobody reads. The
            # shutdown wakes the link's reader with an end of stream, which ends the link.
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return len(view)

    def _read(self, n):
        try:
            return os.read(self.fd_in, n)
        except ConnectionResetError:
            return b""

    def send(self, header, payload=b""):
        hb = json.dumps(header, separators=(",", ":"), ensure_ascii=True).encode("ascii")
        buf = MAGIC + struct.pack(">II", len(hb), len(payload)) + hb + payload
        with self.write_lock:
            view = memoryview(buf)
            while view:
                n = self._write(view)
                view = view[n:]

    def read_exact(self, n):
        buf = self.rbuf
        have = len(buf) - self.rpos
        if n > READ_AHEAD and have < n:
            # A large payload (a file's chunk) is read as it comes, not copied through the buffer.
            parts = [bytes(buf[self.rpos :])]
            buf.clear()
            self.rpos = 0
            n -= have
            while n > 0:
                b = self._read(min(n, 1 << 20))
                if not b:
                    return None
                parts.append(b)
                n -= len(b)
            return b"".join(parts)
        while len(buf) - self.rpos < n:
            if self.rpos:
                del buf[: self.rpos]
                self.rpos = 0
            # Bounded: the buffer never holds more than twice READ_AHEAD.
            b = self._read(READ_AHEAD)
            if not b:
                return None
            buf += b
        out = bytes(buf[self.rpos : self.rpos + n])
        self.rpos += n
        if self.rpos == len(buf):
            buf.clear()
            self.rpos = 0
        return out

    def read_frame(self):
        """Returns (header, payload) or None at end of stream. Resynchronises on garbage: a bad
        magic, an oversized length, a header that is not a JSON object are skipped."""
        while True:
            first = self.read_exact(1)
            if first is None:
                return None
            if first != MAGIC[:1]:
                continue
            second = self.read_exact(1)
            if second is None:
                return None
            if second != MAGIC[1:]:
                continue
            lens = self.read_exact(8)
            if lens is None:
                return None
            hlen, plen = struct.unpack(">II", lens)
            if hlen > MAX_HEADER or plen > MAX_PAYLOAD:
                continue
            hb = self.read_exact(hlen)
            pb = self.read_exact(plen) if plen else b""
            if hb is None or pb is None:
                return None
            try:
                header = json.loads(hb.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                continue
            if not isinstance(header, dict):
                continue
            return header, pb


# Secret environment variables. They arrive over the channel before anything runs, never through
# the container's configuration (which the engine keeps on disk and shows to anyone who can
# inspect it). Commands and sessions get them in their environment; the agent's own environment,
# /proc/<agent>/environ, never holds them.
MAX_SECRETS = 256

# Variables an interpreter reads only when it starts: when the first frame sets one, a prewarmed
# interpreter is replaced, not told (Agent.hand_env_to_prewarmed).
STARTUP_ENV_PREFIXES = ("PYTHON", "LC_", "LD_")
STARTUP_ENV = frozenset(("LANG", "LANGUAGE", "TZ", "HOME", "PATH", "TMPDIR"))
MAX_SECRET_BYTES = 1 << 20


class InitRefused(Exception):
    """The host's first frame is missing or malformed; the agent exits with this status."""

    def __init__(self, status):
        super().__init__("init refused (exit %d)" % status)
        self.status = status


def parse_init(frame):
    """The secret variables of the host's first frame, or InitRefused (97: the stream ended,
    98: not an init frame or a malformed one). Entries that are not str -> str, or whose name is
    empty or holds '=' or NUL, are dropped."""
    if frame is None:
        raise InitRefused(97)
    header, payload = frame
    if header.get("op") != "init" or len(payload) > MAX_SECRET_BYTES:
        raise InitRefused(98)
    try:
        env = json.loads(payload.decode("utf-8")).get("env") or {}
    except (UnicodeDecodeError, ValueError, AttributeError):
        raise InitRefused(98) from None
    if not isinstance(env, dict) or len(env) > MAX_SECRETS:
        raise InitRefused(98)
    out = {}
    for k, v in env.items():
        if isinstance(k, str) and isinstance(v, str) and k and "=" not in k and "\0" not in k + v:
            out[k] = v
    return out


class PathRefused(Exception):
    pass


def resolve(rel, must_exist=False):
    """Maps a workspace-relative path to an absolute one that stays inside the workspace."""
    if not isinstance(rel, str) or "\x00" in rel:
        raise PathRefused("path must be a string without NUL bytes")
    if rel.startswith("/"):
        raise PathRefused("absolute path %r: use a path relative to the workspace" % rel)
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise PathRefused("path %r contains '..': paths must stay inside the workspace" % rel)
    root = os.path.realpath(WORKSPACE)
    full = os.path.join(root, *parts) if parts else root
    real = os.path.realpath(full)
    if real != root and not real.startswith(root + "/"):
        raise PathRefused("path %r leads outside the workspace through a symlink" % rel)
    if must_exist and not os.path.lexists(real):
        raise FileNotFoundError(rel)
    return real


def open_beneath(real, flags, mode=0o644):
    """Opens a path that resolve() returned, refusing it if a directory on the way was swapped
    for a symlink since: the parent is opened and its real location checked through /proc, and
    the last component is opened relative to that descriptor without following symlinks."""
    root = os.path.realpath(WORKSPACE)
    parent, name = os.path.split(real)
    dfd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        where = os.readlink("/proc/self/fd/%d" % dfd)
        if where != root and not where.startswith(root + "/"):
            raise PathRefused("path leads outside the workspace (a directory on it was replaced"
                              " by a symlink while it was opened)")
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dfd)
    finally:
        os.close(dfd)


def stat_entry(path, name):
    st = os.lstat(path)
    if statmod.S_ISDIR(st.st_mode):
        kind = "dir"
    elif statmod.S_ISREG(st.st_mode):
        kind = "file"
    elif statmod.S_ISLNK(st.st_mode):
        kind = "symlink"
    else:
        kind = "other"
    return {
        "path": name,
        "type": kind,
        "size": st.st_size,
        "mode": statmod.S_IMODE(st.st_mode),
        "mtime_ms": int(st.st_mtime * 1000),
    }


def rel_of(real):
    root = os.path.realpath(WORKSPACE)
    if real == root:
        return ""
    return real[len(root) + 1 :]


class OutputBudget:
    """Counts bytes forwarded for one call and says when the cap is reached."""

    def __init__(self, cap):
        self.cap = cap
        self.sent = 0
        self.truncated = False
        self.lock = threading.Lock()

    def take(self, n):
        with self.lock:
            room = max(0, self.cap - self.sent)
            allowed = min(room, n)
            self.sent += allowed
            if allowed < n:
                self.truncated = True
            return allowed


class Timer:
    """One thread for every deadline in the agent, started up front: enforcing a limit must not
    need a new thread (the pids limit may be exhausted exactly then).

    The thread is woken only for a deadline before its next wake-up; with nothing to wait for it
    looks again every IDLE_WAIT_S. A far deadline (a sandbox's expiry, set at hand-out) then
    costs no wake-up of a second thread, which under gVisor delayed the reply to set_ttl and
    the user's first call behind it."""

    IDLE_WAIT_S = 30.0

    def __init__(self):
        self.cond = threading.Condition()
        self.heap = []
        self.seq = 0
        self.wake_at = 0.0  # monotonic time by which the thread looks at the heap again
        threading.Thread(target=self._loop, daemon=True, name="timer").start()

    def schedule(self, delay_s, fn):
        import heapq

        with self.cond:
            self.seq += 1
            entry = [time.monotonic() + delay_s, self.seq, fn]
            heapq.heappush(self.heap, entry)
            if entry[0] < self.wake_at:
                self.cond.notify()
            return entry

    @staticmethod
    def cancel(entry):
        entry[2] = None

    def _loop(self):
        import heapq

        while True:
            with self.cond:
                while True:
                    now = time.monotonic()
                    if self.heap and self.heap[0][0] <= now:
                        break
                    wait = self.heap[0][0] - now if self.heap else self.IDLE_WAIT_S
                    self.wake_at = now + wait
                    self.cond.wait(wait)
                # Due now: a deadline scheduled meanwhile must wake the thread (see schedule).
                self.wake_at = float("inf")
                _, _, fn = heapq.heappop(self.heap)
            if fn is not None:
                try:
                    fn()
                except Exception:  # noqa: BLE001 - a failed kill must not stop the timer
                    pass


class Pool:
    """Pre-started call threads; grows when all are busy and the pids limit allows."""

    def __init__(self, size, guard):
        import queue

        self.queue = queue.SimpleQueue()
        self.idle = 0
        self.lock = threading.Lock()
        self.guard = guard
        for _ in range(size):
            self._start()

    def _start(self):
        t = threading.Thread(target=self._loop, daemon=True, name="call")
        t.start()

    def _loop(self):
        while True:
            with self.lock:
                self.idle += 1
            call_id, fn = self.queue.get()
            with self.lock:
                self.idle -= 1
            self.guard(call_id, fn)

    def submit(self, call_id, fn):
        with self.lock:
            busy = self.idle == 0
        if busy:
            try:
                self._start()
            except RuntimeError:
                pass  # out of pids: the call waits for a free thread
        self.queue.put((call_id, fn))


# Counter files found missing: the cgroup layout of a running container does not change, so a file
# that is not there is not looked for again (each probe is read twice per call; under gVisor every
# failed open is a trap into the sentry).
_MISSING_COUNTERS = set()


def read_counter(paths, key):
    for path in paths:
        if path in _MISSING_COUNTERS:
            continue
        try:
            # os-level: an open() file object adds fstat, ioctl and lseek calls to every read.
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            _MISSING_COUNTERS.add(path)
            continue
        except OSError:
            continue
        try:
            data = os.read(fd, 8192)
        except OSError:
            continue
        finally:
            os.close(fd)
        for line in data.decode("ascii", "replace").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == key:
                try:
                    return int(parts[1])
                except ValueError:
                    break
    return None


class LimitProbe:
    """Snapshots the sandbox's own cgroup counters around a call to tell which limit it hit."""

    OOM = ("/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events")
    PIDS = ("/sys/fs/cgroup/pids/pids.events", "/sys/fs/cgroup/pids.events")

    def __init__(self):
        self.oom = read_counter(self.OOM, "oom_kill")
        self.pids = read_counter(self.PIDS, "max")
        # A runtime whose own kernel holds the pids limit (gVisor on Kubernetes) does it with
        # RLIMIT_NPROC, set by the pod's pid 1, which says so in the environment it starts the
        # agent with; there is no pids cgroup to read. (Elsewhere RLIMIT_NPROC is the engine's
        # large default, not the sandbox's limit, and is not watched.)
        soft = resource.getrlimit(resource.RLIMIT_NPROC)[0]
        ours = os.environ.get("AGENTNEST_NPROC_LIMIT") == str(soft)
        self.nproc = soft if ours and 0 < soft != resource.RLIM_INFINITY else None
        self.nproc_full = False
        self.sampled_at = 0.0

    def sample_now(self):
        """While output arrives (a refused fork prints its error as it happens), at most every
        10 ms: the moment a bomb fills the limit is the moment it writes."""
        if self.nproc is not None and not self.nproc_full:
            now = time.monotonic()
            if now - self.sampled_at >= 0.01:
                self.sampled_at = now
                self.sample_tasks()

    def sample_tasks(self):
        """Under an RLIMIT_NPROC: whether this user's tasks (threads too) have reached it, asked of
        the kernel that counts them: a thread of the agent's own is refused then. (Its /proc
        shows fewer tasks than it counts: gVisor counts a task until it is reaped.)"""
        if self.nproc is None or self.nproc_full:
            return
        try:
            t = threading.Thread(target=int, daemon=True)
            t.start()
            t.join(1)
        except RuntimeError:  # "can't start new thread": the limit is full right now
            self.nproc_full = True

    def hit(self, check_disk=True, disk_paths=(WORKSPACE, "/tmp")):
        oom = read_counter(self.OOM, "oom_kill")
        if oom is not None and self.oom is not None and oom > self.oom:
            return "MEMORY"
        pids = read_counter(self.PIDS, "max")
        if pids is not None and self.pids is not None and pids > self.pids:
            return "PIDS"
        if self.nproc_full:
            return "PIDS"
        for path in disk_paths if check_disk else ():
            try:
                st = os.statvfs(path)
                if st.f_blocks and st.f_bavail == 0:
                    return "DISK"
            except OSError:
                continue
        return None


def raise_oom_score(pid):
    # Make sandbox code, not the agent, the OOM killer's choice. Raising needs no privilege.
    try:
        with open("/proc/%d/oom_score_adj" % pid, "w") as f:
            f.write("800")
    except OSError:
        pass


def descendants(root):
    """Pids below root (by parent links), to stop children that left the process group."""
    children = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo and len(out) < 100_000:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


class ExecCall:
    def __init__(self, agent, call_id, header, stdin_bytes):
        self.agent = agent
        self.id = call_id
        self.header = header
        self.stdin_bytes = stdin_bytes
        self.proc = None
        self.limit = None
        self.budget = OutputBudget(int(header.get("max_output", 10 << 20)))
        self.kill_timer = None
        self.pty = None  # PtyEnd when the command runs on a terminal (header "pty")
        self.pty_error = None

    def open_pty(self):
        size = pty_size(self.header.get("pty"))
        if size is None:
            return
        try:
            self.pty = PtyEnd(size)
        except OSError as e:
            self.pty_error = "cannot open a pseudo-terminal: %s" % (e.strerror or e)
            return
        self.agent.running[self.id] = self

    def release_pty(self):
        if self.pty is not None:
            self.pty.close()
            self.agent.running.pop(self.id, None)

    def kill_tree(self, sig):
        if self.proc is None:
            return
        pids = descendants(self.proc.pid)
        # Repeat for a process group that is still forking (a fork bomb), bounded.
        for _ in range(20):
            try:
                os.killpg(self.proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            if sig != signal.SIGKILL:
                break
            time.sleep(0.005)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def stop(self, limit):
        """TERM now, KILL after the grace period; safe to call from the timer thread."""
        if self.limit is None:
            self.limit = limit
        self.kill_tree(signal.SIGTERM)
        if self.kill_timer is None:
            self.kill_timer = self.agent.timer.schedule(KILL_GRACE_S, lambda: self.kill_tree(signal.SIGKILL))

    def run(self):
        h = self.header
        started = time.monotonic()
        probe = LimitProbe()
        env = self.agent.child_env()
        env.update({str(k): str(v) for k, v in (h.get("env") or {}).items()})
        cwd = h.get("cwd") or WORKSPACE
        try:
            cwd = resolve_cwd(cwd)
        except FileNotFoundError:
            self.release_pty()
            self.agent.send_error(
                self.id,
                "BAD_PATH",
                "working directory %r does not exist under /workspace: create it first (a file"
                " written into it, files().mkdir(%r), or 'mkdir -p %s' in an earlier command)"
                % (cwd, cwd, cwd),
            )
            return
        except PathRefused as e:
            self.release_pty()
            self.agent.send_error(self.id, "BAD_PATH", "working directory: %s" % e)
            return
        if self.pty_error is not None:
            self.agent.send_result(self.id, exit_code=127, duration_ms=0, limit=None, error=self.pty_error)
            return
        argv = h.get("argv")
        if not argv:
            argv = ["/bin/sh", "-c", h.get("cmd", "")]
        try:
            if self.pty is not None:
                env["TERM"] = pty_term(h.get("term"))
                self.proc = self.pty.spawn(argv, cwd, env)
            else:
                self.proc = subprocess.Popen(
                    argv,
                    cwd=cwd,
                    env=env,
                    stdin=subprocess.PIPE if self.stdin_bytes else subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                    close_fds=True,
                )
        except OSError as e:
            self.release_pty()
            limit = probe.hit()
            self.agent.send_result(
                self.id,
                exit_code=126 if limit else 127,
                duration_ms=0,
                limit=limit,
                error="cannot start %r: %s" % (argv[0], e.strerror or e),
            )
            return
        raise_oom_score(self.proc.pid)
        self.agent.running[self.id] = self
        timeout_ms = int(h.get("timeout_ms") or DEFAULT_TIMEOUT_MS)
        deadline = self.agent.timer.schedule(timeout_ms / 1000.0, lambda: self.stop("TIMEOUT"))
        if self.pty is not None:
            if self.stdin_bytes:
                self.pty.type(self.stdin_bytes)
            streams = {self.pty.master: "o"}
        else:
            if self.stdin_bytes:
                try:
                    self.proc.stdin.write(self.stdin_bytes)
                    self.proc.stdin.close()
                except OSError:
                    pass
            streams = {self.proc.stdout.fileno(): "o", self.proc.stderr.fileno(): "e"}
        sel = selectors.DefaultSelector()
        for fd in streams:
            sel.register(fd, selectors.EVENT_READ)
        exited_at = None
        killed_leftovers = False
        try:
            while streams:
                events = sel.select(timeout=0.1 if exited_at else 1.0)
                for key, _ in events:
                    fd = key.fd
                    try:
                        data = os.read(fd, CHUNK)
                    except OSError:
                        data = b""
                    if not data:
                        sel.unregister(fd)
                        del streams[fd]
                        continue
                    probe.sample_now()
                    allowed = self.budget.take(len(data))
                    if allowed:
                        self.agent.send({"id": self.id, "ev": EV_OUT, "s": streams[fd]}, data[:allowed])
                    if allowed < len(data) and self.limit is None:
                        self.stop("OUTPUT")
                if exited_at is None and self.proc.poll() is not None:
                    exited_at = time.monotonic()
                elif exited_at is not None and not events and not killed_leftovers:
                    # The command is done but background children still hold its output: they
                    # belong to this call and end with it. A process meant to outlive the call
                    # redirects its output (cmd > log 2>&1 &).
                    killed_leftovers = True
                    probe.sample_tasks()
                    self.kill_tree(signal.SIGKILL)
                elif killed_leftovers and time.monotonic() - exited_at > 5:
                    break
        finally:
            sel.close()
        self.proc.wait()
        Timer.cancel(deadline)
        if self.limit is not None:
            self.kill_tree(signal.SIGKILL)
        if self.kill_timer is not None:
            Timer.cancel(self.kill_timer)
        if self.pty is not None:
            self.pty.close()
        else:
            self.proc.stdout.close()
            self.proc.stderr.close()
        self.agent.running.pop(self.id, None)
        code = self.proc.returncode
        limit = probe.hit(check_disk=code != 0)
        self.agent.send_result(
            self.id,
            exit_code=code if code >= 0 else 128 - code,
            signal=-code if code < 0 else None,
            duration_ms=int((time.monotonic() - started) * 1000),
            limit=limit or self.limit,
            truncated=self.budget.truncated,
            output_bytes=self.budget.sent,
        )


# A command on a terminal (exec with header "pty": {"rows", "cols"}): an interactive shell for a
# person at the host's terminal. Its output is one stream ("o"), as a terminal shows it; what the
# person types arrives as pty_in frames, window sizes as pty_resize, neither with a reply.
MAX_PTY_SIDE = 1000
MAX_PTY_QUEUE = 1 << 20
PTY_TERMS = ("xterm-256color", "xterm", "vt100", "screen", "tmux-256color", "linux", "dumb")


def pty_size(spec):
    """(rows, cols) of a header's "pty" field, or None when the command runs without one."""
    if not isinstance(spec, dict):
        return None
    rows, cols = spec.get("rows"), spec.get("cols")
    if not (isinstance(rows, int) and isinstance(cols, int)):
        return (24, 80)
    return (min(max(rows, 1), MAX_PTY_SIDE), min(max(cols, 1), MAX_PTY_SIDE))


def pty_term(term):
    return term if term in PTY_TERMS else "xterm-256color"


def _take_terminal():
    # In the child, after setsid: the pty on fd 0 becomes its controlling terminal, so the shell
    # gets job control, ^C as SIGINT and SIGWINCH on resize. Where the runtime refuses it, the
    # shell still runs, without job control.
    try:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    except OSError:
        pass


class PtyEnd:
    """The agent's side of a command's pseudo-terminal: spawns it, types into it, resizes it.
    Typing goes through a queue and a thread of its own, so a program that does not read its
    input can never stall the frame loop; the queue is bounded (what is past it is dropped, as a
    terminal that is not read drops keystrokes)."""

    def __init__(self, size):
        self.master, self.slave = os.openpty()
        self.resize(*size)
        self.queue = []
        self.queued = 0
        self.cond = threading.Condition()
        self.closed = False

    def spawn(self, argv, cwd, env):
        try:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=self.slave,
                stdout=self.slave,
                stderr=self.slave,
                start_new_session=True,
                close_fds=True,
                preexec_fn=_take_terminal,
            )
        finally:
            os.close(self.slave)
            self.slave = None
        threading.Thread(target=self._write_loop, daemon=True, name="pty-in").start()
        return proc

    def resize(self, rows, cols):
        # On the master, the kernel signals SIGWINCH to the terminal's foreground process group.
        try:
            fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        except OSError:
            pass

    def type(self, data):
        with self.cond:
            if self.closed or self.queued + len(data) > MAX_PTY_QUEUE:
                return
            self.queue.append(bytes(data))
            self.queued += len(data)
            self.cond.notify()

    def _write_loop(self):
        while True:
            with self.cond:
                while not self.queue and not self.closed:
                    self.cond.wait()
                if self.closed:
                    return
                data = self.queue.pop(0)
                self.queued -= len(data)
            view = memoryview(data)
            while view:
                try:
                    view = view[os.write(self.master, view):]
                except OSError:
                    return

    def close(self):
        with self.cond:
            if self.closed:
                return
            self.closed = True
            self.cond.notify()
        if self.slave is not None:
            os.close(self.slave)
            self.slave = None
        try:
            os.close(self.master)
        except OSError:
            pass


def resolve_cwd(cwd):
    if cwd.startswith("/"):
        return cwd
    return resolve(cwd, must_exist=True)


# ----------------------------------------------------------------------------------- sessions

MAX_STATE_BYTES = 2 << 30


class Session:
    """One long-lived Python interpreter (worker.py) per named session."""

    def __init__(self, agent, name):
        self.agent = agent
        self.name = name
        self.proc = None
        self.ctl_r = None
        self.lock = threading.Lock()
        self.current = None
        self.generation = 0
        self.state = None
        self.pending_ctl = b""
        # The user's variables for an interpreter started before they were known (a pooled
        # sandbox's): they go in front of its first request (Agent.hand_env_to_prewarmed).
        self.pending_env = None
        # The interpreter's three pipes, registered once per interpreter, not per call: five
        # system calls less per call (each a trap into the sentry under gVisor).
        self.sel = None

    def ensure(self):
        if self.proc is not None and self.proc.poll() is None:
            return False
        ctl_r, ctl_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        env = self.agent.child_env()
        env["AGENTNEST_CTL_FD"] = str(ctl_w)
        env["PYTHONUNBUFFERED"] = "1"
        env["AGENTNEST_SESSION"] = self.name
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "-c", self.agent.worker_source],
            stdin=subprocess.PIPE,
            stdout=out_w,
            stderr=err_w,
            pass_fds=(ctl_w,),
            cwd=WORKSPACE if os.path.isdir(WORKSPACE) else "/",
            env=env,
            start_new_session=True,
        )
        os.close(ctl_w)
        os.close(out_w)
        os.close(err_w)
        raise_oom_score(self.proc.pid)
        self.ctl_r, self.out_r, self.err_r = ctl_r, out_r, err_r
        for fd in (ctl_r, out_r, err_r):
            os.set_blocking(fd, False)
        self._close_selector()
        self.sel = selectors.DefaultSelector()
        self.sel.register(out_r, selectors.EVENT_READ, "o")
        self.sel.register(err_r, selectors.EVENT_READ, "e")
        self.sel.register(ctl_r, selectors.EVENT_READ, "c")
        # Bigger pipes for the bulk of fork and snapshot state (fewer wake-ups per MiB).
        for fd in (ctl_r, self.proc.stdin.fileno()):
            try:
                fcntl.fcntl(fd, 1031, 1 << 20)  # F_SETPIPE_SZ
            except OSError:
                pass
        self.generation += 1
        # A new interpreter starts with them (child_env): nothing is pending for it.
        self.pending_env = None
        return True

    def warm_up(self, wait_s=10):
        """One round trip through every system call of a call's path (wait4, epoll_wait, the
        request's write, the reply's write and read), with nothing run in the interpreter. Under
        gVisor's systrap the first use of each call site in a process traps and gets patched, a
        millisecond or more each on a small host: an instrumented agent in runsc, woken after
        1.5 s idle, spent 0.4-3.8 ms of a pooled sandbox's first call in its first wait4 alone.
        Done here, while the interpreter waits for its user, the first call costs what the next
        ones do. Returns whether the interpreter answered."""
        if self.proc.poll() is not None:
            return False
        self.sel.select(timeout=0)
        self.request(b'{"warm": true}')
        return self._ctl_message(time.monotonic() + wait_s) == {"warm": True}

    def request(self, req, data=b""):
        """Writes one request (and the bytes that follow it) to the interpreter, in one write:
        behind the user's variables while they are pending."""
        buf = struct.pack(">I", len(req)) + req + data
        if self.pending_env is not None:
            env = json.dumps({"env": self.pending_env}).encode("utf-8")
            buf = struct.pack(">I", len(env)) + env + buf
            self.pending_env = None
        self.proc.stdin.write(buf)
        self.proc.stdin.flush()

    def close(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
            self._close_selector()
            for fd in (self.ctl_r, self.out_r, self.err_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.proc = None

    def _close_selector(self):
        if self.sel is not None:
            try:
                self.sel.close()
            except OSError:
                pass
            self.sel = None

    def run(self, call_id, header, code):
        with self.lock:
            self._run(call_id, header, code)

    def interrupt(self, limit=None):
        """SIGINT to the interpreter (KeyboardInterrupt); the call loop escalates if it hangs."""
        state = self.state
        if state is None:
            return
        if limit and state["limit"] is None:
            state["limit"] = limit
        for ask in list(state["pending"]):
            self.answer(ask, False, "the call was interrupted")
        if state["interrupted_at"] is None:
            state["interrupted_at"] = time.monotonic()
            try:
                os.kill(self.proc.pid, signal.SIGINT)
            except (ProcessLookupError, AttributeError):
                pass

    def answer(self, ask, allowed, reason):
        """Passes the host's decision on an approval question to the waiting interpreter."""
        state = self.state
        if state is None or state["pending"].pop(ask, None) is None:
            return False
        state["paused"] += time.monotonic() - state["asked_at"].pop(ask, time.monotonic())
        msg = json.dumps({"answer": ask, "allowed": bool(allowed), "reason": str(reason)[:1000]})
        try:
            self.request(msg.encode("utf-8"))
        except (OSError, ValueError):
            pass
        return True

    def ask(self, call_id, msg, ask_wait_s):
        """Forwards an approval question of the interpreter to the host; the call's clock stops."""
        state = self.state
        try:
            ask = int(msg.get("ask"))
        except (TypeError, ValueError):
            return
        state["asks"] += 1
        now = time.monotonic()
        state["pending"][ask] = now + ask_wait_s
        state["asked_at"][ask] = now
        if state["asks"] > MAX_ASKS_PER_CALL:
            self.answer(ask, False, "more than %d approval questions in one call" % MAX_ASKS_PER_CALL)
            return
        self.agent.send(
            {
                "id": call_id,
                "ev": EV_ASK,
                "ask": ask,
                "event": str(msg.get("event", ""))[:100],
                "target": str(msg.get("target", ""))[:1000],
                "detail": str(msg.get("detail", ""))[:1000],
                # A command cut short cannot be judged by what is left: the host is strict then.
                "cut": msg.get("cut") is True or len(str(msg.get("target", ""))) > 1000,
                "replaces": msg.get("replaces") is True,
            }
        )

    def _ctl_read(self, n, deadline):
        """Reads exactly n bytes from the worker's control pipe, or None at EOF/deadline."""
        out = bytearray(self.pending_ctl)
        self.pending_ctl = b""
        while len(out) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.ctl_r], [], [], min(left, 1.0))[0]:
                if left <= 0 or self.proc.poll() is not None:
                    return None
                continue
            try:
                data = os.read(self.ctl_r, min(1 << 20, n - len(out)))
            except BlockingIOError:
                continue
            if not data:
                return None
            out += data
        return bytes(out)

    def _ctl_message(self, deadline):
        head = self._ctl_read(4, deadline)
        if head is None:
            return None
        size = struct.unpack(">I", head)[0]
        if size > MAX_CTL_MESSAGE:
            return None
        body = self._ctl_read(size, deadline)
        return None if body is None else json.loads(body.decode("utf-8"))

    def dump(self, call_id, bulk=None):
        """Streams the session's pickled namespace to the host (fork and snapshots); with a bulk
        token the session sends it over the bulk link instead, and the result says how much."""
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self.agent.send_result(call_id, present=False)
                return
            deadline = time.monotonic() + 120
            self.pending_ctl = b""
            req = {"dump": True}
            if isinstance(bulk, str):
                req["bulk"] = {"token": bulk}
            self.request(json.dumps(req).encode("utf-8"))
            msg = self._ctl_message(deadline)
            head = (msg or {}).get("state")
            if not isinstance(head, dict):
                try:
                    # The pipe ends a moment before the exit can be reaped.
                    code = self.proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    code = None
                self.agent.send_error(
                    call_id,
                    "STATE",
                    "the session did not answer the save request"
                    if code is None
                    else "the session's interpreter exited (code %s) while saving its state, e.g."
                    " an object whose pickling ends the process: nothing was copied; the session"
                    " starts afresh on its next call, without its variables" % code,
                )
                return
            left = int(head.get("bytes", 0))
            while left > 0:
                chunk = self._ctl_read(min(left, 1 << 20), deadline)
                if chunk is None:
                    self.agent.send_error(call_id, "STATE", "the session stopped while saving its state")
                    return
                self.agent.send({"id": call_id, "ev": EV_DATA}, chunk)
                left -= len(chunk)
            self.agent.send_result(call_id, present=True, **{k: v for k, v in head.items() if k != "bytes"})

    def warm(self, call_id):
        """Starts the interpreter ahead of use (a spare copy waiting for a fork's state)."""
        with self.lock:
            self.ensure()
        self.agent.send_result(call_id)

    def load(self, call_id, header, data):
        """Replaces the session's namespace with a saved one (a fork's or a snapshot's)."""
        req = {"load": len(data), "extra_bytes": int(header.get("extra_bytes", 0))}
        self._load_request(call_id, req, data, 120)

    def load_bulk(self, call_id, header):
        """Has the session read a saved namespace from the bulk link (a fork's state)."""
        req = {"load_bulk": {"token": str(header.get("bulk", ""))}}
        self._load_request(call_id, req, b"", 180)

    def _load_request(self, call_id, req, data, wait_s):
        with self.lock:
            self.ensure()
            deadline = time.monotonic() + wait_s
            self.pending_ctl = b""
            try:
                self.request(json.dumps(req).encode("utf-8"), data)
            except OSError as e:
                self.agent.send_error(call_id, "STATE", "cannot pass the state to the session: %s" % e)
                return
            msg = self._ctl_message(deadline) or {"error": "the session did not answer"}
            if "error" in msg:
                self.agent.send_error(call_id, "STATE", str(msg["error"])[:1000])
            else:
                self.agent.send_result(call_id, loaded=msg.get("loaded", [])[:10000])

    def _run(self, call_id, header, code):
        try:
            self._call(call_id, header, code)
        finally:
            self.agent.py_running.pop(call_id, None)
            self.state = None

    def _call(self, call_id, header, code):
        started = time.monotonic()
        probe = LimitProbe()
        restarted = self.ensure() and self.generation > 1
        budget = OutputBudget(int(header.get("max_output", 10 << 20)))
        timeout_s = int(header.get("timeout_ms") or DEFAULT_TIMEOUT_MS) / 1000.0
        state = {
            "limit": None,
            "interrupted_at": None,
            "buf": b"",
            "pending": {},
            "asked_at": {},
            "paused": 0.0,
            "asks": 0,
        }
        ask_wait_s = int(header.get("approval_timeout_ms") or 60000) / 1000.0 + ASK_MARGIN_S
        self.state = state
        self.agent.py_running[call_id] = self
        req = json.dumps({"code": code, "watch": header.get("watch")}).encode("utf-8")
        try:
            self.request(req)
        except OSError:
            pass
        sel = self.sel
        deadline = started + timeout_s
        reply = None
        lost = False

        def forward(fd, stream):
            while True:
                try:
                    data = os.read(fd, CHUNK)
                except BlockingIOError:
                    return True
                except OSError:
                    return False
                if not data:
                    return False
                allowed = budget.take(len(data))
                if allowed:
                    self.agent.send({"id": call_id, "ev": EV_OUT, "s": stream}, data[:allowed])
                if allowed < len(data) and state["limit"] is None:
                    state["limit"] = "OUTPUT"
                    self.interrupt()

        while reply is None:
            now = time.monotonic()
            for ask, give_up in list(state["pending"].items()):
                if now > give_up:
                    self.answer(ask, False, "no decision arrived from the host in time")
            # Time spent waiting for a person does not count against the call's timeout.
            deadline = started + timeout_s + state["paused"]
            if state["pending"]:
                deadline = max(deadline, now + 1)
            if now >= deadline and state["interrupted_at"] is None:
                state["limit"] = state["limit"] or "TIMEOUT"
                self.interrupt()
            if state["interrupted_at"] is not None and now - state["interrupted_at"] > KILL_GRACE_S:
                lost = True
                break
            wait = 0.25
            if state["interrupted_at"] is None:
                wait = max(0.0, min(wait, deadline - now))
            events = sel.select(timeout=wait)
            eof = False
            for key, _ in events:
                if key.data == "c":
                    while True:
                        try:
                            data = os.read(self.ctl_r, CHUNK)
                        except BlockingIOError:
                            break
                        if not data:
                            eof = True
                            break
                        state["buf"] += data
                    while reply is None and len(state["buf"]) >= 4:
                        buf = state["buf"]
                        n = struct.unpack(">I", buf[:4])[0]
                        if n > MAX_CTL_MESSAGE:
                            lost = True
                            break
                        if len(buf) < 4 + n:
                            break
                        state["buf"] = buf[4 + n :]
                        try:
                            msg = json.loads(buf[4 : 4 + n].decode("utf-8"))
                        except ValueError:
                            msg = None
                        if not isinstance(msg, dict):
                            continue
                        if "ask" in msg:
                            self.ask(call_id, msg, ask_wait_s)
                        else:
                            reply = msg
                    if lost:
                        break
                else:
                    if not forward(key.fd, key.data):
                        eof = True
            if lost or (eof and reply is None and self.proc.poll() is not None):
                lost = True
                break
        # Everything the worker printed before it replied is already in the pipes.
        forward(self.out_r, "o")
        forward(self.err_r, "e")
        duration_ms = int((time.monotonic() - started) * 1000)
        if lost:
            rc = self.proc.poll()
            self.close()
            reason = "interpreter did not stop after interrupt; restarted"
            hit = probe.hit()
            if rc is not None:
                reason = "interpreter exited with status %s" % rc
                if hit == "MEMORY":
                    reason = "interpreter was killed by the memory limit; the session restarts"
                state["limit"] = hit or state["limit"]
            self.agent.send_result(
                call_id,
                duration_ms=duration_ms,
                limit=state["limit"],
                truncated=budget.truncated,
                state_lost=True,
                restarted=restarted,
                error={"name": "SessionLost", "value": reason, "traceback": ""},
            )
            return
        rich = reply.pop("rich", None) or []
        for item in rich:
            try:
                data = base64.b64decode(item.get("b64", ""))
            except (ValueError, TypeError):
                continue
            self.agent.send({"id": call_id, "ev": EV_RICH, "mime": item.get("mime", "application/octet-stream")}, data)
        hit = probe.hit(check_disk=reply.get("error") is not None)
        reply.update(
            duration_ms=duration_ms,
            limit=hit if hit in ("MEMORY", "PIDS") else (state["limit"] or hit),
            truncated=budget.truncated,
            state_lost=False,
            restarted=restarted,
        )
        self.agent.send_result(call_id, **reply)


# ----------------------------------------------------------------------------------- files
# File ops run inline in the frame loop: they are short and the channel preserves the order of a
# write's chunks. Each handler lets its OSError out; fs_errors turns it into the reply's code.


def fs_errors(handler):
    """Wraps a file handler: a refused path or an OSError becomes an error reply with a stable
    code (FileOperationException.Reason on the host), and a half-done write is closed."""

    def wrapped(agent, call_id, h, payload):
        path = h.get("path", "")
        try:
            handler(agent, call_id, h, payload)
        except PathRefused as e:
            agent.cleanup_write(call_id)
            agent.send_error(call_id, "BAD_PATH", str(e))
        except FileNotFoundError:
            agent.cleanup_write(call_id)
            agent.send_error(call_id, "NOT_FOUND", "%r does not exist" % path)
        except IsADirectoryError:
            agent.cleanup_write(call_id)
            agent.send_error(call_id, "IS_A_DIRECTORY", "%r is a directory" % path)
        except NotADirectoryError:
            agent.cleanup_write(call_id)
            agent.send_error(call_id, "NOT_A_DIRECTORY", "a parent of %r is not a directory" % path)
        except FileExistsError:
            agent.cleanup_write(call_id)
            agent.send_error(call_id, "EXISTS", "%r already exists" % path)
        except OSError as e:
            agent.cleanup_write(call_id)
            if e.errno == 40:  # ELOOP from O_NOFOLLOW: the final component is a symlink
                agent.send_error(call_id, "BAD_PATH", "%r is a symlink; the file API does not follow it" % path)
            elif e.errno == 39:
                agent.send_error(call_id, "NOT_EMPTY", "%r is a non-empty directory: delete recursively" % path)
            elif e.errno == 28:
                agent.send_error(call_id, "NO_SPACE", "no space left writing %r (workspace size limit)" % path)
            elif e.errno == 30:
                agent.send_error(call_id, "READ_ONLY", READ_ONLY_MESSAGE % path)
            else:
                agent.send_error(call_id, "IO", "%s on %r: %s" % (type(e).__name__, path, e.strerror))

    wrapped.__name__ = handler.__name__
    return wrapped


@fs_errors
def op_fs_write(agent, call_id, h, payload):
    # Chunked: the first frame opens the file, every frame appends, the last one closes it.
    state = agent.writes.get(call_id)
    if state is None:
        real = resolve(h.get("path", ""))
        parent = os.path.dirname(real)
        if h.get("parents", True):
            os.makedirs(parent, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        flags |= os.O_APPEND if h.get("append") else os.O_TRUNC
        fd = open_beneath(real, flags, int(h.get("perm", 0o644)))
        state = {"fd": fd, "size": 0, "real": real}
        agent.writes[call_id] = state
    if payload:
        view = memoryview(payload)
        while view:
            n = os.write(state["fd"], view)
            view = view[n:]
        state["size"] += len(payload)
    if h.get("last", True):
        os.close(state["fd"])
        agent.writes.pop(call_id, None)
        agent.send_result(call_id, size=state["size"], path=rel_of(state["real"]))


@fs_errors
def op_fs_read(agent, call_id, h, payload):
    path = h.get("path", "")
    real = resolve(path, must_exist=True)
    fd = open_beneath(real, os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not statmod.S_ISREG(st.st_mode):
            agent.send_error(call_id, "NOT_A_FILE", "%r is not a regular file" % path)
            return
        limit = int(h.get("max_bytes", 64 << 20))
        if st.st_size > limit:
            agent.send_error(
                call_id,
                "TOO_LARGE",
                "%r is %d bytes, more than the read limit of %d bytes" % (path, st.st_size, limit),
            )
            return
        total = 0
        while total <= limit:
            data = os.read(fd, min(CHUNK * 4, limit + 1 - total))
            if not data:
                break
            total += len(data)
            agent.send({"id": call_id, "ev": EV_DATA}, data)
        agent.send_result(call_id, size=total)
    finally:
        os.close(fd)


@fs_errors
def op_fs_stat(agent, call_id, h, payload):
    real = resolve(h.get("path", ""), must_exist=True)
    agent.send_result(call_id, entry=stat_entry(real, rel_of(real)))


@fs_errors
def op_fs_list(agent, call_id, h, payload):
    path = h.get("path", "")
    real = resolve(path, must_exist=True)
    if not os.path.isdir(real):
        agent.send_error(call_id, "NOT_A_DIRECTORY", "%r is not a directory" % path)
        return
    entries = []
    limit = int(h.get("max_entries", 100_000))
    recursive = bool(h.get("recursive"))
    for dirpath, dirnames, filenames in os.walk(real):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            try:
                entries.append(stat_entry(full, rel_of(full)))
            except FileNotFoundError:
                continue
            if len(entries) >= limit:
                break
        if not recursive or len(entries) >= limit:
            break
    agent.send_result(call_id, entries=entries, truncated=len(entries) >= limit)


@fs_errors
def op_fs_delete(agent, call_id, h, payload):
    real = resolve(h.get("path", ""), must_exist=True)
    if real == os.path.realpath(WORKSPACE):
        agent.send_error(call_id, "BAD_PATH", "refusing to delete the workspace root")
        return
    if os.path.isdir(real) and not os.path.islink(real):
        if h.get("recursive"):
            import shutil

            shutil.rmtree(real)
        else:
            os.rmdir(real)
    else:
        os.unlink(real)
    agent.send_result(call_id)


@fs_errors
def op_fs_mkdir(agent, call_id, h, payload):
    real = resolve(h.get("path", ""))
    if h.get("parents", True):
        os.makedirs(real, exist_ok=True)
    else:
        os.mkdir(real)
    agent.send_result(call_id, path=rel_of(real))


# ----------------------------------------------------------------------------------- archives
# tar streams in and out of the sandbox: fork, snapshots, artifacts and uploads. Extraction trusts
# nothing in the archive: names, link targets, types and sizes are all checked, and nothing is
# ever written through a symlink.

ARCHIVE_ROOTS = (WORKSPACE, "/tmp")


# The bulk link: a socket the host listens on during a fork, in a directory mounted read-only
# (see the worker). The host lets only a connection that starts with the token it just sent in.
BULK_SOCKET = "/run/agentnest/bulk.sock"


def bulk_connect(token):
    import socket

    token = str(token)
    if not token.isalnum() or len(token) > 64:
        raise OSError("bad bulk token")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(120)
        s.connect(BULK_SOCKET)
        s.sendall(token.encode("ascii") + b"\n", socket.MSG_NOSIGNAL)
    except BaseException:
        s.close()
        raise
    return s


class FrameWriter:
    """A file object that sends what is written as data frames of about 1 MiB, or into a socket
    (the bulk link) when it has one."""

    def __init__(self, agent, call_id, cap, sock=None):
        self.agent = agent
        self.call_id, self.cap, self.buf, self.total = call_id, cap, bytearray(), 0
        self.sock = sock

    def write(self, b):
        self.total += len(b)
        if self.total > self.cap:
            raise ArchiveRefused("TOO_LARGE", "the archive is larger than the cap of %d bytes" % self.cap)
        self.buf += b
        if len(self.buf) >= (1 << 20):
            self.flush()
        return len(b)

    def flush(self):
        if self.buf and self.sock is not None:
            self.sock.sendall(self.buf, socket.MSG_NOSIGNAL)
            self.buf = bytearray()
        elif self.buf:
            self.agent.send({"id": self.call_id, "ev": EV_DATA}, bytes(self.buf))
            self.buf = bytearray()


class ArchiveRefused(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def archive_root(root):
    real = os.path.realpath(root or WORKSPACE)
    for r in ARCHIVE_ROOTS:
        if real == os.path.realpath(r):
            return real
    raise ArchiveRefused("BAD_PATH", "archive root %r is not one of %s" % (root, ", ".join(ARCHIVE_ROOTS)))


def tar_out(agent, call_id, h):
    import tarfile

    sock = None
    try:
        root = archive_root(h.get("root"))
        files_only = h.get("mode") == "files"
        cap = int(h.get("max_bytes", 1 << 30))
        rels = h.get("paths") or [""]
        skipped = []
        count = [0]
        sock = bulk_connect(h["bulk"]) if h.get("bulk") else None
        out = FrameWriter(agent, call_id, cap, sock)

        def keep(info):
            if info.isfile() or (not files_only and (info.isdir() or info.issym() or info.islnk())):
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                count[0] += 1
                return info
            skipped.append({"path": info.name, "reason": "not a regular file" if files_only else "special file"})
            return None

        with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for rel in rels:
                rel = str(rel).strip("/")
                if ".." in rel.split("/"):
                    raise ArchiveRefused("BAD_PATH", "%r leaves the archive root" % rel)
                full = os.path.join(root, rel) if rel else root
                if not os.path.lexists(full):
                    raise ArchiveRefused("NOT_FOUND", "%r does not exist" % rel)
                if files_only and not (os.path.isfile(full) and not os.path.islink(full)):
                    skipped.append({"path": rel, "reason": "not a regular file"})
                    continue
                if rel:
                    tar.add(full, arcname=rel, recursive=not files_only, filter=keep)
                else:
                    for name in sorted(os.listdir(root)):
                        tar.add(os.path.join(root, name), arcname=name, recursive=True, filter=keep)
        out.flush()
        if sock is not None:
            sock.close()
        agent.send_result(call_id, bytes=out.total, entries=count[0], skipped=skipped[:1000])
    except ArchiveRefused as e:
        agent.send_error(call_id, e.code, str(e))
    except OSError as e:
        agent.send_error(call_id, "IO", "%s: %s" % (type(e).__name__, e))
    finally:
        if sock is not None:
            sock.close()


def _safe_parent(dest, rel):
    """Creates the parent directories of rel under dest without following any symlink."""
    parts = rel.split("/")[:-1]
    cur = dest
    for part in parts:
        cur = os.path.join(cur, part)
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            os.mkdir(cur, 0o755)
            continue
        if not statmod.S_ISDIR(st.st_mode):
            raise ArchiveRefused("BAD_ENTRY", "%r: a parent is a symlink or a file, not a directory" % rel)
    return cur


def _inside(dest, path):
    path = os.path.normpath(path)
    return path == dest or path.startswith(dest.rstrip("/") + "/")


def extract(dest, stream, strict, cap_bytes, cap_entries):
    import tarfile
    import unicodedata

    seen = {}
    total = 0
    n = 0
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for m in tar:
            n += 1
            if n > cap_entries:
                raise ArchiveRefused("TOO_LARGE", "more than %d entries in the archive" % cap_entries)
            name = m.name
            if "\x00" in name or name.startswith("/") or not name.strip("/"):
                raise ArchiveRefused("BAD_ENTRY", "%r: absolute or empty name" % name)
            rel = os.path.normpath(name)
            if rel == ".." or rel.startswith("../") or ".." in name.split("/"):
                raise ArchiveRefused("BAD_ENTRY", "%r leaves the destination (path traversal)" % name)
            if rel == ".":
                continue
            key = unicodedata.normalize("NFC", rel).casefold() if strict else rel
            if key in seen and seen[key] != rel:
                raise ArchiveRefused(
                    "BAD_ENTRY", "%r and %r differ only in Unicode normalisation or case" % (seen[key], rel)
                )
            seen[key] = rel
            target = os.path.join(dest, rel)
            if m.isdev() or m.isfifo() or not (m.isfile() or m.isdir() or m.issym() or m.islnk()):
                raise ArchiveRefused("BAD_ENTRY", "%r is a device, fifo or other special file" % name)
            parent = _safe_parent(dest, rel)
            if m.issym():
                link = m.linkname
                resolved = os.path.normpath(os.path.join(parent, link)) if not link.startswith("/") else link
                if strict and not _inside(dest, resolved):
                    raise ArchiveRefused(
                        "BAD_ENTRY", "symlink %r points outside the destination (%r)" % (name, link)
                    )
            if m.islnk():
                src = os.path.normpath(os.path.join(dest, m.linkname))
                if (
                    m.linkname.startswith("/")
                    or not _inside(dest, src)
                    or os.path.normpath(m.linkname) not in seen.values()
                ):
                    raise ArchiveRefused(
                        "BAD_ENTRY", "hardlink %r points outside the archive (%r)" % (name, m.linkname)
                    )
            total += max(0, m.size)
            if total > cap_bytes:
                raise ArchiveRefused("TOO_LARGE", "the archive unpacks to more than %d bytes" % cap_bytes)
            try:
                st = os.lstat(target)
                if statmod.S_ISDIR(st.st_mode) and not m.isdir():
                    raise ArchiveRefused("BAD_ENTRY", "%r would replace a directory" % name)
                if not statmod.S_ISDIR(st.st_mode):
                    os.unlink(target)
            except FileNotFoundError:
                pass
            mode = m.mode & (0o755 if strict else 0o777) & ~0o7000
            if m.isdir():
                if not os.path.isdir(target):
                    os.mkdir(target, 0o755)
                os.chmod(target, mode | 0o700)
            elif m.issym():
                os.symlink(m.linkname, target)
            elif m.islnk():
                os.link(os.path.join(dest, os.path.normpath(m.linkname)), target, follow_symlinks=False)
            else:
                src = tar.extractfile(m)
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode | 0o600)
                try:
                    while True:
                        chunk = src.read(1 << 20)
                        if not chunk:
                            break
                        view = memoryview(chunk)
                        while view:
                            k = os.write(fd, view)
                            view = view[k:]
                finally:
                    os.close(fd)
    return n, total


def op_tar_in(agent, call_id, h, payload):
    # Runs inline: its frames must reach the extracting thread in order.
    state = agent.tar_ins.get(call_id)
    if state is None:
        try:
            dest = archive_root(h.get("root"))
            sub = str(h.get("path") or "").strip("/")
            if ".." in sub.split("/"):
                raise ArchiveRefused("BAD_PATH", "%r leaves the archive root" % sub)
            if sub:
                _safe_parent(dest, sub + "/x")
                dest = os.path.join(dest, sub)
        except ArchiveRefused as e:
            agent.tar_ins[call_id] = {"refused": True}
            agent.send_error(call_id, e.code, str(e))
            if h.get("last", True):
                agent.tar_ins.pop(call_id, None)
            return
        bulk = h.get("bulk")
        if bulk:
            # The archive comes over the bulk link, not in frames: nothing more arrives here.
            r = w = None
            state = {"w": None, "refused": False}
        else:
            r, w = os.pipe()
            state = {"w": w, "refused": False}
            agent.tar_ins[call_id] = state

        def run():
            try:
                reader = (
                    bulk_connect(bulk).makefile("rb", buffering=1 << 20)
                    if bulk
                    else os.fdopen(r, "rb", buffering=1 << 20)
                )
            except OSError as e:
                agent.send_error(call_id, "IO", "cannot reach the bulk link: %s" % e)
                return
            try:
                n, total = extract(
                    dest,
                    reader,
                    bool(h.get("strict", True)),
                    int(h.get("max_bytes", 1 << 30)),
                    int(h.get("max_entries", 100_000)),
                )
                state["result"] = ("ok", n, total)
            except ArchiveRefused as e:
                state["result"] = ("err", e.code, str(e))
            except OSError as e:
                if e.errno == 30:
                    state["result"] = ("err", "READ_ONLY", READ_ONLY_MESSAGE % dest)
                else:
                    state["result"] = ("err", "BAD_ARCHIVE", "%s: %s" % (type(e).__name__, e))
            except Exception as e:  # noqa: BLE001 - a corrupt archive must become an error reply
                state["result"] = ("err", "BAD_ARCHIVE", "%s: %s" % (type(e).__name__, e))
            finally:
                # Drain so the frame loop never blocks on a full pipe after a refusal.
                try:
                    while reader.read(1 << 20):
                        pass
                except OSError:
                    pass
                reader.close()
                res = state["result"]
                if res[0] == "ok":
                    agent.send_result(call_id, entries=res[1], bytes=res[2])
                else:
                    agent.send_error(call_id, res[1], res[2])

        t = threading.Thread(target=run, daemon=True, name="tar-in")
        state["thread"] = t
        t.start()
        if bulk:
            return
    if state.get("refused"):
        if h.get("last", True):
            agent.tar_ins.pop(call_id, None)
        return
    if payload:
        view = memoryview(payload)
        try:
            while view:
                k = os.write(state["w"], view)
                view = view[k:]
        except OSError:
            pass
    if h.get("last", True):
        os.close(state["w"])
        agent.tar_ins.pop(call_id, None)


# ----------------------------------------------------------------------------------- egress

TUNNEL_WINDOW = 1 << 20
TUNNEL_ACK_EVERY = 64 * 1024


class Tunnel:
    """One TCP connection from sandbox code to the local proxy port, carried over the channel to
    the host's egress proxy. Credit-based flow control in both directions keeps every buffer
    bounded: at most TUNNEL_WINDOW bytes are in flight each way."""

    def __init__(self, agent, tid, sock, window=TUNNEL_WINDOW):
        import collections

        self.agent = agent
        self.tid = tid
        self.sock = sock
        self.cond = threading.Condition()
        self.credit = window  # bytes we may still send to the host
        self.outq = collections.deque()  # host -> sandbox code
        self.out_eof = False
        self.close_after_drain = False
        self.closed = False

    def start(self):
        threading.Thread(target=self._up, daemon=True, name="tunnel-up").start()
        threading.Thread(target=self._down, daemon=True, name="tunnel-down").start()

    def _up(self):
        try:
            while True:
                with self.cond:
                    while self.credit <= 0 and not self.closed:
                        self.cond.wait()
                    if self.closed:
                        return
                    room = self.credit
                data = self.sock.recv(min(CHUNK, room))
                if not data:
                    break
                with self.cond:
                    self.credit -= len(data)
                self.agent.send({"ev": EV_TCP_DATA, "tid": self.tid}, data)
        except OSError:
            pass
        self.agent.send({"ev": EV_TCP_EOF, "tid": self.tid})

    def _down(self):
        unacked = 0
        try:
            while True:
                with self.cond:
                    while not self.outq and not self.out_eof and not self.closed:
                        self.cond.wait()
                    if self.closed or (not self.outq and self.out_eof):
                        break
                    data = self.outq.popleft()
                # MSG_NOSIGNAL: SIGPIPE is at its default here (for the commands the agent
                # starts), and a peer that hung up must end this tunnel, never the agent.
                self.sock.sendall(data, socket.MSG_NOSIGNAL)
                # Credit back in batches: the host's window is far larger than TUNNEL_ACK_EVERY, so
                # it never waits for one, and a small request costs no frame of its own.
                unacked += len(data)
                if unacked >= TUNNEL_ACK_EVERY:
                    self.agent.send({"ev": EV_TCP_ACK, "tid": self.tid, "n": unacked})
                    unacked = 0
            if self.out_eof and not self.closed:
                self.sock.shutdown(socket.SHUT_WR)
            if self.close_after_drain:
                self.close()
        except OSError:
            self.close(notify=True)

    def from_host(self, data):
        with self.cond:
            self.outq.append(data)
            self.cond.notify_all()

    def host_eof(self):
        with self.cond:
            self.out_eof = True
            self.cond.notify_all()

    def ack(self, n):
        with self.cond:
            self.credit += n
            self.cond.notify_all()

    def close(self, notify=False):
        with self.cond:
            if self.closed:
                return
            self.closed = True
            self.cond.notify_all()
        try:
            self.sock.close()
        except OSError:
            pass
        with self.agent.tunnels_lock:
            self.agent.tunnels.pop(self.tid, None)
        if notify:
            self.agent.send({"ev": EV_TCP_CLOSE, "tid": self.tid})


# ----------------------------------------------------------------------------------- the agent

# The host decides expiry and destroys the sandbox on time; the agent's own timer is only the
# fallback for a host that is gone, so it fires a little later and never races the host.
EXPIRY_FALLBACK_S = 2.0


class Agent:
    """All of the agent's mutable state, and what the handlers need to answer: one instance per
    process (main), or per test."""

    def __init__(self, channel, worker_source=None, pool_size=8, timer=None):
        self.channel = channel
        self.worker_source = worker_source
        self.secret_env = {}
        # One thread for every deadline, started up front (see Timer).
        self.timer = timer if timer is not None else Timer()
        self.pool = Pool(pool_size, self.guard)
        self.running = {}  # call id -> ExecCall, for signal
        self.py_running = {}  # call id -> Session running it, for signal and answer
        self.sessions = {}  # name -> Session
        self.sessions_lock = threading.Lock()
        self.loads = {}  # call id -> state bytes of a chunked py_load so far
        self.load_headers = {}  # call id -> first header of a chunked py_load
        self.writes = {}  # call id -> open file of a chunked fs_write
        self.tar_ins = {}  # call id -> extraction of a chunked tar_in
        self.tunnels = {}  # tunnel id -> Tunnel
        self.tunnels_lock = threading.Lock()
        self.egress_listener = None
        self.expiry = 0.0
        # On the agent link, a second host may talk at once over the container's stdin/stdout
        # (another process attached: the CLI's upload while the creator holds the sandbox). Its
        # calls and tunnels are answered there; everything else goes to the link while it is up.
        self.stdio = getattr(channel, "stdio_side", None)
        self.stdio_ids = {}  # call id / ("tid", tunnel id) -> None, insertion-ordered
        self.route_lock = threading.Lock()
        self.dispatch_lock = threading.Lock()

    # ---- replies

    def send(self, header, payload=b""):
        ch = self.channel
        if self.stdio is not None and (not ch.up or self.for_stdio(header)):
            ch = self.stdio
        ch.send(header, payload)

    MAX_STDIO_IDS = 65536

    def note_stdio(self, header):
        """Remembers a call or tunnel that a host on stdin opened while the link is up."""
        if not self.channel.up:
            return
        cid, tid = header.get("id"), header.get("tid")
        key = cid if isinstance(cid, int) and header.get("op") not in NO_CALL_OPS else None
        if key is None and isinstance(tid, int):
            key = ("tid", tid)
        if key is None:
            return
        with self.route_lock:
            self.stdio_ids[key] = None
            if len(self.stdio_ids) > self.MAX_STDIO_IDS:
                # Bounded: the oldest entry goes (a call that never ended, most likely).
                del self.stdio_ids[next(iter(self.stdio_ids))]

    def for_stdio(self, header):
        """Whether a frame answers a call or tunnel of the host on stdin; a call's final frame and
        a tunnel's close end its entry."""
        if not self.stdio_ids:
            return False
        cid, tid = header.get("id"), header.get("tid")
        ev = header.get("ev")
        with self.route_lock:
            if cid is not None and cid in self.stdio_ids:
                if ev in (EV_RESULT, EV_ERROR):
                    del self.stdio_ids[cid]
                return True
            if tid is not None and ("tid", tid) in self.stdio_ids:
                if ev == EV_TCP_CLOSE:
                    del self.stdio_ids[("tid", tid)]
                return True
        return False

    def send_result(self, call_id, **fields):
        fields["id"] = call_id
        fields["ev"] = EV_RESULT
        self.send(fields)

    def send_error(self, call_id, code, message):
        self.send({"id": call_id, "ev": EV_ERROR, "code": code, "message": message})

    # ---- calls

    def spawn(self, call_id, fn):
        """Runs fn on a call thread; an exception in it becomes call_id's error reply."""
        self.pool.submit(call_id, fn)

    def guard(self, call_id, fn):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - an agent bug must become an error reply, not a hang
            self.send_error(call_id, "AGENT", "%s: %s" % (type(e).__name__, e))

    def handle(self, h, payload):
        """Dispatches one frame of the host through OPS."""
        op = h.get("op")
        if isinstance(op, str) and op in NO_CALL_OPS:
            OPS[op](self, None, h, payload)
            return
        call_id = h.get("id")
        if not isinstance(call_id, int):
            return
        handler = OPS.get(op) if isinstance(op, str) else None
        if handler is None:
            self.send_error(call_id, "UNKNOWN_OP", "unknown operation %r" % op)
            return
        handler(self, call_id, h, payload)

    # ---- state

    def child_env(self):
        env = dict(os.environ)
        env.update(self.secret_env)
        return env

    def receive_init(self):
        """The host's first frame, before the agent answers anything: the secret variables."""
        try:
            self.secret_env.update(parse_init(self.channel.read_frame()))
        except InitRefused as e:
            os._exit(e.status)
        self.hand_env_to_prewarmed()

    def prewarm(self):
        """Starts the default session's interpreter while the agent waits for its first frame (a
        pooled sandbox waits there until its user is known): it has run nothing, and gets the
        user's variables before any code (hand_env_to_prewarmed). It is warmed up (Session.warm_up);
        one that does not answer that is closed, so that a late answer is never taken for the
        first call's, which then starts another."""
        s = self.session("default")
        with s.lock:
            try:
                s.ensure()
                if not s.warm_up():
                    s.close()
            except (OSError, ValueError):
                s.close()
        # Learns which cgroup counter files exist now, not in the user's first call.
        LimitProbe()

    def default_session_waiting(self):
        """Whether the prewarmed interpreter is still there to take the first call. It is not
        asked: under gVisor that wait4 took 1-2 ms of the hand-out (an instrumented agent, an
        idle sandbox woken by its first frame). One that died meanwhile is started again by that
        call (Session.ensure)."""
        s = self.sessions.get("default")
        return s is not None and s.proc is not None

    def hand_env_to_prewarmed(self):
        """The user's variables for the interpreter started before they were known: they go in
        front of its first request (Session.request), so that the hand-out wakes no second
        process; no code runs there before them."""
        s = self.sessions.get("default")
        if s is None or not self.secret_env:
            return
        with s.lock:
            if s.proc is None:
                return
            if any(k.startswith(STARTUP_ENV_PREFIXES) or k in STARTUP_ENV for k in self.secret_env):
                # Read only when an interpreter starts: a new one, started with them, is needed.
                s.close()
                return
            s.pending_env = dict(self.secret_env)

    def session(self, name):
        with self.sessions_lock:
            s = self.sessions.get(name)
            if s is None:
                s = Session(self, name)
                self.sessions[name] = s
            return s

    def close_sessions(self):
        for s in list(self.sessions.values()):
            s.close()

    def cleanup_write(self, call_id):
        state = self.writes.pop(call_id, None)
        if state:
            try:
                os.close(state["fd"])
            except OSError:
                pass

    def set_expiry(self, expires_at):
        """The sandbox's own end of life: when the host that owns it is gone, nobody else will
        stop it, so after expiry the agent ends itself and with it the container."""
        self.expiry = expires_at
        self.timer.schedule(max(0.0, expires_at + EXPIRY_FALLBACK_S - time.time()), self.check_expiry)

    def check_expiry(self):
        if self.expiry and time.time() >= self.expiry + EXPIRY_FALLBACK_S - 0.05:
            try:
                self.send({"ev": EV_EXPIRED, "expires_at": self.expiry})
            finally:
                self.close_sessions()
                os._exit(0)

    def egress_listen(self, port):
        # A sandbox restored from a checkpoint already listens (its parent started it): keep that.
        if self.egress_listener is not None:
            return self.egress_listener.getsockname()[1]
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", port))
        srv.listen(128)

        def accept_loop():
            tid = 0
            while True:
                try:
                    conn, _ = srv.accept()
                except OSError:
                    time.sleep(0.05)
                    continue
                tid += 1
                t = Tunnel(self, tid, conn)
                with self.tunnels_lock:
                    self.tunnels[tid] = t
                self.send({"ev": EV_TCP_OPEN, "tid": tid})
                try:
                    t.start()
                except RuntimeError:  # out of pids
                    t.close(notify=True)

        threading.Thread(target=accept_loop, daemon=True, name="egress-accept").start()
        self.egress_listener = srv
        return srv.getsockname()[1]

    def tunnel(self, h):
        with self.tunnels_lock:
            return self.tunnels.get(h.get("tid"))

    def serve(self):
        """The frame loop: reads the host's frames until shutdown. On the agent link, the link
        has a reader thread of its own and this one reads the container's stdin."""
        stdio = self.stdio
        if stdio is not None:
            threading.Thread(target=self.serve_link, daemon=True, name="link").start()
        channel = stdio if stdio is not None else self.channel
        while True:
            frame = channel.read_frame()
            if frame is None:
                # Host detached. Stay up: the host may reattach (Sandbox.connect); the container
                # runtime keeps our stdin open while the container lives.
                time.sleep(0.2)
                continue
            if stdio is not None:
                self.note_stdio(frame[0])
            with self.dispatch_lock:
                self.dispatch(*frame)

    def serve_link(self):
        """The link's frames until it ends; from then on the stdio side carries everything."""
        while True:
            frame = self.channel.read_frame()
            if frame is None:
                self.channel.end_link()
                return
            with self.dispatch_lock:
                self.dispatch(*frame)

    def dispatch(self, header, payload):
        """handle(), with a handler's failure (a bad argument, an agent bug) as the error reply."""
        try:
            self.handle(header, payload)
        except Exception as e:  # noqa: BLE001
            self.send_error(header.get("id"), "AGENT", "%s: %s" % (type(e).__name__, e))


# ----------------------------------------------------------------------------------- handlers
# Every handler is handler(agent, call_id, header, payload). Calls that may take long run on the
# call pool (agent.spawn); the rest answer inline, in the frame loop, in the order they arrive.


def session_name(h):
    return str(h.get("session") or "default")


def op_init(agent, call_id, h, payload):
    # The secrets arrive once, as the very first frame (Agent.receive_init); never later.
    agent.send_error(call_id, "UNKNOWN_OP", "unknown operation 'init': it is only the first frame")


def op_shutdown(agent, call_id, h, payload):
    agent.close_sessions()
    os._exit(0)


def op_hello(agent, call_id, h, payload):
    agent.send_result(
        call_id,
        version=PROTOCOL_VERSION,
        pid=os.getpid(),
        uid=os.getuid(),
        python=sys.version.split()[0],
        workspace=WORKSPACE,
    )


def op_ping(agent, call_id, h, payload):
    agent.send_result(call_id)


def op_set_ttl(agent, call_id, h, payload):
    expires_at = float(h.get("expires_at", 0))
    if h.get("extend_only") is True and agent.expiry > expires_at:
        # A host that reattached may not know of an extension made elsewhere: keep it.
        expires_at = agent.expiry
    agent.set_expiry(expires_at)
    agent.send_result(call_id, expires_at=agent.expiry)


def op_exec(agent, call_id, h, payload):
    call = ExecCall(agent, call_id, h, payload)
    # A terminal is opened here, in the frame loop: keys the host sends right after (pty_in) find
    # the call and wait in its queue instead of being dropped while the program starts.
    call.open_pty()
    agent.spawn(call_id, call.run)


def op_signal(agent, call_id, h, payload):
    limit = h.get("limit") or "CANCELLED"
    target = agent.running.get(h.get("target"))
    py = agent.py_running.get(h.get("target"))
    if target:
        target.stop(limit)
    elif py:
        py.interrupt(limit)
    agent.send_result(call_id, found=bool(target or py))


def op_pty_in(agent, call_id, h, payload):
    target = agent.running.get(h.get("target"))
    if target is not None and target.pty is not None and payload:
        target.pty.type(payload)


def op_pty_resize(agent, call_id, h, payload):
    target = agent.running.get(h.get("target"))
    size = pty_size(h)
    if target is not None and target.pty is not None and size is not None:
        target.pty.resize(*size)


def op_py(agent, call_id, h, payload):
    name = session_name(h)
    code = payload.decode("utf-8", "replace")
    agent.spawn(call_id, lambda: agent.session(name).run(call_id, h, code))


def op_answer(agent, call_id, h, payload):
    py = agent.py_running.get(h.get("call"))
    ok = bool(py) and py.answer(h.get("ask"), h.get("allowed") is True, h.get("reason", ""))
    agent.send_result(call_id, delivered=bool(ok))


def op_py_dump(agent, call_id, h, payload):
    name = session_name(h)
    bulk = h.get("bulk")
    agent.spawn(call_id, lambda: agent.session(name).dump(call_id, bulk))


def op_py_warm(agent, call_id, h, payload):
    name = session_name(h)
    agent.spawn(call_id, lambda: agent.session(name).warm(call_id))


def op_py_load_bulk(agent, call_id, h, payload):
    name = session_name(h)
    agent.spawn(call_id, lambda: agent.session(name).load_bulk(call_id, h))


def op_py_load(agent, call_id, h, payload):
    # Chunked like fs_write: the state arrives in several frames, the last one says so.
    buf = agent.loads.setdefault(call_id, bytearray())
    if len(buf) + len(payload) > MAX_STATE_BYTES:
        agent.loads.pop(call_id, None)
        agent.send_error(call_id, "TOO_LARGE", "session state larger than %d bytes" % MAX_STATE_BYTES)
        return
    buf += payload
    if h.get("last", True):
        data = agent.loads.pop(call_id)
        first = agent.load_headers.pop(call_id, h)
        name = session_name(first)
        agent.spawn(call_id, lambda: agent.session(name).load(call_id, first, data))
    elif call_id not in agent.load_headers:
        agent.load_headers[call_id] = h


def op_py_sessions(agent, call_id, h, payload):
    # Sessions with a live interpreter (fork and snapshots save each one).
    with agent.sessions_lock:
        names = [n for n, s in agent.sessions.items() if s.proc is not None and s.proc.poll() is None]
    agent.send_result(call_id, sessions=names[:256])


def op_py_close(agent, call_id, h, payload):
    with agent.sessions_lock:
        s = agent.sessions.pop(session_name(h), None)
    if s:
        s.close()
    agent.send_result(call_id)


def op_tar_out(agent, call_id, h, payload):
    agent.spawn(call_id, lambda: tar_out(agent, call_id, h))


SYSTEM_CA_BUNDLES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt")
CA_BUNDLE = "/tmp/.agentnest/ca-bundle.pem"
# Java reads no PEM bundle: the host sends a PKCS12 trust store too (its default CAs and the
# sandbox's); JAVA_TOOL_OPTIONS (set by the host) points every JVM here.
CA_TRUST_STORE = "/tmp/.agentnest/ca-trust.p12"
MAX_CA_PEM = 64 * 1024
MAX_TRUST_STORE = 1 << 20


def write_public_file(path, data):
    """Replaces path atomically with data, readable by every user (it holds certificates only)."""
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def write_ca_bundle(pem):
    # The proxy's CA for hosts with credential rules, after the system's CAs so every other
    # host still verifies; SSL_CERT_FILE and friends point here (the host set them).
    if len(pem) > MAX_CA_PEM or not pem.startswith(b"-----BEGIN CERTIFICATE-----"):
        raise OSError("the CA certificate is not PEM")
    system = b""
    for path in SYSTEM_CA_BUNDLES:
        try:
            with open(path, "rb") as f:
                system = f.read()
            break
        except OSError:
            continue
    if system and not system.endswith(b"\n"):
        system += b"\n"
    write_public_file(CA_BUNDLE, system + pem)


def is_pkcs12(der):
    """Whether der is one DER SEQUENCE filling it exactly and starting with version 3 (a PFX)."""
    if len(der) < 8 or der[0] != 0x30:
        return False
    if der[1] < 0x80:
        length, start = der[1], 2
    elif 0x81 <= der[1] <= 0x83:
        n = der[1] & 0x7F
        length, start = int.from_bytes(der[2 : 2 + n], "big"), 2 + n
    else:
        return False
    return start + length == len(der) and der[start : start + 3] == b"\x02\x01\x03"


def write_trust_store(p12):
    if not 0 < len(p12) <= MAX_TRUST_STORE or not is_pkcs12(p12):
        raise OSError("the Java trust store is not PKCS12 of at most %d bytes" % MAX_TRUST_STORE)
    write_public_file(CA_TRUST_STORE, p12)


def split_trust_payload(h, payload):
    """The payload is the CA's PEM, then (an older host sends none) a PKCS12 trust store of
    h["trust_store"] bytes."""
    n = h.get("trust_store", 0)
    if type(n) is not int or not 0 <= n <= len(payload):
        raise ValueError("trust_store is not the length of the payload's tail")
    return payload[: len(payload) - n], payload[len(payload) - n :]


def op_egress_listen(agent, call_id, h, payload):
    pem, p12 = split_trust_payload(h, bytes(payload))
    try:
        if pem:
            write_ca_bundle(pem)
        if p12:
            write_trust_store(p12)
    except OSError as e:
        agent.send_error(call_id, "EGRESS", "cannot install the sandbox's CA: %s" % e)
        return
    try:
        port = agent.egress_listen(int(h.get("port", 3128)))
        agent.send_result(call_id, port=port)
    except OSError as e:
        agent.send_error(call_id, "EGRESS", "cannot listen on 127.0.0.1:%s: %s" % (h.get("port"), e))


# Tunnel frames belong to no call: they name a tunnel id, and an unknown one is dropped.


def op_port_open(agent, call_id, h, payload):
    """The host opened a connection to an exposed port: connect to it here and carry it as tunnel
    tid. The host numbers these tunnels below zero, so they never meet the egress tunnels' ids."""
    tid = h.get("tid")
    port = h.get("port")
    window = h.get("window", TUNNEL_WINDOW)
    if not isinstance(tid, int) or tid >= 0:
        return
    if not isinstance(window, int) or not 0 < window <= TUNNEL_WINDOW:
        window = TUNNEL_WINDOW
    if not isinstance(port, int) or not 0 < port < 65536:
        agent.send({"ev": EV_TCP_CLOSE, "tid": tid})
        return
    with agent.tunnels_lock:
        if tid in agent.tunnels:
            return
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # The host's window for this connection: sending past it would make the host drop it.
        t = Tunnel(agent, tid, sock, window)
        # Registered before the connect: the host's first bytes may arrive meanwhile and queue.
        agent.tunnels[tid] = t

    def connect():
        try:
            sock.settimeout(10)
            sock.connect(("127.0.0.1", port))
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            t.close(notify=True)
            return
        t.start()

    try:
        threading.Thread(target=connect, daemon=True, name="port-open").start()
    except RuntimeError:  # out of pids
        t.close(notify=True)


def op_tcp_data(agent, call_id, h, payload):
    t = agent.tunnel(h)
    if t is not None:
        t.from_host(payload)


def op_tcp_eof(agent, call_id, h, payload):
    t = agent.tunnel(h)
    if t is not None:
        t.host_eof()


def op_tcp_ack(agent, call_id, h, payload):
    t = agent.tunnel(h)
    if t is not None:
        t.ack(int(h.get("n", 0)))


def op_tcp_close(agent, call_id, h, payload):
    t = agent.tunnel(h)
    if t is not None:
        # The host is done: deliver what is queued, then close.
        with t.cond:
            t.close_after_drain = True
        t.host_eof()


# The dispatch table: every op the host may send, and its handler. io.agentnest.internal.Ops and
# the table in docs/architecture.md list the same names (ProtocolOpsAgreementTest checks).
OPS = {
    "init": op_init,
    "shutdown": op_shutdown,
    "hello": op_hello,
    "ping": op_ping,
    "set_ttl": op_set_ttl,
    "exec": op_exec,
    "signal": op_signal,
    "pty_in": op_pty_in,
    "pty_resize": op_pty_resize,
    "py": op_py,
    "answer": op_answer,
    "py_close": op_py_close,
    "py_dump": op_py_dump,
    "py_warm": op_py_warm,
    "py_load": op_py_load,
    "py_load_bulk": op_py_load_bulk,
    "py_sessions": op_py_sessions,
    "fs_read": op_fs_read,
    "fs_write": op_fs_write,
    "fs_stat": op_fs_stat,
    "fs_list": op_fs_list,
    "fs_delete": op_fs_delete,
    "fs_mkdir": op_fs_mkdir,
    "tar_out": op_tar_out,
    "tar_in": op_tar_in,
    "egress_listen": op_egress_listen,
    "port_open": op_port_open,
    "tcp_data": op_tcp_data,
    "tcp_eof": op_tcp_eof,
    "tcp_ack": op_tcp_ack,
    "tcp_close": op_tcp_close,
}

# Ops that need no call id: the tunnel's frames (and shutdown, which needs none either).
NO_CALL_OPS = frozenset(
    {"port_open", "tcp_data", "tcp_eof", "tcp_ack", "tcp_close", "shutdown", "pty_in", "pty_resize"}
)


def protocol():
    """The names this agent speaks: the ops it serves and the frame types it sends."""
    events = sorted(v for k, v in globals().items() if k.startswith("EV_") and isinstance(v, str))
    return {"ops": sorted(OPS), "events": events}


def main():
    worker_source = globals().get("AGENTNEST_WORKER_SOURCE")  # injected by the bootstrap
    agent = Agent(Channel.open_private(), worker_source)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    agent.prewarm()
    agent.receive_init()
    agent.send({"ev": EV_READY, "version": PROTOCOL_VERSION, "pid": os.getpid()})

    if not agent.default_session_waiting():
        # The first Python call should not pay for starting an interpreter. Only when the waiting
        # one is gone (replaced for the user's start-up variables): a thread start costs the
        # hand-out several milliseconds under gVisor, for nothing when one waits.
        threading.Thread(target=agent.prewarm, daemon=True, name="warm").start()
    agent.serve()


if __name__ == "__main__":
    if sys.argv[1:] == ["--protocol"]:
        print(json.dumps(protocol()))
    else:
        main()
