# AgentNest Python session worker: one long-lived interpreter. Standard library only.
# Requests arrive on stdin (u32 BE length + JSON {"code": ...}); replies go to the control fd
# named by AGENTNEST_CTL_FD. stdout/stderr are pipes the agent forwards as the call's output.
import ast
import base64
import json
import linecache
import os
import signal
import struct
import sys
import traceback

_ctl = int(os.environ.pop("AGENTNEST_CTL_FD"))
os.environ.pop("AGENTNEST_SESSION", None)
_stdin = sys.stdin.buffer
sys.stdin = open(os.devnull)
MAX_REPR = 256 * 1024
MAX_RICH = 8 << 20
_busy = False
_cell = 0


def _on_sigint(signum, frame):
    # Only interrupt user code; an interrupt that arrives between calls is dropped.
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


def _error(exc, skip_frames):
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


def main():
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    while True:
        try:
            n = struct.unpack(">I", _read_exact(4))[0]
            req = json.loads(_read_exact(n).decode("utf-8"))
            reply = _run(req.get("code", ""), ns)
        except KeyboardInterrupt:
            reply = {"error": {"name": "KeyboardInterrupt", "value": "", "traceback": ""}}
        _reply(reply)


main()
