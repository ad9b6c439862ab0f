"""Results: values, never live objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .errors import AgentNestError

__all__ = ["ExecutionResult", "CodeResult", "CodeError", "SessionResult", "Artifact", "FileInfo"]


@dataclass(frozen=True)
class CodeError:
    """An exception raised by the code in the sandbox (a result, not an exception here)."""

    name: str
    value: str
    traceback: str


@dataclass(frozen=True)
class ExecutionResult:
    """A shell command or program: a failing command is a result with ``ok == False``."""

    command: str | list[str]
    exit_code: int
    stdout: str
    stderr: str
    duration: float
    truncated: bool = False
    limit: str | None = None
    redactions: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.limit is None

    def check(self) -> ExecutionResult:
        """Returns self when ``ok``; raises :class:`AgentNestError` naming the failure."""
        if not self.ok:
            why = f"limit {self.limit}" if self.limit else f"exit code {self.exit_code}"
            raise AgentNestError(
                f"{self.command!r} failed ({why}): {self.stderr.strip()[-500:]}",
                code="execution_failed",
                actor="code",
            )
        return self


@dataclass(frozen=True)
class CodeResult:
    """A session call: ``output`` is stdout, ``result`` the last expression's repr."""

    output: str
    stderr: str
    result: str | None
    error: CodeError | None
    duration: float
    truncated: bool = False
    limit: str | None = None
    rich: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None and self.limit is None

    @property
    def stdout(self) -> str:
        return self.output

    def check(self) -> CodeResult:
        if self.error is not None:
            raise AgentNestError(
                f"{self.error.name}: {self.error.value}\n{self.error.traceback}",
                code="code_error",
                actor="code",
            )
        if self.limit is not None:
            raise AgentNestError(f"the call hit its {self.limit} limit", code="limit")
        return self


class SessionResult(NamedTuple):
    """``PythonSession.run``: ``(stdout, stderr, result, error)``, with ``ok`` and ``check()``."""

    stdout: str
    stderr: str
    result: str | None
    error: CodeError | None

    @property
    def ok(self) -> bool:
        return self.error is None

    def check(self) -> SessionResult:
        if self.error is not None:
            raise AgentNestError(
                f"{self.error.name}: {self.error.value}\n{self.error.traceback}",
                code="code_error",
                actor="code",
            )
        return self


@dataclass(frozen=True)
class Artifact:
    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class FileInfo:
    path: str
    type: str
    size: int
