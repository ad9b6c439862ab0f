# pid 1 of a sandbox pod. Holds the pod open, reaps orphans, ends on SIGTERM/SIGINT, and starts
# every agent as its own child: a process started with an exec does not get the pod's seccomp
# filter on every runtime (gVisor applies it to the container's first process and its
# descendants only), a child of pid 1 always does. A connector (connector.py, run by the exec)
# passes the exec's stdio over a socket; the agent gets them as its own and the connector waits
# for the agent's exit status.
import array, json, os, resource, signal, socket, select, struct, sys, ctypes

# Sandbox code runs as the same uid: not dumpable, or /proc/1/mem makes pid 1 its puppet (the escape
# suite's privilege.agent-memory probe). Stdio to /dev/null, or /proc/1/fd/1 writes into the node's
# container log. If the kernel refuses either, the pod fails instead of running weakened.
if ctypes.CDLL(None).prctl(4, 0, 0, 0, 0) != 0:
    os._exit(70)
# Limits set before any sandbox code runs and inherited by every agent; no process of the pod may
# raise them (no CAP_SYS_RESOURCE). --nofile: the open files per process (the pod spec has no
# ulimits), never above the hard limit the runtime gave. --nproc: a process limit the node cannot
# hold this pod to (gVisor's tasks are not node tasks; its kernel counts RLIMIT_NPROC per user,
# threads too). An argument that does not parse or a limit refused: the pod fails.
RLIMITS = {'--nofile': resource.RLIMIT_NOFILE, '--nproc': resource.RLIMIT_NPROC}
args = sys.argv[1:]
if len(args) % 2:
    os._exit(71)
for flag, value in zip(args[0::2], args[1::2]):
    try:
        which = RLIMITS[flag]
        lim = int(value)
        hard = resource.getrlimit(which)[1]
        if flag == '--nofile' and hard != resource.RLIM_INFINITY:
            lim = min(lim, hard)
        resource.setrlimit(which, (lim, lim))
        if resource.getrlimit(which) != (lim, lim):
            raise OSError(flag + ' did not take')
    except (KeyError, ValueError, OSError):
        os._exit(71)
    if flag == '--nproc':
        # Tells the agents (started with this environment) that this limit is the pod's pids limit.
        os.environ['AGENTNEST_NPROC_LIMIT'] = str(lim)
n = os.open('/dev/null', os.O_RDWR)
for f in (0, 1, 2):
    os.dup2(n, f)
os.close(n)

# An abstract name: bound before any sandbox code runs, it cannot be taken over or replaced.
L = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
L.bind('\0agentnest-holder')
L.listen(8)
r, w = os.pipe()
os.set_blocking(r, False)
os.set_blocking(w, False)
signal.set_wakeup_fd(w)
stop = []
signal.signal(signal.SIGTERM, lambda s, f: stop.append(s))
signal.signal(signal.SIGINT, lambda s, f: stop.append(s))
signal.signal(signal.SIGCHLD, lambda s, f: None)
waiting = {}


def spawn():
    c, _ = L.accept()
    fds = array.array('i')
    try:
        c.settimeout(5)
        msg, anc, _, _ = c.recvmsg(16384, socket.CMSG_SPACE(3 * fds.itemsize))
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
        argv = json.loads(msg.decode())
        if len(fds) != 3 or not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError('a connector sends three descriptors and a command')
        pid = os.fork()
        if pid == 0:
            try:
                for i, f in enumerate(fds):
                    os.dup2(f, i)
                for s in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
                    signal.signal(s, signal.SIG_DFL)
                signal.set_wakeup_fd(-1)
                os.closerange(3, 1 << 16)
                os.execvp(argv[0], argv)
            finally:
                os._exit(127)
        waiting[pid] = c
        c = None
    except (OSError, ValueError):
        pass
    finally:
        for f in fds:
            os.close(f)
        if c is not None:
            c.close()


def reap():
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        c = waiting.pop(pid, None)
        if c is not None:
            try:
                code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
                c.sendall(struct.pack('!i', code))
            except OSError:
                pass
            c.close()


# poll, not select: under gVisor with our seccomp profile select(2) fails with EPERM.
P = select.poll()
P.register(L, select.POLLIN)
P.register(r, select.POLLIN)
while not stop:
    try:
        ready = {fd for fd, _ in P.poll()}
    except InterruptedError:
        ready = set()
    if r in ready:
        try:
            os.read(r, 512)
        except BlockingIOError:
            pass
    reap()
    if L.fileno() in ready:
        spawn()
os._exit(0)
