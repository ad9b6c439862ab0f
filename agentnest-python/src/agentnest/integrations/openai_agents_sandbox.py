"""AgentNest as a sandbox backend of the OpenAI Agents SDK (``agents.sandbox``).

A ``SandboxAgent`` gets the SDK's own shell and filesystem tools, and every command they run goes
through an AgentNest sandbox: hardened container, policy, audit and approvals of the engine.

>>> from agents import Runner                                                   # doctest: +SKIP
>>> from agents.run_config import RunConfig, SandboxRunConfig                   # doctest: +SKIP
>>> from agents.sandbox import SandboxAgent                                     # doctest: +SKIP
>>> from agentnest.integrations.openai_agents_sandbox import (                  # doctest: +SKIP
...     AgentNestSandboxClient, AgentNestSandboxClientOptions)
>>> agent = SandboxAgent(name="coder", instructions="...")                      # doctest: +SKIP
>>> Runner.run_sync(agent, "...", run_config=RunConfig(sandbox=SandboxRunConfig(  # doctest: +SKIP
...     client=AgentNestSandboxClient(), options=AgentNestSandboxClientOptions())))

Live objects (an approval hook, a security policy with secrets) belong to the client, never to
the options or the session state: those are serialized into a run's state, and a secret must
not be.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import shlex
import uuid
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Literal

from agents.sandbox.errors import (
    ExecTimeoutError,
    ExecTransportError,
    InvalidManifestPathError,
    WorkspaceArchiveReadError,
    WorkspaceArchiveWriteError,
    WorkspaceReadNotFoundError,
)
from agents.sandbox.manifest import Manifest
from agents.sandbox.session import SandboxSession, SandboxSessionState
from agents.sandbox.session.base_sandbox_session import BaseSandboxSession
from agents.sandbox.session.sandbox_client import BaseSandboxClient, BaseSandboxClientOptions
from agents.sandbox.snapshot import SnapshotBase, SnapshotSpec, resolve_snapshot
from agents.sandbox.types import ExecResult, User

from ..errors import (
    AgentNestError,
    ExecutionTimeoutError,
    FileAccessError,
    PolicyDeniedError,
    SandboxDestroyedError,
)
from ..policy import SecurityPolicy
from ..sandbox import ApprovalRequest, Sandbox

__all__ = [
    "AgentNestSandboxClient",
    "AgentNestSandboxClientOptions",
    "AgentNestSandboxSession",
    "AgentNestSandboxSessionState",
]

_WORKSPACE = PurePosixPath("/workspace")
# The engine's largest output of one call: the persisted workspace travels as base64 within it.
_MAX_ARCHIVE_OUTPUT = 64 << 20


class AgentNestSandboxClientOptions(BaseSandboxClientOptions):
    """What a fresh sandbox is made of; plain data, kept in the run's serialized state."""

    type: Literal["agentnest"] = "agentnest"
    image: str | None = None
    timeout: float = 1800
    memory: str = "512m"
    cpus: float = 1.0
    pids: int = 256
    backend: str = "docker"
    environment: dict[str, str] | None = None

    def __init__(
        self,
        image: str | None = None,
        timeout: float = 1800,
        memory: str = "512m",
        cpus: float = 1.0,
        pids: int = 256,
        backend: str = "docker",
        environment: dict[str, str] | None = None,
        *,
        type: Literal["agentnest"] = "agentnest",
    ) -> None:
        super().__init__(type=type, image=image, timeout=timeout, memory=memory, cpus=cpus,
                         pids=pids, backend=backend, environment=environment)


class AgentNestSandboxSessionState(SandboxSessionState):
    type: Literal["agentnest"] = "agentnest"
    sandbox_id: str
    options: AgentNestSandboxClientOptions


class AgentNestSandboxSession(BaseSandboxSession):
    """One AgentNest sandbox behind the SDK's session interface."""

    state: AgentNestSandboxSessionState

    def __init__(self, *, state: AgentNestSandboxSessionState, sandbox: Sandbox) -> None:
        self.state = state
        self.sandbox = sandbox

    @property
    def sandbox_id(self) -> str:
        return self.state.sandbox_id

    def _workspace_relative(self, path: Path | str) -> str:
        """The SDK's confined path as the engine's files API takes it (relative to /workspace);
        the engine checks it again (symlinks included)."""
        p = PurePosixPath(self.normalize_path(path).as_posix())
        try:
            return p.relative_to(_WORKSPACE).as_posix().removeprefix(".")
        except ValueError:
            raise InvalidManifestPathError(
                rel=p.as_posix(), reason="escape_root",
                context={"fix": "AgentNest's files API serves /workspace only: use a path under "
                         "/workspace (extra path grants outside it are not supported)"},
            ) from None

    async def _exec_internal(self, *command: str | Path, timeout: float | None = None
                             ) -> ExecResult:
        argv = [str(c) for c in command]
        if len(argv) >= 4 and argv[0] == "sudo" and argv[1] == "-u" and argv[3] == "--":
            # The sandbox runs everything as one unprivileged user with no sudo; say so rather
            # than run the command as someone it did not ask for.
            raise ExecTransportError(
                command=argv,
                message=f"running as user {argv[2]!r} is not supported: an AgentNest sandbox has "
                "one unprivileged user (drop run_as / user= from the capability or the manifest)",
            )
        try:
            res = await asyncio.to_thread(self.sandbox.exec, argv, timeout=timeout)
        except ExecutionTimeoutError as e:
            raise ExecTimeoutError(command=argv, timeout_s=timeout, cause=e) from e
        except PolicyDeniedError as e:
            # A refusal is an answer the model reads and works around, as a shell's "permission
            # denied" is, not a failure of the run: exit 126, the reason on stderr.
            return ExecResult(stdout=b"", stderr=f"[refused by the sandbox's policy or a person] "
                              f"{e}\n".encode(), exit_code=126)
        except AgentNestError as e:
            raise ExecTransportError(command=argv, cause=e, message=str(e)) from e
        return ExecResult(stdout=res.stdout.encode("utf-8", "replace"),
                          stderr=res.stderr.encode("utf-8", "replace"), exit_code=res.exit_code)

    async def read(self, path: Path, *, user: str | User | None = None) -> io.IOBase:
        rel = self._workspace_relative(path)
        try:
            data = await asyncio.to_thread(self.sandbox.read_file, rel)
        except FileAccessError as e:
            if e.code == "not_found" or (e.reason or "").lower() == "not_found":
                raise WorkspaceReadNotFoundError(path=path, cause=e) from e
            raise WorkspaceArchiveReadError(path=path, cause=e) from e
        return io.BytesIO(data)

    async def write(self, path: Path, data: io.IOBase, *, user: str | User | None = None
                    ) -> None:
        rel = self._workspace_relative(path)
        payload = data.read()
        raw = payload.encode("utf-8") if isinstance(payload, str) else bytes(payload)
        try:
            await asyncio.to_thread(self.sandbox.write_file, rel, raw)
        except AgentNestError as e:
            raise WorkspaceArchiveWriteError(path=path, cause=e) from e

    async def running(self) -> bool:
        return await asyncio.to_thread(self.sandbox.is_running)

    async def persist_workspace(self) -> io.IOBase:
        """The workspace as a tar with workspace-relative names, made by tar in the sandbox and
        sent as base64 output: it passes the engine's output redaction like any other output (a
        file holding one of the sandbox's secrets fails to persist rather than leave the
        sandbox), and it stages nothing in the workspace that would need deleting."""
        excludes = [f"--exclude=./{p.as_posix()}"
                    for p in sorted(self._persist_workspace_skip_relpaths())]
        script = "tar -C /workspace " + " ".join(shlex.quote(e) for e in excludes) \
            + " -cf - . | base64 -w0"
        try:
            res = await asyncio.to_thread(self.sandbox.exec, ["sh", "-c", script],
                                          max_output_bytes=_MAX_ARCHIVE_OUTPUT)
        except AgentNestError as e:
            raise WorkspaceArchiveReadError(path=Path(str(_WORKSPACE)), cause=e) from e
        if res.truncated:
            raise WorkspaceArchiveReadError(
                path=Path(str(_WORKSPACE)),
                context={"reason": "workspace_too_large",
                         "fix": f"keep the workspace under {_MAX_ARCHIVE_OUTPUT * 3 // 4 >> 20} "
                         "MiB, or use the engine's own snapshots (Sandbox.snapshot)"})
        if not res.ok:
            raise WorkspaceArchiveReadError(
                path=Path(str(_WORKSPACE)),
                context={"reason": "tar_failed", "stderr": res.stderr[-2000:]})
        try:
            return io.BytesIO(base64.b64decode(res.stdout.strip(), validate=True))
        except binascii.Error as e:
            # Redaction replaced part of it: a secret of the sandbox is in a workspace file.
            raise WorkspaceArchiveReadError(
                path=Path(str(_WORKSPACE)),
                context={"reason": "redacted",
                         "fix": "a workspace file holds one of the sandbox's secrets; remove it "
                         "before the snapshot"}, cause=e) from e

    async def hydrate_workspace(self, data: io.IOBase) -> None:
        raw = data.read()
        tar = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
        try:
            await asyncio.to_thread(self.sandbox.upload_archive, tar, "")
        except AgentNestError as e:
            raise WorkspaceArchiveWriteError(path=Path(str(_WORKSPACE)), cause=e) from e

    async def _shutdown_backend(self) -> None:
        await asyncio.to_thread(self.sandbox.destroy)


class AgentNestSandboxClient(BaseSandboxClient[AgentNestSandboxClientOptions]):
    """Creates, resumes and deletes AgentNest sandboxes for ``Runner`` (local engine, or the
    server named by ``AGENTNEST_URL``)."""

    backend_id = "agentnest"

    def __init__(
        self,
        *,
        approval_hook: Callable[[ApprovalRequest], bool] | None = None,
        security_policy: SecurityPolicy | None = None,
    ) -> None:
        if security_policy is not None and not isinstance(security_policy, SecurityPolicy):
            raise TypeError("security_policy must be an agentnest.SecurityPolicy")
        self._approval_hook = approval_hook
        self._policy = security_policy

    def _new_sandbox(self, options: AgentNestSandboxClientOptions,
                     environment: dict[str, str]) -> Sandbox:
        return Sandbox(
            options.image, options.timeout, environment=environment or None,
            memory=options.memory, cpus=options.cpus, pids=options.pids,
            backend=options.backend, security_policy=self._policy,
            approval_hook=self._approval_hook)

    async def create(
        self,
        *,
        snapshot: SnapshotSpec | SnapshotBase | None = None,
        manifest: Manifest | None = None,
        options: AgentNestSandboxClientOptions,
    ) -> SandboxSession:
        if not isinstance(options, AgentNestSandboxClientOptions):
            raise TypeError("AgentNestSandboxClient.create takes AgentNestSandboxClientOptions")
        manifest = self._validate_manifest_for_create(manifest or Manifest())
        if PurePosixPath(manifest.root) != _WORKSPACE:
            raise ValueError(f"manifest root {manifest.root!r}: an AgentNest sandbox's workspace "
                             "is /workspace (leave Manifest.root at its default)")
        environment = {**(options.environment or {}), **await manifest.environment.resolve()}
        sandbox = await asyncio.to_thread(self._new_sandbox, options, environment)
        session_id = uuid.uuid4()
        state = AgentNestSandboxSessionState(
            session_id=session_id, manifest=manifest,
            snapshot=resolve_snapshot(snapshot, str(session_id)),
            sandbox_id=sandbox.id, options=options)
        return self._wrap_session(AgentNestSandboxSession(state=state, sandbox=sandbox))

    async def delete(self, session: SandboxSession) -> SandboxSession:
        inner = session._inner
        if not isinstance(inner, AgentNestSandboxSession):
            raise TypeError("AgentNestSandboxClient.delete expects an AgentNestSandboxSession")
        await asyncio.to_thread(inner.sandbox.destroy)
        return session

    async def resume(self, state: SandboxSessionState) -> SandboxSession:
        """Reattaches to the same sandbox (files and Python sessions kept); when it is gone, a
        fresh one is made and the SDK hydrates it from the state's snapshot."""
        if not isinstance(state, AgentNestSandboxSessionState):
            raise TypeError("AgentNestSandboxClient.resume expects an AgentNestSandboxSessionState")
        state.assert_path_grants_rebound()
        reattached = True
        try:
            sandbox = await asyncio.to_thread(
                lambda: Sandbox.connect(state.sandbox_id, approval_hook=self._approval_hook))
        except SandboxDestroyedError:
            reattached = False
            environment = {**(state.options.environment or {}),
                           **await state.manifest.environment.resolve()}
            sandbox = await asyncio.to_thread(self._new_sandbox, state.options, environment)
            state.sandbox_id = sandbox.id
            state.workspace_root_ready = False
        inner = AgentNestSandboxSession(state=state, sandbox=sandbox)
        inner._set_start_state_preserved(reattached, system=reattached)
        return self._wrap_session(inner)

    def deserialize_session_state(self, payload: dict[str, object]) -> SandboxSessionState:
        return self._deserialize_session_state_payload(payload, AgentNestSandboxSessionState)
