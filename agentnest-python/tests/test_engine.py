"""Integration: the package against a real local engine it starts itself (Java, Docker)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

import agentnest
from agentnest import (
    AgentNestError,
    ExecutionTimeoutError,
    PolicyDeniedError,
    RuntimeNotAvailableError,
    Sandbox,
    SecurityPolicy,
    _engine,
)

pytestmark = pytest.mark.engine


def test_the_seed_example_runs_as_written(engine_home: Path) -> None:
    sandbox = Sandbox()
    res = sandbox.run_code("a = 10; print(a * 2)")
    assert res.output == "20\n"
    fork_sandbox = sandbox.fork()
    assert fork_sandbox.id != sandbox.id
    assert fork_sandbox.run_code("a").result == "10"
    sandbox.destroy()
    assert sandbox.destroyed
    fork_sandbox.destroy()


def test_session_state_files_and_commands(engine_home: Path) -> None:
    with Sandbox(environment={"MODE": "test"}) as sb:
        sb.run_code("import math\nx = math.sqrt(16)")
        assert sb.run_code("x").result == "4.0"
        err = sb.run_code("1/0")
        assert not err.ok and err.error is not None and err.error.name == "ZeroDivisionError"
        sh = sb.exec_shell("echo $MODE; echo oops >&2; exit 3")
        assert (sh.exit_code, sh.stdout, sh.stderr.strip(), sh.ok) == (3, "test\n", "oops", False)
        with pytest.raises(agentnest.AgentNestError, match="exit code 3"):
            sh.check()
        assert sb.exec(["python3", "-c", "print('no shell')"]).check().stdout == "no shell\n"
        fresh = sb.exec_python("print('x' in globals())")
        assert fresh.stdout == "False\n"  # a fresh process: the session's x is not there
        sb.write_file("data/in.txt", "hello")
        assert sb.read_file("/workspace/data/in.txt") == b"hello"
        arts = sb.artifacts("data/*.txt")
        assert [a.path for a in arts] == ["data/in.txt"] and arts[0].size == 5
        s = sb.python_session("analysis")
        s.run("import statistics; m = statistics.mean([1, 2, 3])")
        out, err_, result, error = s.run("m")
        assert (result, error) == ("2", None)
        assert sb.run_code("'m' in globals()").result == "False"  # sessions are independent


def test_streaming_yields_chunks_as_they_are_produced(engine_home: Path) -> None:
    with Sandbox() as sb:
        got: list[tuple[float, str]] = []
        for chunk in sb.stream_shell("echo one; sleep 1; echo two"):
            got.append((time.monotonic(), chunk))
        text = "".join(c for _, c in got)
        assert text == "one\ntwo\n"
        assert len(got) >= 2 and got[-1][0] - got[0][0] > 0.5  # not one chunk at the end


def test_a_timeout_raises_and_keeps_the_sandbox_its_files_and_variables(engine_home: Path) -> None:
    with Sandbox() as sb:
        sb.run_code("kept = 41")
        sb.write_file("f.txt", "still here")
        with pytest.raises(ExecutionTimeoutError) as e:
            sb.run_code("import time; print('before'); time.sleep(30)", timeout=2)
        assert e.value.result is not None
        with pytest.raises(ExecutionTimeoutError):
            sb.exec_shell("sleep 30", timeout=1)
        assert sb.run_code("kept + 1").result == "42"
        assert sb.read_file("f.txt") == b"still here"


def test_big_output_is_cut_and_says_so(engine_home: Path) -> None:
    with Sandbox(security_policy=SecurityPolicy(max_output_bytes=100_000)) as sb:
        r = sb.exec_shell("head -c 100000000 /dev/zero | tr '\\0' a")
        assert r.truncated and len(r.stdout) <= 100_000 and "truncated" in r.stderr


def test_invalid_utf8_and_hostile_file_names_are_handled(engine_home: Path) -> None:
    with Sandbox() as sb:
        r = sb.exec_shell("printf 'ok \\377\\376 end'")
        assert r.stdout.startswith("ok ") and r.stdout.endswith(" end")
        for bad in ("../etc/passwd", "/etc/passwd", "a/../../x"):
            with pytest.raises(agentnest.FileAccessError):
                sb.write_file(bad, "x")
        with pytest.raises(agentnest.FileAccessError):
            sb.read_file("nope.txt")


def _refusing(asked: list[agentnest.ApprovalRequest]) -> Any:
    """An approval hook that records each question and says no."""

    def hook(req: agentnest.ApprovalRequest) -> bool:
        asked.append(req)
        return False

    return hook


def test_an_approval_hook_refusal_reaches_the_code(engine_home: Path) -> None:
    asked: list[agentnest.ApprovalRequest] = []
    with Sandbox(approval_hook=_refusing(asked)) as sb:
        sb.write_file("keep.txt", "x")
        with pytest.raises(PolicyDeniedError, match="denied by approval_hook") as e:
            sb.exec_shell("rm keep.txt")
        assert e.value.actor == "approval" and e.value.details.get("kind") == "file.delete"
        assert [q.kind for q in asked] == ["file.delete"] and "keep.txt" in asked[0].target
        # Inside the session the refusal reaches the code as an exception it can handle.
        r = sb.run_code("import os\ntry:\n    os.remove('keep.txt')\nexcept OSError as e:\n"
                        "    print('refused:', e)")
        assert "refused:" in r.output, r
        assert sb.read_file("keep.txt") == b"x"


def test_a_streamed_command_gets_its_approval_answered_by_the_hook(engine_home: Path) -> None:
    asked: list[agentnest.ApprovalRequest] = []
    with Sandbox(approval_hook=_refusing(asked)) as sb:
        sb.write_file("keep.txt", "x")
        # Without the hook watching the stream, the question would wait out its timeout.
        started = time.monotonic()
        with pytest.raises(PolicyDeniedError, match="denied by approval_hook"):
            list(sb.stream_shell("echo before; rm keep.txt"))
        assert time.monotonic() - started < 30
        assert [q.kind for q in asked] == ["file.delete"]
        assert sb.read_file("keep.txt") == b"x"


def test_limits_by_name_reach_the_sandbox_and_a_wrong_name_is_refused(engine_home: Path) -> None:
    with Sandbox(limits={"open_files": 256, "tmp_size": "32m"}) as sb:
        assert sb.exec_shell("ulimit -n; ulimit -Hn").stdout.split() == ["256", "256"]
        assert sb.exec_shell("df -k /tmp | tail -1").stdout.split()[1] == "32768"
    with pytest.raises(AgentNestError, match="no limit named 'open_file'") as refused:
        Sandbox(limits={"open_file": 256})
    assert "open_files" in str(refused.value.fix)


def test_snapshot_and_restore(engine_home: Path) -> None:
    with Sandbox() as sb:
        sb.run_code("saved = [1, 2]")
        sb.write_file("s.txt", "snap")
        sb.snapshot("py-snap", replace=True)
    restored = Sandbox.restore("py-snap")
    try:
        assert restored.read_file("s.txt") == b"snap"
        assert restored.run_code("saved").result == "[1, 2]"
    finally:
        restored.destroy()


def test_the_next_sandbox_of_a_shape_comes_from_the_engines_warm_pool(own_home: Path) -> None:
    first = Sandbox(memory="256m")
    assert first.is_running() and "agentnest.pool" not in first.info["labels"]  # the first is cold
    first.destroy()
    # The engine starts a pool of that shape in the background: wait (bounded) for its member.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ps = subprocess.run(["docker", "ps", "-q", "--filter", "label=agentnest.pool"],
                            capture_output=True, text=True, timeout=30)
        if ps.stdout.strip():
            break
        time.sleep(0.5)
    with Sandbox(memory="256m", environment={"PER_USE": "yes"}) as pooled:
        # The create answer carries the labels it asked for; the engine's (a pool member's
        # among them) come with the sandbox's state, as is_running() reads it.
        assert "agentnest.pool" not in pooled.info.get("labels", {})
        assert pooled.is_running() and "agentnest.pool" in pooled.info["labels"]
        assert pooled.exec_shell("echo $PER_USE").stdout == "yes\n"  # per-use settings arrive
    with Sandbox(memory="300m") as other:  # another shape is cold, and nothing is shared
        assert other.is_running() and "agentnest.pool" not in other.info["labels"]


def test_secret_values_are_masked_and_credentials_never_enter_the_sandbox(
    engine_home: Path,
) -> None:
    token = agentnest.Secret("API_TOKEN", "tok-5f2c9a71e3b84d06")
    key = agentnest.Secret("OPENAI_API_KEY", "sk-test-7d1e0c4b9a3f2e8d")
    policy = SecurityPolicy(
        network=agentnest.NetworkPolicy.allowlist(domains=["pypi.example.com"])
        .placeholder("api.example.com", key)
        .inject("git.example.com", agentnest.Secret("GIT_TOKEN", "ghp_0a1b2c3d4e5f6a7b")),
    )
    with Sandbox(environment={"API_TOKEN": token, "MODE": "x"}, security_policy=policy) as sb:
        r = sb.exec_shell("echo $API_TOKEN; echo $OPENAI_API_KEY; env")
        assert token.value not in r.stdout and "API_TOKEN" in r.stdout  # in the sandbox, masked
        assert key.value not in r.stdout and "ghp_0a1b2c3d4e5f6a7b" not in r.stdout
        placeholder = r.stdout.splitlines()[1]
        assert placeholder and placeholder != key.value  # the sandbox holds only a stand-in
        assert r.redactions  # the engine says it masked something


def test_a_destroyed_sandbox_says_so(engine_home: Path) -> None:
    sb = Sandbox()
    sb.destroy()
    sb.destroy()  # idempotent
    with pytest.raises(agentnest.SandboxDestroyedError, match="create a new"):
        sb.run_code("1")


def test_async_sandbox_has_the_same_methods(engine_home: Path) -> None:
    import asyncio

    async def main() -> tuple[str, str]:
        async with await agentnest.AsyncSandbox.create() as sb:
            await sb.run_code("n = 5")
            r = await sb.run_code("n * 2")
            chunks = [c async for c in sb.stream_shell("echo hi")]
            return str(r.result), "".join(chunks)

    assert asyncio.run(main()) == ("10", "hi\n")


def test_a_second_process_reuses_the_engine(engine_home: Path) -> None:
    with Sandbox() as sb:
        sb.run_code("1")
    pid = json.loads((engine_home / "engine" / "engine.json").read_text())["pid"]
    code = (
        "import json, os, agentnest\n"
        "s = agentnest.Sandbox(); print(s.run_code('6*7').result); s.destroy()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
        env=dict(os.environ),
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "42"
    assert json.loads((engine_home / "engine" / "engine.json").read_text())["pid"] == pid


def test_the_engine_directory_and_socket_are_private(engine_home: Path) -> None:
    Sandbox().destroy()
    d = engine_home / "engine"
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    assert stat.S_IMODE((d / "key").stat().st_mode) == 0o600
    # Another user cannot connect: run a client as nobody (the tests run as root here).
    probe = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n"
        f"    s.connect({str(d / 'engine.sock')!r}); print('connected')\n"
        "except OSError as e:\n"
        "    print('refused', type(e).__name__)\n"
    )
    if os.getuid() == 0:
        out = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
             "-S", "-c", probe],
            capture_output=True, text=True, timeout=60,
        )
        assert out.stdout.startswith("refused"), out.stdout + out.stderr


def test_another_user_is_refused_even_when_the_directory_is_opened_by_mistake(
    own_home: Path,
) -> None:
    """The second lock: with the directory and socket opened to everyone (a mistake of the
    user's), the engine still closes a connection from another uid before reading a byte."""
    assert os.getuid() == 0, "this attack test needs root to act as another user"
    Sandbox().destroy()
    d = own_home / "engine"
    sock = d / "engine.sock"
    key = (d / "key").read_text().strip()
    os.chmod(own_home, 0o755)
    os.chmod(d, 0o755)
    os.chmod(sock, 0o777)
    probe = (
        "import socket\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        f"s.connect({str(sock)!r})\n"
        "print('connected')\n"
        "s.settimeout(10)\n"
        "try:\n"
        "    s.sendall(b'GET /v1/tenant HTTP/1.1\\r\\nHost: x\\r\\n'\n"
        f"              b'Authorization: Bearer {key}\\r\\n\\r\\n')\n"
        "    data = s.recv(4096)\n"
        "except OSError as e:\n"
        "    data = repr(e).encode()\n"
        "print('answer:', data[:40])\n"
    )
    try:
        out = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
             "-S", "-c", probe],
            capture_output=True, text=True, timeout=60,
        )
    finally:
        os.chmod(d, 0o700)
        os.chmod(own_home, 0o700)
    assert out.stdout.startswith("connected"), out.stdout + out.stderr  # the first lock opened
    assert "HTTP/1.1" not in out.stdout, out.stdout  # the second held: no answer at all
    # The owner is still served.
    with Sandbox() as sb:
        assert sb.run_code("1").result == "1"


def test_an_engine_killed_under_a_call_gives_a_clear_error_then_a_fresh_engine(
    own_home: Path,
) -> None:
    sb = Sandbox()
    sb.run_code("1")
    pid = json.loads((own_home / "engine" / "engine.json").read_text())["pid"]
    threading.Timer(1.5, os.kill, (pid, signal.SIGKILL)).start()
    with pytest.raises(RuntimeNotAvailableError, match="did not answer") as e:
        sb.exec_shell("sleep 20")
    assert e.value.fix and "retry" in e.value.fix
    with Sandbox() as again:
        assert again.run_code("2 + 2").result == "4"
    new_pid = json.loads((own_home / "engine" / "engine.json").read_text())["pid"]
    assert new_pid != pid
    # The sandbox of the killed engine is adopted by the new one (same store), so it is
    # still this user's to destroy.
    sb.destroy()
    _remove_what_a_killed_engine_left(pid)


def _remove_what_a_killed_engine_left(pid: int) -> None:
    """A SIGKILLed engine cannot end its warm pool's idle member (the documented contract: only
    SIGKILL leaves things to `agentnest prune`). Remove exactly what that engine owned."""
    ps = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=agentnest.owner-pid={pid}"],
        capture_output=True, text=True, timeout=60, check=True,
    )
    for cid in ps.stdout.split():
        bulk = subprocess.run(
            ["docker", "inspect", "--format", '{{index .Config.Labels "agentnest.bulk-dir"}}', cid],
            capture_output=True, text=True, timeout=60,
        ).stdout.strip()
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True, timeout=60, check=True)
        if bulk.startswith("/run/agentnest/bulk/"):
            shutil.rmtree(bulk, ignore_errors=True)


def _jar_with_version(tmp: Path, version: str) -> Path:
    src = _engine.find_jar()
    out = tmp / "agentnest-other.jar"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "META-INF/MANIFEST.MF":
                lines = [ln for ln in data.decode().splitlines()
                         if not ln.startswith("Implementation-Version:")]
                lines.insert(1, f"Implementation-Version: {version}")
                data = ("\r\n".join(lines) + "\r\n").encode()
            zout.writestr(item, data)
    return out


def test_a_version_mismatch_replaces_an_idle_engine_and_refuses_a_busy_one(
    own_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = _jar_with_version(tmp_path, "0.0.1-other")
    monkeypatch.setenv("AGENTNEST_JAR", str(other))
    busy = Sandbox()
    old_pid = json.loads((own_home / "engine" / "engine.json").read_text())["pid"]
    from agentnest import sandbox as sbmod

    sbmod._reset_local()
    monkeypatch.delenv("AGENTNEST_JAR")
    with pytest.raises(RuntimeNotAvailableError, match="holds 1 sandbox") as e:
        Sandbox()
    assert str(old_pid) in (e.value.fix or "")
    monkeypatch.setenv("AGENTNEST_JAR", str(other))
    sbmod._reset_local()
    busy.destroy()
    monkeypatch.delenv("AGENTNEST_JAR")
    sbmod._reset_local()
    with Sandbox() as sb:  # idle now: replaced by this package's version
        assert sb.run_code("1 + 1").result == "2"
    info = json.loads((own_home / "engine" / "engine.json").read_text())
    assert info["pid"] != old_pid and info["version"] == _engine.jar_version(_engine.find_jar())


def test_without_java_the_error_says_what_to_install(
    own_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(RuntimeNotAvailableError, match="Java is not installed") as e:
        Sandbox()
    assert "openjdk-17" in (e.value.fix or "")
