# AgentNest Python session worker: one long-lived interpreter. Standard library only.
# Requests arrive on stdin (u32 BE length + JSON {"code": ...}); replies go to the control fd
# named by AGENTNEST_CTL_FD. stdout/stderr are pipes the agent forwards as the call's output.
import ast
import base64
import json
import linecache
import os
import shlex
import signal
import stat
import struct
import sys
import threading
import traceback
import types

_ctl = int(os.environ.pop("AGENTNEST_CTL_FD"))
os.environ.pop("AGENTNEST_SESSION", None)
_stdin = sys.stdin.buffer
sys.stdin = open(os.devnull)
MAX_REPR = 256 * 1024
MAX_RICH = 8 << 20
_busy = False
_cell = 0
# What the host wants to hear about (from each request); see install_guard.
_watch = {
    "events": frozenset(),
    "outside": frozenset(),
    "replace": frozenset(),
    "symbols": frozenset(),
    "writable": ("/workspace", "/tmp"),
}
# Commands longer than this are cut; the host is told, and treats a cut command strictly.
MAX_TARGET = 1000


def _on_sigint(signum, frame):
    # Only interrupt user code; an interrupt that arrives between calls is dropped. While a
    # question to the host is open, the interrupt waits for its answer (the agent answers at
    # once) so that the request stream on stdin stays in step.
    if _asking[0]:
        _asking[1] = True
        return
    if _busy:
        raise KeyboardInterrupt


signal.signal(signal.SIGINT, _on_sigint)


def _read_exact(n):
    b = b""
    while len(b) < n:
        c = _stdin.read(n - len(b))
        if not c:
            sys.exit(0)
        b += c
    return b


def _reply(obj):
    data = json.dumps(obj, ensure_ascii=True, default=str).encode("ascii")
    buf = struct.pack(">I", len(data)) + data
    view = memoryview(buf)
    while view:
        n = os.write(_ctl, view)
        view = view[n:]


# ----------------------------------------------------------------------------------- approvals
# A PEP 578 audit hook asks the host before the operations its policy names. It is a guard rail
# for cooperative code: the hook lives in the interpreter that the sandboxed code controls.

_ask_lock = threading.Lock()
_asking = [False, False]  # a question is open; an interrupt arrived meanwhile
_in_hook = threading.local()
_ask_seq = [0]
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _text(v, limit=1000):
    try:
        if isinstance(v, (bytes, bytearray)):
            v = os.fsdecode(bytes(v))
        elif hasattr(v, "__fspath__"):
            v = os.fsdecode(v.__fspath__())
        elif isinstance(v, (list, tuple)):
            v = shlex.join(_text(x, limit) for x in v)
        else:
            v = str(v)
    except Exception:  # noqa: BLE001 - a hostile __str__ or __fspath__
        v = "<unprintable>"
    return v[:limit]


def _abs(p, dir_fd=None):
    # A path relative to dir_fd (shutil.rmtree and os.fwalk work that way) is relative to that
    # directory, not to the working directory: a person approving must see the real target.
    base = _fd_path(dir_fd) if isinstance(dir_fd, int) and dir_fd >= 0 else os.getcwd()
    return os.path.normpath(os.path.join(base, _text(p)))


def _arg(args, i):
    return args[i] if len(args) > i else None


# Where each event's dir_fd argument sits (for its first path; rename/link: src, then dst).
_DIR_FD = {"os.remove": 1, "os.rmdir": 1, "shutil.rmtree": 1, "os.mkdir": 2, "os.chmod": 2,
           "os.chown": 3}


def _outside(p, dir_fd=None):
    path = _abs(p, dir_fd)
    for w in _watch["writable"]:
        if w == "/" or path == w or path.startswith(w.rstrip("/") + "/"):
            return False
    return path not in ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty")


def _writes(args):
    # open(path, mode, flags): mode is a str for io.open, None for os.open.
    mode, flags = (args[1] if len(args) > 1 else None), (args[2] if len(args) > 2 else 0)
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        return True
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def _size(p, dir_fd=None):
    # Bytes an existing regular file (path or fd) holds, 0 for anything else: what a truncation
    # or a rename over it would destroy.
    try:
        if isinstance(p, int):
            st = os.fstat(p)
        else:
            st = os.stat(p, dir_fd=dir_fd if isinstance(dir_fd, int) and dir_fd >= 0 else None)
    except (OSError, ValueError, TypeError):
        return 0
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def _fd_path(fd):
    try:
        return os.readlink("/proc/self/fd/%d" % fd)
    except OSError:
        return "<fd %d>" % fd


def _replaces(event, args):
    # (target, detail) when the operation destroys an existing file's content, else None.
    if event not in _watch["replace"]:
        return None
    if event == "open" and args and not isinstance(args[0], int):
        flags = args[2] if len(args) > 2 else 0
        size = _size(args[0]) if isinstance(flags, int) and flags & os.O_TRUNC else 0
        if size:
            return _abs(args[0]), "open truncates the existing file (%d bytes)" % size
    if event == "os.rename" and len(args) >= 2 and not isinstance(args[1], (int, type(None))):
        size = _size(args[1], _arg(args, 3))
        if size and _text(args[0]) != _text(args[1]):
            return (_abs(args[1], _arg(args, 3)),
                    "os.rename/os.replace over the existing file (%d bytes)" % size)
    if event == "os.truncate" and len(args) >= 2 and isinstance(args[1], int):
        size = _size(args[0])
        if size > args[1]:
            where = _fd_path(args[0]) if isinstance(args[0], int) else _abs(args[0])
            return where, "os.truncate cuts the existing file from %d to %d bytes" % (size, args[1])
    return None


def _target(event, args):
    # Returns (target, detail, flags for the host) or None when this occurrence needs no question.
    if event in _watch["replace"]:
        found = _replaces(event, args)
        if found is not None:
            return found[0], found[1], {"replaces": True}
    if event in ("ctypes.dlsym", "ctypes.dlsym/handle"):
        name = args[1] if len(args) > 1 else None
        if isinstance(name, str) and name in _watch["symbols"]:
            return name, "ctypes looks up the C function %s" % name, {}
        return None
    found = _target_outside(event, args)
    if found is None or event in _PROCESS:
        return found
    return found[0], found[1], {}


_PROCESS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "pty.spawn", "os.spawn")


def _command(text):
    # A command line for the host, cut at MAX_TARGET; a cut one is judged strictly there.
    return text[:MAX_TARGET], "", {"cut": True} if len(text) > MAX_TARGET else {}


def _target_outside(event, args):
    if event not in _watch["events"] and event not in _watch["outside"]:
        return None
    if event == "open":
        if not args or isinstance(args[0], int) or not _writes(args) or not _outside(args[0]):
            return None
        return _abs(args[0]), "open for writing (mode %s)" % _text(args[1] if len(args) > 1 else None, 20)
    if event in ("os.rename", "os.link", "os.symlink"):
        src, dst = (args + (None, None))[:2]
        # symlink's src is the link's text, never resolved; its dst is relative to dir_fd.
        src_fd = None if event == "os.symlink" else _arg(args, 2)
        dst_fd = _arg(args, 2) if event == "os.symlink" else _arg(args, 3)
        for p, fd in ((dst, dst_fd), (src, src_fd)):
            if p is not None and not isinstance(p, int) and _outside(p, fd):
                return _abs(p, fd), "%s %s -> %s" % (event, _text(src), _text(dst))
        return None
    if event in ("os.mkdir", "os.truncate"):
        fd = _arg(args, _DIR_FD.get(event, 99))
        if not args or isinstance(args[0], int) or not _outside(args[0], fd):
            return None
        return _abs(args[0], fd), event
    if event in ("os.remove", "os.rmdir", "shutil.rmtree", "os.chmod", "os.chown", "os.chflags"):
        if not args or isinstance(args[0], int):
            return "<fd>", "%s on an open file descriptor" % event
        extra = ""
        if event == "os.chmod" and len(args) > 1 and isinstance(args[1], int):
            extra = " mode %o" % args[1]
        return _abs(args[0], _arg(args, _DIR_FD.get(event, 99))), event + extra
    limit = MAX_TARGET + 1
    if event == "subprocess.Popen":
        exe, argv = (args + (None, None))[:2]
        cmd = argv if isinstance(argv, str) else _text(argv if argv is not None else exe, limit)
        target, _, flags = _command(_text(cmd, limit))
        return target, "subprocess.Popen", flags
    if event == "os.system":
        target, _, flags = _command(_text(args[0] if args else "", limit))
        return target, "os.system", flags
    if event in ("os.exec", "os.posix_spawn", "pty.spawn"):
        argv = args[1] if len(args) > 1 else (args[0] if args else "")
        target, _, flags = _command(_text(argv, limit))
        return target, event, flags
    if event == "os.spawn":
        target, _, flags = _command(_text(args[2] if len(args) > 2 else "", limit))
        return target, event, flags
    return _text(args[0] if len(args) == 1 else args), event


def _ask(event, target, detail, flags):
    if not _busy:
        raise PermissionError(
            13, "agentnest: %s %s needs approval, and no call is running to ask it in" % (event, target)
        )
    with _ask_lock:
        _ask_seq[0] += 1
        n = _ask_seq[0]
        _asking[0] = True
        try:
            _reply(dict(flags, ask=n, event=event, target=target, detail=detail))
            for _ in range(1000):
                size = struct.unpack(">I", _read_exact(4))[0]
                msg = json.loads(_read_exact(size).decode("utf-8"))
                if msg.get("answer") == n:
                    break
            else:
                msg = {"allowed": False, "reason": "no answer from the host"}
        finally:
            _asking[0] = False
        if _asking[1]:
            _asking[1] = False
            raise KeyboardInterrupt
    if not msg.get("allowed"):
        raise PermissionError(
            13, "agentnest: %s %s was denied: %s" % (event, target, _text(msg.get("reason"), 500))
        )


def _hook(event, args):
    if event not in _watch["events"] and event not in _watch["outside"] and event not in _watch["replace"]:
        return
    if getattr(_in_hook, "on", False):
        return
    _in_hook.on = True
    try:
        found = _target(event, args)
        if found is not None:
            _ask(event, found[0], found[1], found[2])
    finally:
        _in_hook.on = False


def _set_watch(w):
    if not isinstance(w, dict):
        for k in ("events", "outside", "replace", "symbols"):
            _watch[k] = frozenset()
        return
    for k in ("events", "outside", "replace", "symbols"):
        _watch[k] = frozenset(str(e) for e in w.get(k, ()))
    _watch["writable"] = tuple(str(p) for p in w.get("writable", ("/workspace", "/tmp")))


sys.addaudithook(_hook)


def _clip(s):
    if len(s) > MAX_REPR:
        return s[:MAX_REPR] + "... [truncated %d chars]" % (len(s) - MAX_REPR)
    return s


def _rich(value):
    out = []
    try:
        mod = type(value).__module__ or ""
        if mod.startswith("matplotlib") and hasattr(value, "savefig"):
            import io

            buf = io.BytesIO()
            value.savefig(buf, format="png")
            out.append(("image/png", buf.getvalue()))
        for attr, mime in (
            ("_repr_png_", "image/png"),
            ("_repr_jpeg_", "image/jpeg"),
            ("_repr_svg_", "image/svg+xml"),
            ("_repr_html_", "text/html"),
            ("_repr_markdown_", "text/markdown"),
            ("_repr_json_", "application/json"),
        ):
            fn = getattr(type(value), attr, None)
            if fn is None:
                continue
            data = fn(value)
            if data is None:
                continue
            if isinstance(data, tuple):
                data = data[0]
            if isinstance(data, str):
                if mime in ("image/png", "image/jpeg"):
                    data = base64.b64decode(data)
                else:
                    data = data.encode("utf-8")
            elif mime == "application/json":
                data = json.dumps(data).encode("utf-8")
            if isinstance(data, (bytes, bytearray)) and len(data) <= MAX_RICH:
                out.append((mime, bytes(data)))
    except Exception:  # noqa: BLE001 - a broken _repr_ must not fail the call
        pass
    return [{"mime": m, "b64": base64.b64encode(d).decode("ascii")} for m, d in out]


_WORKER_GLOBALS = globals()


def _drop_own_tail(exc):
    # The worker's own frames at the end of a traceback (the SIGINT handler that raised a timeout's
    # KeyboardInterrupt, the audit hook that refused an operation) are not the user's code: the
    # traceback ends at the user's line that was running. Bounded walk of the exception chain.
    seen = 0
    while exc is not None and seen < 32:
        seen += 1
        last_user = None
        tb = exc.__traceback__
        while tb is not None:
            # The worker's own frames run in its globals; the user's cells (and anything they
            # exec) run in the session's namespace.
            if tb.tb_frame.f_globals is not _WORKER_GLOBALS:
                last_user = tb
            tb = tb.tb_next
        if last_user is not None:
            last_user.tb_next = None
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)


def _error(exc, skip_frames):
    _drop_own_tail(exc)
    tb = exc.__traceback__
    for _ in range(skip_frames):
        if tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
    if isinstance(exc, SyntaxError):
        text = "".join(traceback.format_exception_only(type(exc), exc))
    else:
        text = "".join(traceback.format_exception(type(exc), exc, tb))
    try:
        value = str(exc)
    except Exception:  # noqa: BLE001
        value = "<unprintable %s>" % type(exc).__name__
    return {"name": type(exc).__name__, "value": _clip(value), "traceback": _clip(text)}


def _run(code, ns):
    global _busy, _cell
    _cell += 1
    filename = "<cell %d>" % _cell
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    result = None
    rich = []
    error = None
    _busy = True
    try:
        try:
            tree = ast.parse(code, filename, "exec")
        except SyntaxError as e:
            return {"error": _error(e, 0)}
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, filename, "exec"), ns)
        if last is not None:
            value = eval(compile(last, filename, "eval"), ns)
            if value is not None:
                ns["_"] = value
                result = _clip(repr(value))
                rich = _rich(value)
    except KeyboardInterrupt as e:
        error = _error(e, 1)
    except SystemExit as e:
        error = {"name": "SystemExit", "value": str(e.code), "traceback": ""}
    except BaseException as e:  # noqa: BLE001 - every user error becomes a result
        error = _error(e, 1)
    finally:
        _busy = False
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:  # noqa: BLE001
            pass
    return {"result": result, "rich": rich, "error": error}


# ----------------------------------------------------------------------------------- fork state
# A fork without process checkpointing carries the session's namespace. The C pickler does the
# bulk (fast); functions and classes defined in the session go by value through dill, with the
# session's namespace as their globals, so they see later changes just as in the parent. Shared
# objects stay shared (one pickle). Whatever cannot be pickled (generators, threads, sockets,
# ...) is left out and listed.


def _pickler_class():
    import pickle

    try:
        import dill
    except ImportError:
        dill = None

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj):
            if isinstance(obj, (types.FunctionType, type)) and getattr(obj, "__module__", None) == "__main__":
                if dill is None:
                    raise pickle.PicklingError("python3-dill is not installed in the image")
                return (dill.loads, (dill.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL),))
            return NotImplemented

    return Pickler


def _dump(ns, stream=None):
    """The session's namespace pickled, and what went into it. With a stream (the bulk link) the
    pickle goes into it while it is made; a namespace that fails part-way is aborted there and made
    again without the culprits."""
    import io
    import pickle

    Pickler = _pickler_class()

    def dumps(value):
        buf = io.BytesIO()
        Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
        return buf.getvalue()

    def attempt():
        if stream is None:
            return dumps(data)
        Pickler(stream, protocol=pickle.HIGHEST_PROTOCOL).dump(data)
        stream.end()
        return b""

    modules = {}
    data = {}
    for k, v in ns.items():
        if k.startswith("__") and k.endswith("__"):
            continue
        if isinstance(v, types.ModuleType):
            modules[k] = v.__name__
        else:
            data[k] = v
    cells = {f: v for f, v in linecache.cache.items() if f.startswith("<cell ")}
    extra = pickle.dumps(
        {"cell": _cell, "lines": cells, "modules": modules}, protocol=pickle.HIGHEST_PROTOCOL
    )
    if stream is not None:
        stream.raw(struct.pack(">I", len(extra)) + extra)
    skipped = []
    try:
        blob = attempt()
    except OSError:
        raise
    except Exception:  # noqa: BLE001 - find the culprits one by one, then pickle the rest
        if stream is not None:
            stream.abort()
        for k, v in list(data.items()):
            try:
                dumps(v)
            except Exception as e:  # noqa: BLE001
                del data[k]
                skipped.append({"name": k, "type": type(v).__name__, "reason": _text(e, 300)})
        blob = attempt()
    head = {
        "vars": sorted(list(data) + list(modules))[:10000],
        "skipped": skipped[:1000],
        "extra_bytes": len(extra),
    }
    return head, extra + blob


def _load(data, extra_bytes):
    import pickle

    view = memoryview(data)
    _apply(pickle.loads(view[:extra_bytes]), lambda: pickle.loads(view[extra_bytes:]))


def _apply(extra, namespace):
    import importlib

    global _cell
    ns = _main.__dict__
    for name, module in extra.get("modules", {}).items():
        try:
            ns[name] = importlib.import_module(module)
        except Exception:  # noqa: BLE001 - a module the copy cannot import stays missing
            pass
    ns.update(namespace())
    _cell = max(_cell, int(extra.get("cell", 0)))
    linecache.cache.update(extra.get("lines", {}))


# The bulk link: a socket the host listens on while it moves a fork's state (the stdio channel
# through the engine carries about 170 MB/s; this one is a local socket). The host lets only a
# connection that starts with the token of the transfer it expects take part.
BULK_SOCKET = "/run/agentnest/bulk.sock"
MAX_BULK = 2 << 30
MAX_CTL_EXTRA = 64 << 20


def _bulk_connect(bulk):
    import socket

    token = str(bulk.get("token", ""))
    if not token.isalnum() or len(token) > 64:
        raise OSError("bad bulk token")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(120)
        s.connect(BULK_SOCKET)
        s.sendall(token.encode("ascii") + b"\n")
    except BaseException:
        s.close()
        raise
    return s


# On the link: u32 length + the extra pickle, then the namespace's pickle as chunks (u32 length +
# bytes), each attempt ended by END or ABORT (a failed attempt; another one follows).
_END = b"\0\0\0\0"
_ABORT = b"\xff\xff\xff\xff"
_MAX_CHUNK = 1 << 20


class _ChunkStream:
    def __init__(self, s):
        self.s, self.n = s, 0

    def raw(self, b):
        self.s.sendall(b)
        self.n += len(b)

    def write(self, b):
        view = memoryview(b).cast("B")
        for off in range(0, len(view), _MAX_CHUNK):
            part = view[off : off + _MAX_CHUNK]
            if len(part) < 65536:
                self.raw(struct.pack(">I", len(part)) + part.tobytes())
            else:
                self.raw(struct.pack(">I", len(part)))
                self.raw(part)
        return len(view)

    def end(self):
        self.raw(_END)

    def abort(self):
        self.raw(_ABORT)


class _Chunks:
    """Reads the chunks of one attempt; at its END or ABORT reads come back short."""

    def __init__(self, f):
        self.f, self.left, self.mark = f, 0, None

    def _fill(self):
        while self.left == 0 and self.mark is None:
            h = self.f.read(4)
            if len(h) < 4:
                raise EOFError("the state ended early")
            n = struct.unpack(">I", h)[0]
            if h == _END:
                self.mark = "end"
            elif h == _ABORT:
                self.mark = "abort"
            elif n > _MAX_CHUNK:
                raise ValueError("bad state chunk")
            else:
                self.left = n

    def read(self, n=-1):
        want = n if n is not None and n >= 0 else MAX_BULK
        out = []
        while want > 0:
            self._fill()
            if not self.left:
                break
            k = min(want, self.left)
            b = self.f.read(k)
            if len(b) < k:
                raise EOFError("the state ended early")
            out.append(b)
            self.left -= k
            want -= k
        return out[0] if len(out) == 1 else b"".join(out)

    def readinto(self, buf):
        # The unpickler reads big bytes objects straight into their own memory through here.
        view = memoryview(buf).cast("B")
        got = 0
        while got < len(view):
            self._fill()
            if not self.left:
                break
            k = self.f.readinto(view[got : got + min(len(view) - got, self.left)])
            if not k:
                raise EOFError("the state ended early")
            got += k
            self.left -= k
        return got

    def readline(self):
        out = bytearray()
        while not out.endswith(b"\n"):
            b = self.read(1)
            if not b:
                break
            out += b
        return bytes(out)

    def next_mark(self):
        """Skips to the end of this attempt; 'end' or 'abort'."""
        while self.mark is None:
            while self.left:
                k = len(self.f.read(min(self.left, _MAX_CHUNK)))
                if not k:
                    raise EOFError("the state ended early")
                self.left -= k
            self._fill()
        mark, self.mark = self.mark, None
        return mark


def _dump_bulk(ns, bulk):
    try:
        s = _bulk_connect(bulk)
    except OSError as e:
        return {"error": "cannot reach the bulk link: " + _text(e, 300)}
    try:
        stream = _ChunkStream(s)
        head, _ = _dump(ns, stream)
        return dict(head, bulk=stream.n)
    except Exception as e:  # noqa: BLE001
        return {"error": "cannot save the session: " + _text(e, 500)}
    finally:
        s.close()


def _load_bulk(bulk):
    """Unpickles the state while it streams in: the copy's load overlaps the parent's save."""
    import pickle

    s = _bulk_connect(bulk)
    try:
        f = s.makefile("rb", buffering=1 << 20)
        h = f.read(4)
        n = struct.unpack(">I", h)[0] if len(h) == 4 else -1
        if not 0 <= n <= MAX_CTL_EXTRA:
            raise ValueError("bad state header")
        extra = f.read(n)
        if len(extra) != n:
            raise EOFError("the state ended early")
        chunks = _Chunks(f)
        for _ in range(4):
            try:
                data = pickle.Unpickler(chunks).load()
            except Exception:  # noqa: BLE001 - an aborted attempt; another one follows
                if chunks.next_mark() == "abort":
                    continue
                raise
            if chunks.left or chunks.next_mark() != "end":
                raise ValueError("the state has bytes past its end")
            _apply(pickle.loads(extra), lambda data=data: data)
            return
        raise ValueError("the state was aborted too often")
    finally:
        s.close()


def _send_blob(head, blob):
    head = dict(head, bytes=len(blob))
    _reply({"state": head})
    view = memoryview(blob)
    while view:
        n = os.write(_ctl, view[: 1 << 20])
        view = view[n:]


# The session's namespace is a real __main__ module, as in a script or a REPL: pickle and dill
# find the classes and functions defined in it.
_main = types.ModuleType("__main__")
_main.__dict__["__builtins__"] = __builtins__
sys.modules["__main__"] = _main


def main():
    ns = _main.__dict__
    while True:
        try:
            n = struct.unpack(">I", _read_exact(4))[0]
            req = json.loads(_read_exact(n).decode("utf-8"))
            if "dump" in req and isinstance(req.get("bulk"), dict):
                _send_blob(_dump_bulk(ns, req["bulk"]), b"")
                continue
            if "dump" in req:
                try:
                    head, blob = _dump(ns)
                except Exception as e:  # noqa: BLE001
                    head, blob = {"error": "cannot save the session: " + _text(e, 500)}, b""
                _send_blob(head, blob)
                continue
            if "load_bulk" in req:
                try:
                    _load_bulk(req["load_bulk"])
                    _reply({"loaded": sorted(k for k in ns if not k.startswith("__"))[:10000]})
                except Exception as e:  # noqa: BLE001
                    _reply({"error": "cannot restore the session: " + _text(e, 500)})
                continue
            if "load" in req:
                data = _read_exact(int(req["load"]))
                try:
                    _load(data, int(req.get("extra_bytes", 0)))
                    _reply({"loaded": sorted(k for k in ns if not k.startswith("__"))[:10000]})
                except Exception as e:  # noqa: BLE001
                    _reply({"error": "cannot restore the session: " + _text(e, 500)})
                del data
                continue
            if isinstance(req.get("env"), dict):
                # The user's variables, sent by the agent when this interpreter was started
                # before they were known (a pooled sandbox); before any code of theirs runs.
                os.environ.update(
                    {k: v for k, v in req["env"].items() if isinstance(k, str) and isinstance(v, str)}
                )
                continue
            if req.get("warm") is True:
                # Answered with nothing run (see the agent's Session.warm_up).
                _reply({"warm": True})
                continue
            if "code" not in req:
                continue  # a late answer to a question that was interrupted
            _set_watch(req.get("watch"))
            reply = _run(req.get("code", ""), ns)
        except KeyboardInterrupt:
            reply = {"error": {"name": "KeyboardInterrupt", "value": "", "traceback": ""}}
        _reply(reply)


main()
