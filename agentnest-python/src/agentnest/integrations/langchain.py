"""LangChain tools: Python (one persistent session), shell, files and artifacts in one sandbox.

>>> from langchain.agents import create_agent                       # doctest: +SKIP
>>> from agentnest.integrations.langchain import AgentNestToolkit    # doctest: +SKIP
>>> toolkit = AgentNestToolkit()                                     # doctest: +SKIP
>>> agent = create_agent(model, toolkit.get_tools())                 # doctest: +SKIP

A tool never raises into the agent loop for what the sandbox did: a failing command, a Python
exception, a timeout or a refusal by the policy or a person comes back as the tool's text, so
the model can read it and recover.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool, BaseToolkit, StructuredTool
from pydantic import ConfigDict

from ..errors import AgentNestError, ExecutionTimeoutError, PolicyDeniedError
from ..results import CodeResult, ExecutionResult
from ..sandbox import Sandbox

__all__ = ["AgentNestToolkit"]

_MAX_TEXT = 20_000


def _cut(text: str) -> str:
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "\n[... cut]"


def _code_text(r: CodeResult) -> str:
    parts = []
    if r.output:
        parts.append(r.output)
    if r.stderr:
        parts.append(f"[stderr]\n{r.stderr}")
    if r.error is not None:
        parts.append(f"[error] {r.error.name}: {r.error.value}\n{r.error.traceback}")
    elif r.result is not None:
        parts.append(f"[result] {r.result}")
    return _cut("\n".join(parts) or "[no output]")


def _exec_text(r: ExecutionResult) -> str:
    text = r.stdout + (f"\n[stderr]\n{r.stderr}" if r.stderr else "")
    return _cut(f"{text}\n[exit code {r.exit_code}]".strip())


def _refusal(e: AgentNestError) -> str:
    if isinstance(e, PolicyDeniedError):
        return f"[refused by the sandbox's policy or a person] {e.message}"
    if isinstance(e, ExecutionTimeoutError):
        return f"[timed out: stopped, state kept] {e.message}"
    return f"[agentnest error] {e}"


class AgentNestToolkit(BaseToolkit):
    """The tools share one sandbox (made on first use unless given) and one Python session."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    sandbox: Sandbox | None = None
    sandbox_args: dict[str, Any] = {}
    timeout: float = 120

    def _sb(self) -> Sandbox:
        if self.sandbox is None:
            self.sandbox = Sandbox(**self.sandbox_args)
        return self.sandbox

    def get_tools(self) -> list[BaseTool]:
        def run_python(code: str) -> str:
            """Run Python code in a persistent session: variables and imports stay between
            calls. Returns stdout, stderr, the last expression's value or the error."""
            try:
                return _code_text(self._sb().run_code(code, timeout=self.timeout))
            except AgentNestError as e:
                return _refusal(e)

        def run_shell(command: str) -> str:
            """Run a shell command in the sandbox's /workspace. Returns output and exit code."""
            try:
                return _exec_text(self._sb().exec_shell(command, timeout=self.timeout))
            except AgentNestError as e:
                return _refusal(e)

        def write_file(path: str, content: str) -> str:
            """Write a text file under /workspace (parents are made)."""
            try:
                self._sb().write_file(path, content)
                return f"wrote {len(content.encode())} bytes to {path}"
            except AgentNestError as e:
                return _refusal(e)

        def read_file(path: str) -> str:
            """Read a text file under /workspace."""
            try:
                return _cut(self._sb().read_file(path).decode("utf-8", "replace"))
            except AgentNestError as e:
                return _refusal(e)

        def list_artifacts(pattern: str = "**") -> str:
            """List files under /workspace matching a glob, with size and sha256."""
            try:
                arts = self._sb().artifacts(pattern)
            except AgentNestError as e:
                return _refusal(e)
            return "\n".join(f"{a.path}\t{a.size}\t{a.sha256}" for a in arts) or "[no files]"

        return [
            StructuredTool.from_function(f)
            for f in (run_python, run_shell, write_file, read_file, list_artifacts)
        ]

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.destroy()
