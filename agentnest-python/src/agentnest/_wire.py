"""The ``/v1`` wire: one HTTP client for the local engine's Unix socket and a remote server.

Standard library only. One keep-alive connection per thread; JSON bodies; server-sent events for
streams. Errors become the package's exceptions, carrying the engine's code, reason and fix.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .errors import (
    AgentNestError,
    FileAccessError,
    PolicyDeniedError,
    QuotaExceededError,
    RuntimeNotAvailableError,
    SandboxDestroyedError,
)

# Connection failures that mean "nobody answered": the engine died, or the server is down.
_GONE = (
    ConnectionRefusedError,
    ConnectionResetError,
    BrokenPipeError,
    FileNotFoundError,
    http.client.RemoteDisconnected,
    http.client.BadStatusLine,
)


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float | None) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(self.timeout)
            s.connect(self._path)
        except BaseException:
            s.close()
            raise
        self.sock = s


@dataclass(frozen=True)
class Endpoint:
    """Where the engine is: a Unix socket (local) or an http(s) URL (remote), and the key."""

    key: str
    socket_path: str | None = None
    url: str | None = None

    def describe(self) -> str:
        return f"the local engine ({self.socket_path})" if self.socket_path else f"{self.url}"


class Wire:
    """A thread-safe ``/v1`` client (one connection per thread)."""

    def __init__(self, endpoint: Endpoint, *, timeout: float = 3600.0) -> None:
        self.endpoint = endpoint
        self._timeout = timeout
        self._local = threading.local()
        if endpoint.url:
            u = urllib.parse.urlsplit(endpoint.url)
            if u.scheme not in ("http", "https") or not u.hostname:
                raise ValueError(
                    f"AGENTNEST_URL {endpoint.url!r} is not an http(s) URL: "
                    "write e.g. https://agentnest.example.com"
                )
            if u.scheme == "http" and not _literal_loopback(u.hostname):
                raise ValueError(
                    f"AGENTNEST_URL {endpoint.url!r} is plain HTTP to a non-loopback host: the "
                    "API key would cross the network in clear; use https://"
                )
            self._scheme = u.scheme
            self._host = u.hostname
            self._port = u.port
            self._base = u.path.rstrip("/")

    def _conn(self) -> http.client.HTTPConnection:
        c: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if c is None:
            ep = self.endpoint
            if ep.socket_path:
                c = _UnixConnection(ep.socket_path, self._timeout)
            elif self._scheme == "https":
                c = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self._timeout,
                    context=ssl.create_default_context(),
                )
            else:
                c = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
            self._local.conn = c
        return c

    def close(self) -> None:
        c = getattr(self._local, "conn", None)
        if c is not None:
            c.close()
            self._local.conn = None
        self._local.used = False

    def _path(self, path: str, query: dict[str, Any] | None) -> str:
        base = "" if self.endpoint.socket_path else self._base
        if query:
            q = urllib.parse.urlencode(
                {k: _q(v) for k, v in query.items() if v is not None}, doseq=True
            )
            return f"{base}{path}?{q}"
        return base + path

    def _send(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        raw: bytes | None = None,
        query: dict[str, Any] | None = None,
        accept: str = "application/json",
    ) -> http.client.HTTPResponse:
        headers = {"Authorization": f"Bearer {self.endpoint.key}", "Accept": accept}
        data: bytes | None = None
        if raw is not None:
            data = raw
            headers["Content-Type"] = "application/octet-stream"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        target = self._path(path, query)
        # A kept-alive connection the server closed while it was idle: the request never got
        # there when sending fails, so any method is sent again once on a fresh connection;
        # when the answer is missing, only an idempotent one is (it may have been acted on).
        for attempt in (0, 1):
            c = self._conn()
            reused = getattr(self._local, "used", False)
            try:
                c.request(method, target, body=data, headers=headers)
            except OSError as e:
                self.close()
                if attempt == 0 and reused:
                    continue
                raise self._gone(e) from e
            try:
                r = c.getresponse()
            except (*_GONE, OSError) as e:
                self.close()
                if attempt == 0 and reused and method in ("GET", "HEAD", "DELETE", "PUT"):
                    continue
                raise self._gone(e) from e
            self._local.used = not r.will_close
            return r
        raise AssertionError("unreachable")

    def _gone(self, e: BaseException) -> EngineGone:
        return EngineGone(f"{self.endpoint.describe()} did not answer ({type(e).__name__}: {e})")

    def json(self, method: str, path: str, **kw: Any) -> Any:
        r = self._send(method, path, **kw)
        data = r.read()
        if r.status >= 400:
            raise error_of(r.status, data)
        if not data:
            return None
        return json.loads(data)

    def bytes(self, method: str, path: str, **kw: Any) -> bytes:
        r = self._send(method, path, accept="application/octet-stream", **kw)
        data = r.read()
        if r.status >= 400:
            raise error_of(r.status, data)
        return data

    def events(self, method: str, path: str, **kw: Any) -> Iterator[tuple[str, Any]]:
        """Server-sent events as (name, data) pairs; the connection is not reused after."""
        r = self._send(method, path, accept="text/event-stream", **kw)
        if r.status >= 400:
            raise error_of(r.status, r.read())
        try:
            name, data = "message", list[str]()
            while True:
                line = r.readline()
                if not line:
                    return
                text = line.decode("utf-8", "replace").rstrip("\r\n")
                if not text:
                    if data:
                        payload = "\n".join(data)
                        try:
                            yield name, json.loads(payload)
                        except ValueError:
                            yield name, payload
                    name, data = "message", list[str]()
                elif text.startswith(":"):
                    continue
                elif text.startswith("event:"):
                    name = text[6:].strip()
                elif text.startswith("data:"):
                    data.append(text[5:].lstrip(" "))
        finally:
            r.close()
            self.close()


class EngineGone(RuntimeNotAvailableError):
    """The engine or server stopped answering (the local engine is started afresh next call)."""

    def __init__(self, message: str) -> None:
        super().__init__(
            message,
            code="unavailable",
            actor="engine",
            fix="retry: a local engine is started again on the next call; for a server, check "
            "that it runs (`agentnest doctor`)",
        )


def _q(v: Any) -> Any:
    if isinstance(v, bool):
        return "true" if v else "false"
    return v


def _literal_loopback(host: str) -> bool:
    """Only literal loopback addresses and ``localhost``: ``127.example.org`` is not one."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


_BY_CODE: dict[str, type[AgentNestError]] = {
    "policy": PolicyDeniedError,
    "approval_denied": PolicyDeniedError,
    "forbidden": PolicyDeniedError,
    "quota": QuotaExceededError,
    "file": FileAccessError,
    "bad_path": FileAccessError,
    "body_too_large": FileAccessError,
    "not_found": SandboxDestroyedError,
}


def error_of(status: int, data: bytes) -> AgentNestError:
    """The exception for an error response (the engine's Error shape, or anything else)."""
    try:
        err = json.loads(data)["error"]
        code = str(err.get("code", ""))
        message = str(err.get("message", ""))
        fix = err.get("fix")
    except (ValueError, KeyError, TypeError):
        text = data[:500].decode("utf-8", "replace")
        return AgentNestError(f"HTTP {status}: {text}", status=status)
    reason = err.get("reason")
    cls = _BY_CODE.get(code, AgentNestError)
    if code == "not_found" and not message.startswith("sandbox"):
        # A missing file or snapshot is not a destroyed sandbox.
        cls = FileAccessError if reason or "file" in message or "path" in message \
            else AgentNestError
    if code == "sandbox_failed" and (
        "docker" in message.lower() or "image" in message.lower() or "backend" in message.lower()
    ):
        cls = RuntimeNotAvailableError
    actor = {
        PolicyDeniedError: "approval" if code == "approval_denied" else "policy",
        QuotaExceededError: "quota",
    }.get(cls, "engine")
    return cls(
        message,
        code=code,
        reason=None if reason is None else str(reason),
        actor=actor,
        fix=None if fix is None else str(fix),
        status=status,
        details={k: v for k, v in err.items() if k not in ("code", "message", "fix")},
    )
