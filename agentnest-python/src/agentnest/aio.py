"""``AsyncSandbox``: the same methods as coroutines (each call runs on a worker thread, so an
event loop is never blocked by a sandbox call)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from .results import Artifact, CodeResult, ExecutionResult, SessionResult
from .sandbox import PythonSession, Sandbox

__all__ = ["AsyncSandbox", "AsyncPythonSession"]


class AsyncSandbox:
    def __init__(self, sandbox: Sandbox) -> None:
        self.sync = sandbox

    @classmethod
    async def create(cls, *args: Any, **kw: Any) -> AsyncSandbox:
        return cls(await asyncio.to_thread(Sandbox, *args, **kw))

    @property
    def id(self) -> str:
        return self.sync.id

    @property
    def destroyed(self) -> bool:
        return self.sync.destroyed

    async def __aenter__(self) -> AsyncSandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.destroy()

    async def destroy(self) -> None:
        await asyncio.to_thread(self.sync.destroy)

    async def run_code(self, code: str, **kw: Any) -> CodeResult:
        return await asyncio.to_thread(self.sync.run_code, code, **kw)

    async def exec_shell(self, cmd: str, **kw: Any) -> ExecutionResult:
        return await asyncio.to_thread(self.sync.exec_shell, cmd, **kw)

    async def exec(self, argv: list[str], **kw: Any) -> ExecutionResult:
        return await asyncio.to_thread(self.sync.exec, argv, **kw)

    async def exec_python(self, code: str, **kw: Any) -> ExecutionResult:
        return await asyncio.to_thread(self.sync.exec_python, code, **kw)

    async def stream_shell(self, cmd: str, **kw: Any) -> AsyncIterator[str]:
        it = iter(self.sync.stream_shell(cmd, **kw))
        sentinel = object()
        while True:
            chunk = await asyncio.to_thread(next, it, sentinel)
            if chunk is sentinel:
                return
            assert isinstance(chunk, str)
            yield chunk

    async def write_file(self, path: str, data: str | bytes) -> None:
        await asyncio.to_thread(self.sync.write_file, path, data)

    async def read_file(self, path: str) -> bytes:
        return await asyncio.to_thread(self.sync.read_file, path)

    async def artifacts(self, pattern: str = "**") -> list[Artifact]:
        return await asyncio.to_thread(self.sync.artifacts, pattern)

    async def fork(self) -> AsyncSandbox:
        return AsyncSandbox(await asyncio.to_thread(self.sync.fork))

    async def snapshot(self, name: str, **kw: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.snapshot, name, **kw)

    @classmethod
    async def restore(cls, name: str) -> AsyncSandbox:
        return cls(await asyncio.to_thread(Sandbox.restore, name))

    def python_session(self, name: str = "default") -> AsyncPythonSession:
        return AsyncPythonSession(self.sync.python_session(name))


class AsyncPythonSession:
    def __init__(self, session: PythonSession) -> None:
        self.sync = session

    async def run(self, code: str, **kw: Any) -> SessionResult:
        return await asyncio.to_thread(self.sync.run, code, **kw)
