"""``Sandbox``: one isolated sandbox, its Python sessions, files, forks and snapshots."""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from . import _engine
from ._wire import Endpoint, EngineGone, Wire, error_of
from .errors import AgentNestError, ExecutionTimeoutError, SandboxDestroyedError
from .policy import Secret, SecurityPolicy
from .results import Artifact, CodeError, CodeResult, ExecutionResult, FileInfo, SessionResult

__all__ = ["Sandbox", "PythonSession", "ApprovalRequest", "connection"]

BACKENDS = ("docker", "gvisor", "kubernetes", "microvm", "remote")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)
_SESSION = re.compile(r"^[A-Za-z0-9_-]{1,32}$")

_lock = threading.Lock()
_wires: dict[str, Wire] = {}


def connection(remote: bool | None = None) -> Wire:
    """The shared client: ``AGENTNEST_URL`` + ``AGENTNEST_API_KEY`` when set (or ``remote``),
    else this user's local engine, started on first use."""
    url = os.environ.get("AGENTNEST_URL")
    use_remote = bool(url) if remote is None else remote
    with _lock:
        if use_remote:
            if not url:
                raise AgentNestError(
                    "backend='remote' needs a server",
                    code="config",
                    fix="set AGENTNEST_URL (https://...) and AGENTNEST_API_KEY",
                )
            key = os.environ.get("AGENTNEST_API_KEY")
            if not key:
                raise AgentNestError(
                    "AGENTNEST_URL is set but AGENTNEST_API_KEY is not",
                    code="config",
                    fix="export AGENTNEST_API_KEY with a key from `agentnest tenant add NAME`",
                )
            w = _wires.get("remote")
            if w is None or w.endpoint.url != url or w.endpoint.key != key:
                w = Wire(Endpoint(key=key, url=url))
                _wires["remote"] = w
            return w
        w = _wires.get("local")
        if w is None:
            w = Wire(_engine.connect())
            _wires["local"] = w
        return w


def _reset_local() -> None:
    with _lock:
        w = _wires.pop("local", None)
    if w is not None:
        w.close()


def _size(name: str, value: str | int) -> int:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TypeError(f"{name} must be a size like '512m' or a number of bytes, not {value!r}")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"{name}={value}: give a positive number of bytes or e.g. '512m'")
        return value
    m = _SIZE.match(value)
    if not m:
        raise ValueError(f"{name}={value!r} is not a size: write e.g. '512m', '2g' or 1048576")
    unit = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    n = int(float(m.group(1)) * unit)
    if n <= 0:
        raise ValueError(f"{name}={value!r}: give a positive size")
    return n


def _seconds(name: str, value: float | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {value!r}")
    if value <= 0:
        raise ValueError(f"{name}={value}: give a positive number of seconds")
    return max(1, round(value))


def _env(name: str, env: Mapping[str, str] | None) -> dict[str, str] | None:
    if env is None:
        return None
    if not isinstance(env, Mapping):
        raise TypeError(f"{name} must be a dict of str to str, not {type(env).__name__}")
    out = {}
    for k, v in env.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError(f"{name}: {k!r}={v!r}: keys and values must be str")
        out[k] = v
    return out


def _split_env(
    env: Mapping[str, str | Secret] | None,
) -> tuple[dict[str, str] | None, dict[str, str] | None]:
    """Plain variables, and those given as :class:`Secret` (masked in all output)."""
    if env is None:
        return None, None
    if not isinstance(env, Mapping):
        raise TypeError(f"environment must be a dict of str to str or Secret, not "
                        f"{type(env).__name__}")
    plain = {k: v for k, v in env.items() if not isinstance(v, Secret)}
    secret = {k: v.value for k, v in env.items() if isinstance(v, Secret)}
    return _env("environment", plain), secret or None


def _rel(name: str, path: str | os.PathLike[str] | None) -> str | None:
    """A workspace path as the wire takes it: relative to /workspace."""
    if path is None:
        return None
    p = os.fspath(path)
    if not isinstance(p, str):
        raise TypeError(f"{name} must be a str path, not {type(p).__name__}")
    if p == "/workspace":
        return ""
    if p.startswith("/workspace/"):
        return p[len("/workspace/"):]
    return p


class ApprovalRequest:
    """A question the sandbox asks a person: ``kind`` (shell, file.delete, network...) and
    ``target`` (escaped, bounded). Return True from the hook to approve."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.id = str(data.get("id"))
        self.sandbox_id = str(data.get("sandboxId", ""))
        self.kind = str(data.get("kind"))
        self.target = str(data.get("target"))
        self.detail = str(data.get("detail", ""))

    def __repr__(self) -> str:
        return f"ApprovalRequest(kind={self.kind!r}, target={self.target!r})"


def _limits(limits: Mapping[str, int | str] | None) -> dict[str, int | str]:
    """The ``limits`` of a create request, by the names agentnest.yaml's ``limits:`` uses
    (``open_files``, ``tmp_size``, ...); the server checks the names and the ranges."""
    if limits is None:
        return {}
    if not isinstance(limits, Mapping):
        raise TypeError(f"limits must be a mapping such as {{'open_files': 1024}}, not {limits!r}")
    out: dict[str, int | str] = {}
    for name, value in limits.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"limits: {name!r} is not a limit name such as 'open_files'")
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise TypeError(
                f"limits[{name!r}]={value!r}: give a whole number, or a size such as '64m'")
        out[name] = value
    return out


class Sandbox:
    """A hardened sandbox: non-root, read-only root, no capabilities, no network by default.

    >>> with Sandbox() as sb:                                     # doctest: +SKIP
    ...     sb.run_code("a = 10; print(a * 2)").output
    '20\\n'
    """

    def __init__(
        self,
        image: str | None = None,
        timeout: float = 300,
        *,
        environment: Mapping[str, str | Secret] | None = None,
        workdir: str = "/workspace",
        network_enabled: bool = False,
        memory: str | int = "512m",
        cpus: float = 1.0,
        pids: int = 256,
        limits: Mapping[str, int | str] | None = None,
        gpus: int = 0,
        backend: str = "docker",
        security_policy: SecurityPolicy | None = None,
        approval_hook: Callable[[ApprovalRequest], bool] | None = None,
        observers: Iterable[Callable[[str, Mapping[str, Any]], None]] = (),
        _attach: Mapping[str, Any] | None = None,
        _wire: Wire | None = None,
    ) -> None:
        self._observers = tuple(observers)
        self._hook = approval_hook
        self.destroyed = False
        if _attach is not None and _wire is not None:
            self._wire = _wire
            self._set(_attach)
            self._workdir = ""
            self._max_output = None
            return
        if image is not None and (not isinstance(image, str) or not image):
            raise TypeError(f"image must be an image name (str) or None, not {image!r}")
        ttl = _seconds("timeout", timeout)
        env, secret_env = _split_env(environment)
        if backend not in BACKENDS:
            raise ValueError(f"backend={backend!r}: use one of {', '.join(BACKENDS)}")
        if isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or cpus <= 0:
            raise ValueError(f"cpus={cpus!r}: give a positive number, e.g. 1 or 0.5")
        if isinstance(pids, bool) or not isinstance(pids, int) or pids < 8:
            raise ValueError(f"pids={pids!r}: give a whole number of processes, at least 8")
        asked_limits = _limits(limits)
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
            raise ValueError(f"gpus={gpus!r}: give 0 or a whole number of GPUs")
        if gpus:
            raise AgentNestError(
                f"gpus={gpus}: GPU sandboxes need the gpu preset on a host with an NVIDIA GPU",
                code="unsupported",
                fix="use the Java or CLI gpu preset (docs/presets.md) on such a host; gpus=0 here",
            )
        if backend in ("kubernetes", "microvm") and not os.environ.get("AGENTNEST_URL"):
            raise AgentNestError(
                f"backend={backend!r} runs on a server configured for it",
                code="config",
                fix=f"run `agentnest serve` with backend {backend} (docs/server.md) and set "
                "AGENTNEST_URL and AGENTNEST_API_KEY",
            )
        policy = security_policy or SecurityPolicy()
        if not isinstance(policy, SecurityPolicy):
            raise TypeError("security_policy must be a SecurityPolicy")
        if network_enabled and not policy.network.enabled:
            raise ValueError(
                "network_enabled=True needs the hosts to allow: pass security_policy="
                "SecurityPolicy(network=NetworkPolicy.allowlist(domains=['api.example.com']))"
            )
        body: dict[str, Any] = {
            "memoryBytes": _size("memory", memory),
            "cpus": float(cpus),
            "pidsLimit": pids,
            "ttlSeconds": ttl,
        }
        if asked_limits:
            body["limits"] = asked_limits
        if image:
            body["image"] = image
        if env:
            body["env"] = env
        if secret_env:
            body["secretEnv"] = secret_env
        if backend == "gvisor":
            body["runtime"] = "runsc"
        if policy.network.enabled:
            body["allowHosts"] = list(policy.network.domains)
        if policy.network.credentials:
            body["credentials"] = [c.wire() for c in policy.network.credentials]
        approvals = policy.approvals or ("recommended" if approval_hook else None)
        if approvals:
            body["approvals"] = approvals
        self._max_output = policy.max_output_bytes
        self._wire = connection(remote=True if backend == "remote" else None)
        self._set(self._call(lambda w: w.json("POST", "/v1/sandboxes", body=body), retry=True))
        self._workdir = _rel("workdir", workdir) or ""
        if self._workdir:
            self._call(lambda w: w.json(
                "POST", f"/v1/sandboxes/{self.id}/files/mkdir", body={"path": self._workdir}))
        self._notify("sandbox.created", {"id": self.id})

    def _set(self, data: Mapping[str, Any]) -> None:
        self.id: str = str(data["id"])
        self.info: dict[str, Any] = dict(data)

    def _call(self, fn: Callable[[Wire], Any], retry: bool = False) -> Any:
        """Runs ``fn`` on the sandbox's connection. A local engine that died is started afresh
        for the next call (or for this one when ``retry``: nothing was made yet); one that
        another process restarted has a new key, so a refused local key reconnects once."""
        for attempt in (0, 1):
            w = self._wire if self._wire.endpoint.socket_path is None else connection(False)
            self._wire = w
            try:
                return fn(w)
            except EngineGone:
                if w.endpoint.socket_path is None:
                    raise
                _reset_local()
                if not retry or attempt:
                    raise
            except AgentNestError as e:
                if w.endpoint.socket_path is None or attempt or e.code not in (
                    "key_revoked", "unauthenticated"
                ):
                    raise
                _reset_local()
        raise AssertionError("unreachable")

    def _notify(self, event: str, data: Mapping[str, Any]) -> None:
        for o in self._observers:
            o(event, data)

    def _path(self, suffix: str = "") -> str:
        if self.destroyed:
            raise SandboxDestroyedError(
                f"sandbox {self.id} was destroyed", code="not_found", actor="caller",
                fix="create a new Sandbox()",
            )
        return f"/v1/sandboxes/{self.id}{suffix}"

    # --- lifecycle -----------------------------------------------------------------------
    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def __repr__(self) -> str:
        return f"Sandbox(id={self.id!r}, destroyed={self.destroyed})"

    def destroy(self) -> None:
        """Destroys the sandbox and everything in it (idempotent)."""
        if self.destroyed:
            return
        with contextlib.suppress(SandboxDestroyedError):
            self._call(lambda w: w.json("DELETE", f"/v1/sandboxes/{self.id}"))
        self.destroyed = True
        self._notify("sandbox.destroyed", {"id": self.id})

    def extend(self, seconds: float) -> None:
        """Pushes the sandbox's expiry later."""
        s = _seconds("seconds", seconds)
        self.info = self._call(
            lambda w: w.json("POST", self._path("/extend"), body={"seconds": s}))

    # --- code and commands -----------------------------------------------------------------
    def _run(self, route: str, body: dict[str, Any], shown: str | list[str]) -> dict[str, Any]:
        if self._max_output is not None:
            body.setdefault("maxOutputBytes", self._max_output)
        self._notify("exec.started", {"command": shown})
        stop = self._watch_approvals()
        try:
            res: dict[str, Any] = self._call(lambda w: w.json("POST", self._path(route), body=body))
        finally:
            stop()
        self._notify("exec.finished", {"command": shown, "exitCode": res.get("exitCode")})
        return res

    def _exec(self, body: dict[str, Any], shown: str | list[str], timeout: float | None,
              environment: Mapping[str, str] | None, workdir: str | None) -> ExecutionResult:
        t = _seconds("timeout", timeout)
        if t is not None:
            body["timeoutSeconds"] = t
        env = _env("environment", environment)
        if env:
            body["env"] = env
        wd = _rel("workdir", workdir)
        if wd is None and self._workdir:
            wd = self._workdir
        if wd:
            body["workdir"] = wd
        res = self._run("/exec", body, shown)
        r = _exec_result(shown, res)
        if r.limit == "timeout":
            raise ExecutionTimeoutError(
                f"{shown!r} ran past its timeout and was stopped; the sandbox is kept",
                code="timeout", actor="limit", result=r,
                fix="pass a larger timeout=, or run it in the background",
            )
        return r

    def exec_shell(self, cmd: str, *, timeout: float | None = None,
                   environment: Mapping[str, str] | None = None,
                   workdir: str | None = None) -> ExecutionResult:
        """Runs ``cmd`` with ``/bin/sh -c``."""
        if not isinstance(cmd, str):
            raise TypeError(f"cmd must be a str, not {type(cmd).__name__}; use exec() for a list")
        return self._exec({"command": cmd}, cmd, timeout, environment, workdir)

    def exec(self, argv: list[str], *, timeout: float | None = None,
             environment: Mapping[str, str] | None = None,
             workdir: str | None = None,
             max_output_bytes: int | None = None) -> ExecutionResult:
        """Runs a program with its arguments, no shell involved. ``max_output_bytes`` overrides
        the sandbox's output cap for this call (at most 64 MiB); past it the result is cut and
        ``.truncated``."""
        if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
            raise TypeError("argv must be a non-empty list of str, e.g. ['ls', '-la']")
        body: dict[str, Any] = {"argv": list(argv)}
        if max_output_bytes is not None:
            if isinstance(max_output_bytes, bool) or not isinstance(max_output_bytes, int) \
                    or not 0 < max_output_bytes <= 64 << 20:
                raise ValueError(f"max_output_bytes={max_output_bytes!r}: give 1..67108864")
            body["maxOutputBytes"] = max_output_bytes
        return self._exec(body, list(argv), timeout, environment, workdir)

    def exec_python(self, code: str, *, timeout: float | None = None,
                    environment: Mapping[str, str] | None = None,
                    workdir: str | None = None) -> ExecutionResult:
        """Runs ``code`` in a fresh ``python3`` process (no state kept; see ``run_code``)."""
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, not {type(code).__name__}")
        return self._exec({"argv": ["python3", "-c", code]}, ["python3", "-c", code],
                          timeout, environment, workdir)

    def run_code(self, code: str, *, timeout: float | None = None) -> CodeResult:
        """Runs ``code`` in the sandbox's persistent Python session (variables persist)."""
        return self._code(code, None, timeout)

    def _code(self, code: str, session: str | None, timeout: float | None) -> CodeResult:
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, not {type(code).__name__}")
        body: dict[str, Any] = {"code": code}
        if session is not None:
            body["session"] = session
        t = _seconds("timeout", timeout)
        if t is not None:
            body["timeoutSeconds"] = t
        res = self._run("/code", body, code)
        r = _code_result(res)
        if r.limit == "timeout":
            raise ExecutionTimeoutError(
                "the code ran past its timeout and was stopped; the sandbox, its files and the "
                "session's variables are kept",
                code="timeout", actor="limit", result=r,
                fix="pass a larger timeout=",
            )
        return r

    def stream_shell(self, cmd: str, *, timeout: float | None = None) -> Iterator[str]:
        """Yields the command's output as it is produced (stdout and stderr chunks)."""
        if not isinstance(cmd, str):
            raise TypeError(f"cmd must be a str, not {type(cmd).__name__}")
        body: dict[str, Any] = {"command": cmd}
        t = _seconds("timeout", timeout)
        if t is not None:
            body["timeoutSeconds"] = t
        if self._workdir:
            body["workdir"] = self._workdir
        stop = self._watch_approvals()
        try:
            yield from self._stream_events(cmd, body)
        finally:
            stop()

    def _stream_events(self, cmd: str, body: dict[str, Any]) -> Iterator[str]:
        for name, data in self._open_stream("/exec", body):
            if name in ("stdout", "stderr") and isinstance(data, dict):
                yield str(data.get("text", ""))
            elif name == "result" and isinstance(data, dict):
                if data.get("limit") == "timeout":
                    raise ExecutionTimeoutError(
                        f"{cmd!r} ran past its timeout and was stopped; the sandbox is kept",
                        code="timeout", actor="limit", result=_exec_result(cmd, data))
                return
            elif name == "error" and isinstance(data, dict):
                raise error_of(int(data.get("status", 500)), json.dumps({"error": data}).encode())
        raise AgentNestError(
            f"the stream of {cmd!r} ended before its result (the connection or the engine "
            "stopped it)", code="stream_ended",
            fix="run it again; exec_shell() returns the whole result in one answer")

    def _open_stream(self, route: str, body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        """A stream of events, opened as ``_call`` makes a call (its first event is read inside
        it): a local engine restarted by another process is reconnected once, as the refused
        request ran nothing; a stream that broke after it began is not sent again."""

        def start(w: Wire) -> tuple[tuple[str, Any] | None, Iterator[tuple[str, Any]]]:
            events = w.events("POST", self._path(route), body=body)
            return next(events, None), events

        first, events = self._call(start)
        if first is None:
            return
        yield first
        yield from events

    def python_session(self, name: str = "default") -> PythonSession:
        """A named, independent interpreter in this sandbox."""
        if not isinstance(name, str) or not _SESSION.match(name):
            raise ValueError(f"session name {name!r}: 1-32 of A-Z a-z 0-9 _ -")
        return PythonSession(self, name)

    # --- files -----------------------------------------------------------------------------
    def write_file(self, path: str, data: str | bytes) -> None:
        """Writes a workspace file (relative to /workspace), making its parents."""
        raw = data.encode() if isinstance(data, str) else data
        if not isinstance(raw, (bytes, bytearray)):
            raise TypeError(f"data must be str or bytes, not {type(data).__name__}")
        p = _rel("path", path)
        self._call(lambda w: w.json("PUT", self._path("/files/content"), raw=bytes(raw),
                                    query={"path": p}))

    def read_file(self, path: str) -> bytes:
        p = _rel("path", path)
        data: bytes = self._call(
            lambda w: w.bytes("GET", self._path("/files/content"), query={"path": p}))
        return data

    def upload_archive(self, tar: bytes, path: str = "") -> list[Artifact]:
        """Unpacks a tar under ``path`` of the workspace; the engine refuses links out of the
        workspace, devices, absolute or ``..`` names, and archives past its size limits."""
        if not isinstance(tar, (bytes, bytearray)):
            raise TypeError(f"tar must be bytes, not {type(tar).__name__}")
        p = _rel("path", path)
        res = self._call(lambda w: w.json("PUT", self._path("/archive"), raw=bytes(tar),
                                          query={"path": p}))
        return [Artifact(str(a["path"]), int(a["size"]), str(a["sha256"]))
                for a in res.get("artifacts", [])]

    def upload_file(self, local: str | os.PathLike[str], remote: str) -> None:
        self.write_file(remote, Path(local).read_bytes())

    def download_file(self, remote: str, local: str | os.PathLike[str]) -> Path:
        out = Path(local)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(self.read_file(remote))
        return out

    def list_files(self, path: str = "", recursive: bool = False) -> list[FileInfo]:
        p = _rel("path", path)
        res = self._call(lambda w: w.json("GET", self._path("/files"),
                                          query={"path": p, "recursive": recursive}))
        return [FileInfo(str(f["path"]), str(f["type"]), int(f.get("size", 0)))
                for f in res.get("files", [])]

    def artifacts(self, pattern: str = "**") -> list[Artifact]:
        """Regular files matching the glob, with size and sha256."""
        res = self._call(lambda w: w.json("GET", self._path("/artifacts"),
                                          query={"glob": pattern}))
        return [Artifact(str(a["path"]), int(a["size"]), str(a["sha256"]))
                for a in res.get("artifacts", [])]

    # --- state -----------------------------------------------------------------------------
    def fork(self) -> Sandbox:
        """An independent copy (files and Python sessions) that never sees this one's writes."""
        res = self._call(lambda w: w.json("POST", self._path("/fork")))
        copy = Sandbox(_attach=res["sandbox"], _wire=self._wire, observers=self._observers,
                       approval_hook=self._hook)
        copy._workdir = self._workdir
        copy._max_output = self._max_output
        copy.fork_mode = res.get("mode")
        return copy

    fork_mode: str | None = None

    def snapshot(self, name: str, *, replace: bool = False) -> dict[str, Any]:
        """Saves the sandbox's state under ``name`` (restore with ``Sandbox.restore(name)``)."""
        if not isinstance(name, str) or not re.match(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,35}$", name):
            raise ValueError(f"snapshot name {name!r}: 1-36 of A-Z a-z 0-9 _ -, not starting "
                             "with _ or -")
        res: dict[str, Any] = self._call(lambda w: w.json(
            "POST", self._path("/snapshots"), body={"name": name, "replace": replace}))
        return res

    @classmethod
    def restore(cls, name: str, *, approval_hook: Callable[[ApprovalRequest], bool] | None = None,
                ) -> Sandbox:
        """A new sandbox from a snapshot."""
        w = connection()
        res = w.json("POST", f"/v1/snapshots/{name}/restore")
        return cls(_attach=res, _wire=w, approval_hook=approval_hook)

    @classmethod
    def connect(cls, sandbox_id: str, *,
                approval_hook: Callable[[ApprovalRequest], bool] | None = None) -> Sandbox:
        """Attaches to a running sandbox of this user by id (its Python sessions included)."""
        if not isinstance(sandbox_id, str) or not sandbox_id:
            raise TypeError(f"sandbox_id must be a sandbox id (str), not {sandbox_id!r}")
        w = connection()
        return cls(_attach=w.json("GET", f"/v1/sandboxes/{sandbox_id}"), _wire=w,
                   approval_hook=approval_hook)

    def is_running(self) -> bool:
        """Whether the engine still has this sandbox (False once destroyed or expired)."""
        if self.destroyed:
            return False
        try:
            self.info = self._call(lambda w: w.json("GET", self._path()))
        except SandboxDestroyedError:
            return False
        return True

    # --- approvals -------------------------------------------------------------------------
    def _watch_approvals(self) -> Callable[[], None]:
        """While a call runs, answers this sandbox's approval questions with the hook."""
        hook = self._hook
        if hook is None:
            return lambda: None
        done = threading.Event()
        wire = Wire(self._wire.endpoint)
        seen: set[str] = set()

        def loop() -> None:
            try:
                while not done.wait(0.05):
                    try:
                        pending = wire.json("GET", "/v1/approvals").get("approvals", [])
                    except AgentNestError:
                        continue
                    for q in pending:
                        if q.get("sandboxId") != self.id or q.get("id") in seen:
                            continue
                        seen.add(str(q.get("id")))
                        req = ApprovalRequest(q)
                        try:
                            ok = bool(hook(req))
                        except Exception:  # a failing hook denies, as a timeout would
                            ok = False
                        with contextlib.suppress(AgentNestError):
                            wire.json("POST", f"/v1/approvals/{req.id}",
                                      body={"approve": ok} if ok else
                                      {"approve": False, "reason": "denied by approval_hook"})
            finally:
                wire.close()

        t = threading.Thread(target=loop, name=f"agentnest-approvals-{self.id}", daemon=True)
        t.start()

        def stop() -> None:
            done.set()
            t.join(5)

        return stop


class PythonSession:
    """A named interpreter in a sandbox; ``run`` returns ``(stdout, stderr, result, error)``."""

    def __init__(self, sandbox: Sandbox, name: str) -> None:
        self.sandbox = sandbox
        self.name = name

    def run(self, code: str, *, timeout: float | None = None) -> SessionResult:
        r = self.sandbox._code(code, self.name, timeout)
        return SessionResult(r.output, r.stderr, r.result, r.error)


def _exec_result(shown: str | list[str], res: Mapping[str, Any]) -> ExecutionResult:
    truncated = bool(res.get("truncated"))
    stderr = str(res.get("stderr", ""))
    if truncated and "truncated" not in stderr[-200:]:
        stderr += "\n[agentnest] output truncated at the sandbox's max_output_bytes\n"
    return ExecutionResult(
        command=shown,
        exit_code=int(res.get("exitCode", -1)),
        stdout=str(res.get("stdout", "")),
        stderr=stderr,
        duration=int(res.get("durationMillis", 0)) / 1000.0,
        truncated=truncated,
        limit=res.get("limit"),
        redactions=dict(res.get("redactions") or {}),
    )


def _code_result(res: Mapping[str, Any]) -> CodeResult:
    err = res.get("error")
    truncated = bool(res.get("truncated"))
    stderr = str(res.get("stderr", ""))
    if truncated and "truncated" not in stderr[-200:]:
        stderr += "\n[agentnest] output truncated at the sandbox's max_output_bytes\n"
    return CodeResult(
        output=str(res.get("stdout", "")),
        stderr=stderr,
        result=res.get("result"),
        error=None if not err else CodeError(str(err.get("name")), str(err.get("value")),
                                             str(err.get("traceback", ""))),
        duration=int(res.get("durationMillis", 0)) / 1000.0,
        truncated=truncated,
        limit=res.get("limit"),
        rich=list(res.get("rich") or []),
    )
