"""Exceptions of the AgentNest Python package.

Every error carries what the engine said: its error ``code`` (the ``/v1`` wire name), the
``reason`` (the engine's typed failure reason, e.g. ``NOT_FOUND``), the ``actor`` that refused
(``policy``, ``approval``, ``quota``, ``engine``...) and the ``fix`` the engine suggests.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AgentNestError",
    "ExecutionTimeoutError",
    "PolicyDeniedError",
    "SandboxDestroyedError",
    "FileAccessError",
    "RuntimeNotAvailableError",
    "QuotaExceededError",
]


class AgentNestError(Exception):
    """Base class: anything AgentNest refused or failed to do."""

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        reason: str | None = None,
        actor: str | None = None,
        fix: str | None = None,
        status: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        text = message if not fix else f"{message} (fix: {fix})"
        super().__init__(text)
        self.message = message
        self.code = code
        self.reason = reason
        self.actor = actor
        self.fix = fix
        self.status = status
        self.details = dict(details or {})


class ExecutionTimeoutError(AgentNestError):
    """An execution ran past its timeout. It was stopped; the sandbox, its files and the
    session's variables are kept (``result`` holds what it printed before it was stopped)."""

    def __init__(self, message: str, *, result: Any = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.result = result


class PolicyDeniedError(AgentNestError):
    """The policy, an approval rule or a person refused the operation."""


class SandboxDestroyedError(AgentNestError):
    """The sandbox is gone (destroyed, expired, or never existed for this user)."""


class FileAccessError(AgentNestError):
    """A file operation was refused or failed (bad path, not found, exists, too large)."""


class RuntimeNotAvailableError(AgentNestError):
    """What AgentNest needs is missing: Java, the engine, Docker, or the image. The message
    says what to install or start."""


class QuotaExceededError(AgentNestError):
    """A quota (sandboxes, memory, CPUs, requests, executions, snapshots) was reached."""
