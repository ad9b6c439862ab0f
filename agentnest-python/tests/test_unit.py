"""Unit tests: argument checks, error mapping and the wire, against a stub on a Unix socket."""

from __future__ import annotations

import json
import os
import socketserver
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

import agentnest
from agentnest import NetworkPolicy, SecurityPolicy
from agentnest._wire import Endpoint, Wire, _literal_loopback, error_of
from agentnest.sandbox import _size


def test_sizes_parse_the_forms_people_write() -> None:
    assert _size("memory", "512m") == 512 << 20
    assert _size("memory", "2g") == 2 << 30
    assert _size("memory", "1GiB") == 1 << 30
    assert _size("memory", 4096) == 4096


@pytest.mark.parametrize("bad", ["lots", "-1m", "", "12q"])
def test_a_bad_size_names_the_parameter_and_the_form(bad: str) -> None:
    with pytest.raises(ValueError, match=r"memory=.*'512m'|memory=.*positive"):
        _size("memory", bad)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"timeout": -1}, "timeout=-1"),
        ({"timeout": "5"}, "timeout must be a number"),
        ({"cpus": 0}, "cpus=0"),
        ({"pids": 2}, "pids=2"),
        ({"backend": "lxc"}, "backend='lxc'"),
        ({"environment": {"A": 1}}, "environment"),
        ({"memory": "much"}, "memory='much'"),
        ({"network_enabled": True}, "network_enabled=True needs the hosts"),
        ({"image": 3}, "image must be"),
        ({"limits": [("open_files", 64)]}, "limits must be a mapping"),
        ({"limits": {"open_files": 1.5}}, r"limits\['open_files'\]=1.5"),
        ({"limits": {"open_files": True}}, "give a whole number"),
        ({"limits": {3: 64}}, "not a limit name"),
    ],
)
def test_wrong_arguments_raise_python_errors_naming_the_parameter(
    kwargs: dict[str, object], match: str
) -> None:
    with pytest.raises((TypeError, ValueError), match=match):
        agentnest.Sandbox(**kwargs)  # type: ignore[arg-type]


def test_policy_values_are_checked_where_they_are_made() -> None:
    with pytest.raises(ValueError, match="max_output_bytes"):
        SecurityPolicy(max_output_bytes=0)
    with pytest.raises(ValueError, match="approvals"):
        SecurityPolicy(approvals="sometimes")
    with pytest.raises(ValueError, match="not a host name"):
        NetworkPolicy.allowlist(domains=["http://example.com/x"])
    assert NetworkPolicy.allowlist(domains=["*.example.org"]).enabled
    assert not NetworkPolicy.denied().enabled


@pytest.mark.parametrize(
    "host, loopback",
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("127.attacker.example", False),
        ("127.0.0.1.example.com", False),
        ("10.0.0.1", False),
    ],
)
def test_only_literal_loopback_counts_as_loopback(host: str, loopback: bool) -> None:
    assert _literal_loopback(host) is loopback


def test_a_key_is_never_sent_over_plain_http_to_a_name_that_looks_like_loopback() -> None:
    with pytest.raises(ValueError, match="plain HTTP"):
        Wire(Endpoint(key="ank_x", url="http://127.attacker.example:8787"))
    Wire(Endpoint(key="ank_x", url="http://127.0.0.1:8787"))


@pytest.mark.parametrize(
    "code, cls",
    [
        ("approval_denied", agentnest.PolicyDeniedError),
        ("policy", agentnest.PolicyDeniedError),
        ("quota", agentnest.QuotaExceededError),
        ("bad_path", agentnest.FileAccessError),
        ("not_found", agentnest.SandboxDestroyedError),
        ("internal", agentnest.AgentNestError),
    ],
)
def test_engine_errors_become_typed_exceptions_with_the_fix(
    code: str, cls: type[agentnest.AgentNestError]
) -> None:
    message = "sandbox 'x' not found" if code == "not_found" else "m"
    body = {"error": {"code": code, "message": message, "fix": "do f", "reason": "R"}}
    e = error_of(422, json.dumps(body).encode())
    assert type(e) is cls
    assert e.code == code and e.fix == "do f" and e.reason == "R" and "do f" in str(e)


def test_a_non_json_error_is_still_an_agentnest_error() -> None:
    e = error_of(502, b"<html>bad gateway</html>")
    assert isinstance(e, agentnest.AgentNestError) and "502" in str(e)


class _Stub(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        n = int(self.headers.get("Content-Length", 0))
        self.rfile.read(n)
        if self.headers.get("Accept") == "text/event-stream":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for chunk in (
                b": keep-alive\n\n",
                b'event: started\ndata: {"execution": "e1"}\n\n',
                b'event: stdout\ndata: {"text": "a\\n"}\n\n',
                b'event: stderr\ndata: {"text": "b"}\n\n',
                b'event: result\ndata: {"exitCode": 0}\n\n',
            ):
                self.wfile.write(chunk)
            return
        out = json.dumps({"auth": self.headers.get("Authorization")}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


@pytest.fixture()
def stub() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="an-")
    path = os.path.join(d, "s.sock")
    srv = socketserver.ThreadingUnixStreamServer(path, _Stub)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield path
    srv.shutdown()
    srv.server_close()
    Path(path).unlink(missing_ok=True)
    os.rmdir(d)


def test_the_wire_sends_the_key_over_the_unix_socket(stub: str) -> None:
    w = Wire(Endpoint(key="ank_secret", socket_path=stub))
    assert w.json("POST", "/v1/x", body={}) == {"auth": "Bearer ank_secret"}
    assert w.json("POST", "/v1/x", body={}) == {"auth": "Bearer ank_secret"}  # kept alive
    w.close()


def test_server_sent_events_arrive_as_named_events(stub: str) -> None:
    w = Wire(Endpoint(key="k", socket_path=stub))
    events = list(w.events("POST", "/v1/sandboxes/x/exec", body={"command": "x"}))
    assert events == [
        ("started", {"execution": "e1"}),
        ("stdout", {"text": "a\n"}),
        ("stderr", {"text": "b"}),
        ("result", {"exitCode": 0}),
    ]


def test_a_dead_socket_is_a_runtime_error_that_says_what_to_do() -> None:
    w = Wire(Endpoint(key="k", socket_path="/nonexistent/agentnest.sock"))
    with pytest.raises(agentnest.RuntimeNotAvailableError, match="did not answer") as e:
        w.json("GET", "/v1/tenant")
    assert e.value.fix


def test_results_say_ok_and_check_raises_naming_the_failure() -> None:
    r = agentnest.ExecutionResult("false", 1, "", "boom", 0.01)
    assert not r.ok
    with pytest.raises(agentnest.AgentNestError, match="exit code 1"):
        r.check()
    s = agentnest.SessionResult("1\n", "", None, None)
    out, err, result, error = s
    assert s.ok and s.check() is s and out == "1\n"


def test_secrets_and_credentials_are_checked_and_never_shown() -> None:
    s = agentnest.Secret("GITHUB_TOKEN", "ghp_abcdefghijklmnop")
    assert "ghp_" not in repr(s)
    with pytest.raises(ValueError, match="at least 8"):
        agentnest.Secret("X", "short")
    with pytest.raises(ValueError, match="Secret name"):
        agentnest.Secret("1BAD", "long enough value")
    p = NetworkPolicy.allowlist(domains=["pypi.org"]).inject("api.github.com", s)
    assert p.domains == ("pypi.org", "api.github.com")
    assert p.credentials[0].wire() == {
        "host": "api.github.com", "name": "GITHUB_TOKEN", "value": "ghp_abcdefghijklmnop",
        "header": "Authorization: Bearer ${secret:GITHUB_TOKEN}",
    }
    q = NetworkPolicy.denied().placeholder("api.example.com", s)
    assert q.credentials[0].wire()["placeholder"] is True and q.enabled
    with pytest.raises(ValueError, match="exactly one"):
        agentnest.Credential("h.example.com", s)


def test_the_engine_command_says_none_runs_and_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentnest.__main__ import main

    monkeypatch.setenv("AGENTNEST_HOME", str(tmp_path))
    assert main(["engine", "status"]) == 0
    assert "no engine running" in capsys.readouterr().out
    assert main(["engine", "stop"]) == 0
    assert "no engine was running" in capsys.readouterr().out
    # Neither started an engine (nor made its directory's files).
    assert not (tmp_path / "engine" / "engine.json").exists()
    with pytest.raises(SystemExit):
        main(["engine", "restart"])


def _scripted(answers: list[bytes]) -> tuple[str, threading.Thread]:
    """A Unix socket that answers each request (read up to its blank line and body) with the
    next of ``answers``, written in small pieces so that the client's reads are partial."""
    import socket as _socket
    import time as _time

    d = tempfile.mkdtemp(prefix="an-")
    path = os.path.join(d, "s.sock")
    srv = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)

    def serve() -> None:
        conn, _ = srv.accept()
        with conn, srv:
            for answer in answers:
                buf = b""
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    buf += chunk
                head, _, body = buf.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                while len(body) < length:
                    body += conn.recv(4096)
                try:
                    piece = 7 if len(answer) < 2000 else 4096
                    for i in range(0, len(answer), piece):
                        conn.sendall(answer[i : i + piece])
                        _time.sleep(0.0005)
                except OSError:  # the client gave up on a malformed answer: as it should
                    return

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return path, t


def _cleanup(path: str) -> None:
    Path(path).unlink(missing_ok=True)
    os.rmdir(os.path.dirname(path))


def test_the_local_wire_reads_lengths_chunks_and_empty_answers_in_pieces() -> None:
    missing = b'{"error": {"code": "not_found", "message": "file f"}}'
    path, t = _scripted([
        b'HTTP/1.1 200 OK\r\nContent-Length: 9\r\nContent-Type: application/json\r\n\r\n{"a": 1} ',
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'4\r\n{"b"\r\n5;ext=1\r\n: 2}\n\r\n0\r\nTrailer: x\r\n\r\n',
        b"HTTP/1.1 204 No Content\r\n\r\n",
        b"HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\n\r\n%s" % (len(missing), missing),
    ])
    w = Wire(Endpoint(key="k", socket_path=path))
    try:
        assert w.json("POST", "/v1/x", body={"code": "x"}) == {"a": 1}
        assert w.json("GET", "/v1/y") == {"b": 2}
        assert w.json("DELETE", "/v1/z") is None
        with pytest.raises(agentnest.AgentNestError) as e:
            w.json("GET", "/v1/missing")
        assert e.value.code == "not_found"
    finally:
        w.close()
        t.join(5)
        _cleanup(path)


def test_an_answer_that_ends_with_the_connection_is_read_whole_and_not_reused() -> None:
    path, t = _scripted([b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n[1, 2]"])
    w = Wire(Endpoint(key="k", socket_path=path))
    try:
        assert w.json("GET", "/v1/x") == [1, 2]
        assert w._local.fast is None
    finally:
        w.close()
        t.join(5)
        _cleanup(path)


@pytest.mark.parametrize(
    "answer",
    [
        b"SSH-2.0-OpenSSH_9.2\r\n\r\n",  # not HTTP at all
        b"HTTP/1.1 200 OK\r\n" + b"X-A: 1\r\n" * 101 + b"\r\n",  # a header flood
        b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 70000,  # a header line with no end
        b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort",  # cut before its length
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",  # a bad chunk size
    ],
)
def test_a_malformed_answer_is_a_clear_engine_error_never_a_hang(answer: bytes) -> None:
    path, t = _scripted([answer])
    w = Wire(Endpoint(key="k", socket_path=path), timeout=10)
    try:
        with pytest.raises(agentnest.RuntimeNotAvailableError, match="did not answer") as e:
            w.json("POST", "/v1/x", body={})
        assert e.value.fix
    finally:
        w.close()
        t.join(5)
        _cleanup(path)


@pytest.mark.parametrize("value, match", [("fast", "whole number"), ("-1", "0..100000")])
def test_a_bad_spin_setting_names_the_variable_and_the_form(
    value: str, match: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentnest import _wire

    monkeypatch.setenv("AGENTNEST_SPIN_MICROS", value)
    with pytest.raises(ValueError, match=f"AGENTNEST_SPIN_MICROS.*{match}"):
        _wire._spin_budget()
    monkeypatch.setenv("AGENTNEST_SPIN_MICROS", "0")
    assert _wire._spin_budget() == 0.0
