"""The local engine: one per user, started on first use from the bundled jar.

It is ``agentnest engine`` (the server in single-user mode) on a Unix socket under
``AGENTNEST_HOME/engine`` (directory 0700; the engine also checks each peer's uid). Every Python
process of the user shares it; it exits by itself after it has been idle. A running engine of
another version is replaced when it holds no sandboxes, and refused with the fix when it does.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import time
import zipfile
from pathlib import Path
from typing import Any

from ._wire import Endpoint, Wire
from .errors import AgentNestError, RuntimeNotAvailableError

_START_TIMEOUT = float(os.environ.get("AGENTNEST_ENGINE_START_TIMEOUT", "120"))


def home() -> Path:
    h = os.environ.get("AGENTNEST_HOME")
    return Path(h).expanduser() if h else Path.home() / ".agentnest"


def engine_dir() -> Path:
    return home() / "engine"


def find_jar() -> Path:
    """The engine's jar: ``AGENTNEST_JAR``, the bundled one, or a checkout's build."""
    env = os.environ.get("AGENTNEST_JAR")
    if env:
        p = Path(env)
        if not p.is_file():
            raise RuntimeNotAvailableError(
                f"AGENTNEST_JAR={env} is not a file", fix="point it at agentnest.jar, or unset it"
            )
        return p
    bundled = Path(__file__).parent / "_engine_jar" / "agentnest.jar"
    if bundled.is_file():
        return bundled
    # An editable install in a checkout: the CLI module's build.
    for parent in Path(__file__).resolve().parents:
        cand = parent / "agentnest-cli" / "target" / "agentnest.jar"
        if cand.is_file():
            return cand
    raise RuntimeNotAvailableError(
        "the AgentNest engine (agentnest.jar) is not bundled in this installation",
        actor="engine",
        fix="reinstall the package from a built checkout (`pip install ./agentnest-python` builds "
        "it), or set AGENTNEST_JAR, or use a server with AGENTNEST_URL and AGENTNEST_API_KEY",
    )


def jar_version(jar: Path) -> str:
    try:
        with zipfile.ZipFile(jar) as z:
            manifest = z.read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        raise RuntimeNotAvailableError(
            f"{jar} is not a readable AgentNest jar: {e}", fix="rebuild or reinstall the package"
        ) from e
    for line in manifest.splitlines():
        if line.startswith("Implementation-Version:"):
            return line.split(":", 1)[1].strip()
    return "dev"


def find_java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    cand = Path(java_home) / "bin" / "java" if java_home else None
    java = str(cand) if cand and cand.is_file() else shutil.which("java")
    if not java:
        raise RuntimeNotAvailableError(
            "Java is not installed (the local engine runs on Java 17 or newer)",
            actor="engine",
            fix="install Java 17+ (Debian/Ubuntu: apt-get install openjdk-17-jre-headless) or "
            "set JAVA_HOME; or use a server with AGENTNEST_URL and AGENTNEST_API_KEY",
        )
    return java


def _read_info(d: Path) -> dict[str, Any] | None:
    try:
        info = json.loads((d / "engine.json").read_text())
        return info if isinstance(info, dict) else None
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    # An engine this process started and that has exited is a zombie until reaped.
    with contextlib.suppress(ChildProcessError, OSError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _endpoint(d: Path, info: dict[str, Any]) -> Endpoint | None:
    try:
        key = (d / "key").read_text().strip()
    except OSError:
        return None
    sock = str(info.get("socket") or d / "engine.sock")
    return Endpoint(key=key, socket_path=sock)


def _answers(ep: Endpoint) -> bool:
    w = Wire(ep, timeout=5)
    try:
        w.json("GET", "/v1/tenant")
        return True
    except AgentNestError:
        return False
    finally:
        w.close()


def _check_private(d: Path) -> None:
    st = d.lstat()
    if st.st_uid != os.getuid() or (st.st_mode & 0o077):
        raise RuntimeNotAvailableError(
            f"{d} is not private to this user (mode {oct(st.st_mode & 0o777)}, uid {st.st_uid})",
            actor="engine",
            fix=f"remove {d} (it is recreated with mode 0700) or set AGENTNEST_HOME",
        )


def connect(idle_exit: str | None = None) -> Endpoint:
    """A running local engine of this package's version, started if needed."""
    jar = find_jar()
    want = jar_version(jar)
    d = engine_dir()
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    _check_private(d)
    ep = _running(d, want)
    if ep is not None:
        return ep
    with open(d / "start.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ep = _running(d, want)  # another process may have started it while we waited
        if ep is not None:
            return ep
        return _start(d, jar, idle_exit)


def _running(d: Path, want: str) -> Endpoint | None:
    info = _read_info(d)
    if not info or not isinstance(info.get("pid"), int) or not _alive(info["pid"]):
        return None
    ep = _endpoint(d, info)
    if ep is None or not _answers(ep):
        return None
    have = str(info.get("version"))
    if have != want:
        _replace(d, ep, info, have, want)
        return None
    return ep


def _replace(d: Path, ep: Endpoint, info: dict[str, Any], have: str, want: str) -> None:
    w = Wire(ep, timeout=10)
    try:
        boxes = w.json("GET", "/v1/sandboxes").get("sandboxes", [])
    finally:
        w.close()
    pid = int(info["pid"])
    if boxes:
        raise RuntimeNotAvailableError(
            f"the local engine running now is version {have}, this package needs {want}, and it "
            f"holds {len(boxes)} sandbox(es) of another program",
            actor="engine",
            fix=f"destroy those sandboxes, or stop that engine (kill {pid}), then retry",
        )
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _alive(pid):
        raise RuntimeNotAvailableError(
            f"the local engine of version {have} (pid {pid}) did not stop within 20 s",
            actor="engine",
            fix=f"kill {pid} and retry",
        )


def _start(d: Path, jar: Path, idle_exit: str | None) -> Endpoint:
    java = find_java()
    log = d / "engine.log"
    cmd = [java, "-XX:+UseSerialGC", "-jar", str(jar), "engine"]
    idle = idle_exit or os.environ.get("AGENTNEST_ENGINE_IDLE_EXIT")
    if idle:
        cmd += ["--idle-exit", idle]
    with contextlib.suppress(FileNotFoundError):
        (d / "engine.json").unlink()
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            raise RuntimeNotAvailableError(
                f"the local engine exited at start (exit {code}): {_tail(log)}",
                actor="engine",
                fix=f"see {log}; `agentnest doctor` checks Docker and the image",
            )
        info = _read_info(d)
        if info and info.get("pid") == proc.pid:
            ep = _endpoint(d, info)
            if ep is not None and _answers(ep):
                return ep
        time.sleep(0.05)
    proc.terminate()
    raise RuntimeNotAvailableError(
        f"the local engine did not answer within {_START_TIMEOUT:.0f} s: {_tail(log)}",
        actor="engine",
        fix=f"see {log}",
    )


def _tail(log: Path, lines: int = 8) -> str:
    try:
        text = log.read_text("utf-8", "replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) or "(empty log)"


def stop() -> bool:
    """Stops this user's local engine (its sandboxes are destroyed); False when none ran."""
    d = engine_dir()
    info = _read_info(d)
    if not info or not isinstance(info.get("pid"), int) or not _alive(info["pid"]):
        return False
    os.kill(info["pid"], signal.SIGTERM)
    deadline = time.monotonic() + 30
    while _alive(info["pid"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(info["pid"])


def status() -> str:
    """One line about this user's engine: running (pid, version, socket) or not."""
    d = engine_dir()
    info = _read_info(d)
    if not info or not isinstance(info.get("pid"), int) or not _alive(info["pid"]):
        return f"no engine running (AGENTNEST_HOME={home()})"
    return (
        f"engine {info.get('version', '?')} running, pid {info['pid']}, "
        f"socket {info.get('socket') or d / 'engine.sock'}"
    )
