"""The ``/v1`` wire: one HTTP client for the local engine's Unix socket and a remote server.

Standard library only. One keep-alive connection per thread; JSON bodies; server-sent events for
streams. Errors become the package's exceptions, carrying the engine's code, reason and fix.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from .errors import (
    AgentNestError,
    FileAccessError,
    PolicyDeniedError,
    QuotaExceededError,
    RuntimeNotAvailableError,
    SandboxDestroyedError,
)

# Methods whose request may be sent again when its answer went missing.
_IDEMPOTENT = ("GET", "HEAD", "DELETE", "PUT")
_C = TypeVar("_C")
_R = TypeVar("_R")

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


def _spin_budget() -> float:
    raw = os.environ.get("AGENTNEST_SPIN_MICROS", "2000")
    try:
        micros = int(raw)
    except ValueError:
        raise ValueError(
            f"AGENTNEST_SPIN_MICROS={raw!r} is not a whole number of microseconds: "
            "write e.g. 2000, or 0 to never poll"
        ) from None
    if not 0 <= micros <= 100_000:
        raise ValueError(f"AGENTNEST_SPIN_MICROS={micros}: give 0..100000 (0 never polls)")
    return micros / 1e6


# How long a caller polls the local socket for a short answer before it sleeps in recv. On an
# idle (virtual) machine a sleeping thread takes 0.1-0.2 ms to wake, as long as a session call
# takes in the engine; polling costs the CPU of the wait, at most this long a call, and only
# one call of the process polls at a time (others sleep), so threads never pile up spinning.
_SPIN = _spin_budget()
_spinning = threading.Lock()


class _Reply:
    """A whole answer: its status and body."""

    __slots__ = ("status", "body")

    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self.body = body


class _LocalHttp:
    """HTTP/1.1 on the local engine's Unix socket for calls answered in one body.

    ``http.client`` costs about 0.3 ms a call here: it writes the head and the body in two
    sends (the engine wakes twice, once for each) and parses the head with the email package.
    This writes a request in one send and reads the answer with a small parser of its own. Only
    for the engine this package started (a peer of the same user); streams keep ``http.client``.
    """

    _MAX_HEAD = 64 * 1024

    def __init__(self, path: str, timeout: float | None) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(timeout)
            s.connect(path)
        except BaseException:
            s.close()
            raise
        self._sock = s
        self._timeout = timeout
        self._buf = bytearray()

    def close(self) -> None:
        self._sock.close()

    def send(self, head: bytes, body: bytes | None) -> None:
        if body and len(body) > 65536:  # a file's bytes: not copied to join them
            self._sock.sendall(head)
            self._sock.sendall(body)
        else:
            self._sock.sendall(head + body if body else head)

    def _first(self) -> None:
        """Waits for the answer's first bytes: polls for up to ``_SPIN``, then sleeps."""
        if not self._buf and _SPIN > 0 and _spinning.acquire(blocking=False):
            # A socket with a timeout waits in poll() before every recv, whatever its flags:
            # the polling recv needs the socket non-blocking, and gets its timeout back after.
            self._sock.settimeout(0.0)
            try:
                end = time.perf_counter() + _SPIN
                while True:
                    try:
                        chunk = self._sock.recv(262144)
                    except BlockingIOError:
                        if time.perf_counter() >= end:
                            break
                        os.sched_yield()
                        continue
                    if not chunk:
                        raise http.client.RemoteDisconnected("the engine closed the connection")
                    self._buf += chunk
                    return
            finally:
                self._sock.settimeout(self._timeout)
                _spinning.release()

    def _more(self) -> None:
        chunk = self._sock.recv(262144)
        if not chunk:
            raise http.client.RemoteDisconnected("the engine closed the connection")
        self._buf += chunk

    def _line(self) -> bytes:
        while True:
            i = self._buf.find(b"\r\n")
            if i >= 0:
                line = bytes(self._buf[:i])
                del self._buf[: i + 2]
                return line
            if len(self._buf) > self._MAX_HEAD:
                raise http.client.LineTooLong("an answer's line")
            self._more()

    def _take(self, n: int) -> bytes:
        while len(self._buf) < n:
            self._more()
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def receive(self) -> tuple[_Reply, bool]:
        """The answer and whether the connection may carry another request."""
        self._first()
        status_line = self._line()
        parts = status_line.split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise http.client.BadStatusLine(status_line.decode("latin-1", "replace")[:100])
        headers: dict[str, str] = {}
        for _ in range(101):
            line = self._line()
            if not line:
                break
            name, _, value = line.partition(b":")
            headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
        else:
            raise http.client.HTTPException("an answer with more than 100 header lines")
        keep = headers.get("connection", "").lower() != "close"
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = bytearray()
            while True:
                size = int(self._line().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self._line():  # trailers
                        pass
                    break
                body += self._take(size)
                self._take(2)
            data = bytes(body)
        elif "content-length" in headers:
            data = self._take(int(headers["content-length"]))
        elif int(parts[1]) in (204, 304):
            data = b""
        else:  # delimited by the end of the connection
            while True:
                try:
                    self._more()
                except http.client.RemoteDisconnected:
                    break
            data, keep = bytes(self._buf), False
            self._buf.clear()
        return _Reply(int(parts[1]), data), keep


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
        for attr in ("conn", "fast"):
            c = getattr(self._local, attr, None)
            if c is not None:
                c.close()
                setattr(self._local, attr, None)
        self._local.used = False
        self._local.fast_used = False

    def _path(self, path: str, query: dict[str, Any] | None) -> str:
        base = "" if self.endpoint.socket_path else self._base
        if query:
            q = urllib.parse.urlencode(
                {k: _q(v) for k, v in query.items() if v is not None}, doseq=True
            )
            return f"{base}{path}?{q}"
        return base + path

    def _head(
        self, method: str, path: str, query: dict[str, Any] | None, accept: str,
        body: Any, raw: bytes | None,
    ) -> tuple[dict[str, str], bytes | None, str]:
        headers = {"Authorization": f"Bearer {self.endpoint.key}", "Accept": accept}
        data: bytes | None = None
        if raw is not None:
            data = raw
            headers["Content-Type"] = "application/octet-stream"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        return headers, data, self._path(path, query)

    def _whole(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        raw: bytes | None = None,
        query: dict[str, Any] | None = None,
        accept: str = "application/json",
    ) -> _Reply:
        """A call whose answer is read whole: on the local socket without ``http.client``."""
        sock_path = self.endpoint.socket_path
        if sock_path is None:
            r = self._send(method, path, body=body, raw=raw, query=query, accept=accept)
            return _Reply(r.status, r.read())
        headers, data, target = self._head(method, path, query, accept, body, raw)
        lines = [f"{method} {target} HTTP/1.1", "Host: localhost"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        lines.append(f"Content-Length: {len(data) if data is not None else 0}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

        def send() -> _LocalHttp:
            c: _LocalHttp | None = getattr(self._local, "fast", None)
            if c is None:
                c = _LocalHttp(sock_path, self._timeout)
                self._local.fast = c
            c.send(head, data)
            return c

        def receive(c: _LocalHttp) -> _Reply:
            reply, keep = c.receive()
            if keep:
                self._local.fast_used = True
            else:
                c.close()
                self._local.fast = None
                self._local.fast_used = False
            return reply

        return self._twice(
            method,
            lambda: getattr(self._local, "fast", None) is not None
            and getattr(self._local, "fast_used", False),
            send,
            receive,
            (*_GONE, http.client.HTTPException, OSError, ValueError),
            _GONE,
        )

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
        headers, data, target = self._head(method, path, query, accept, body, raw)

        def send() -> http.client.HTTPConnection:
            c = self._conn()
            c.request(method, target, body=data, headers=headers)
            return c

        def receive(c: http.client.HTTPConnection) -> http.client.HTTPResponse:
            r = c.getresponse()
            self._local.used = not r.will_close
            return r

        return self._twice(
            method,
            lambda: getattr(self._local, "used", False),
            send,
            receive,
            (*_GONE, OSError),
            (*_GONE, OSError),
        )

    def _twice(
        self,
        method: str,
        reused: Callable[[], bool],
        send: Callable[[], _C],
        receive: Callable[[_C], _R],
        failures: tuple[type[BaseException], ...],
        retryable: tuple[type[BaseException], ...],
    ) -> _R:
        """One request, sent again once on a fresh connection where a kept-alive one turned out
        closed (the server ended it while idle): when sending fails the request never got there,
        so any method is sent again; when the answer is missing, only an idempotent one is (it
        may have been acted on), and only for a ``retryable`` failure."""
        for attempt in (0, 1):
            was_reused = reused()
            try:
                c = send()
            except OSError as e:
                self.close()
                if attempt == 0 and was_reused:
                    continue
                raise self._gone(e) from e
            try:
                return receive(c)
            except failures as e:
                self.close()
                if attempt == 0 and was_reused and method in _IDEMPOTENT \
                        and isinstance(e, retryable):
                    continue
                raise self._gone(e) from e
        raise AssertionError("unreachable")

    def _gone(self, e: BaseException) -> EngineGone:
        return EngineGone(f"{self.endpoint.describe()} did not answer ({type(e).__name__}: {e})")

    def json(self, method: str, path: str, **kw: Any) -> Any:
        r = self._whole(method, path, **kw)
        if r.status >= 400:
            raise error_of(r.status, r.body)
        if not r.body:
            return None
        return json.loads(r.body)

    def bytes(self, method: str, path: str, **kw: Any) -> bytes:
        r = self._whole(method, path, accept="application/octet-stream", **kw)
        if r.status >= 400:
            raise error_of(r.status, r.body)
        return r.body

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
