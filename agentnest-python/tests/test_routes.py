"""The routes that need no code of ours: the official E2B Python SDKs against `agentnest serve`'s
E2B face, and the `mcp` Python SDK and `langchain-mcp-adapters` against `agentnest mcp`."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentnest import _engine

pytestmark = pytest.mark.engine


def _java() -> list[str]:
    return [_engine.find_java(), "-jar", str(_engine.find_jar())]


@pytest.fixture(scope="module")
def server() -> Iterator[dict[str, str]]:
    home = Path(tempfile.mkdtemp(prefix="an-srv-", dir="/tmp"))
    env = dict(os.environ, AGENTNEST_HOME=str(home))
    env.pop("AGENTNEST_URL", None)
    key = subprocess.run(
        [*_java(), "tenant", "add", "pysdk"], env=env, capture_output=True, text=True,
        timeout=120, check=True,
    ).stdout.strip()
    log = open(home / "serve.log", "w+")  # noqa: SIM115 - the server writes to it while it runs
    proc = subprocess.Popen([*_java(), "serve", "--listen", "127.0.0.1:0"], env=env,
                            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    port = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and port is None:
        log.seek(0)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read())
        if m:
            port = m.group(1)
        elif proc.poll() is not None:
            break
        else:
            time.sleep(0.1)
    assert port, f"agentnest serve did not start: {(home / 'serve.log').read_text()[-2000:]}"
    try:
        yield {"port": port, "key": key}
    finally:
        proc.terminate()
        proc.wait(60)
        log.close()
        shutil.rmtree(home, ignore_errors=True)


def test_the_official_e2b_code_interpreter_sdk_runs_unchanged(
    server: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = f"http://127.0.0.1:{server['port']}"
    monkeypatch.setenv("E2B_API_URL", f"{base}/e2b")
    monkeypatch.setenv("E2B_SANDBOX_URL", f"{base}/e2b/sandbox")
    monkeypatch.setenv("E2B_API_KEY", server["key"])
    from e2b_code_interpreter import Sandbox as E2BSandbox

    sbx = E2BSandbox.create()
    try:
        sbx.run_code("x = 41")
        assert sbx.run_code("x + 1").text == "42"
        r = sbx.commands.run("echo hi")
        assert r.stdout == "hi\n" and r.exit_code == 0
        sbx.files.write("/home/user/a.txt", "data")
        assert sbx.files.read("/home/user/a.txt") == "data"
        err = sbx.run_code("1/0")
        assert err.error is not None and err.error.name == "ZeroDivisionError"
    finally:
        sbx.kill()


def test_the_mcp_python_sdk_and_langchain_mcp_adapters_drive_agentnest_mcp() -> None:
    from langchain_mcp_adapters.tools import load_mcp_tools
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    home = tempfile.mkdtemp(prefix="an-mcp-", dir="/tmp")
    java, *rest = _java()
    params = StdioServerParameters(
        command=java, args=[*rest, "mcp"], env=dict(os.environ, AGENTNEST_HOME=home)
    )

    async def main() -> tuple[list[str], str]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            tools = await load_mcp_tools(s)
            names = sorted(t.name for t in tools)
            by_name = {t.name: t for t in tools}
            code_tool = next(n for n in ("run_python", "python", "run_code") if n in by_name)
            out = await by_name[code_tool].ainvoke({"code": "print(6 * 7)"})
            return names, str(out)

    try:
        names, out = asyncio.run(main())
        assert "42" in out, out
        assert len(names) >= 10
    finally:
        shutil.rmtree(home, ignore_errors=True)
