"""OpenAI Agents SDK function tools backed by one AgentNest sandbox.

>>> from agents import Agent                                        # doctest: +SKIP
>>> from agentnest.integrations.openai_agents import sandbox_tools  # doctest: +SKIP
>>> agent = Agent(name="coder", tools=sandbox_tools(sandbox))       # doctest: +SKIP
"""

from __future__ import annotations

from agents import FunctionTool, function_tool

from ..errors import AgentNestError
from ..sandbox import Sandbox
from .langchain import _code_text, _exec_text, _refusal

__all__ = ["sandbox_tools"]


def sandbox_tools(sandbox: Sandbox, timeout: float = 120) -> list[FunctionTool]:
    @function_tool
    def run_python(code: str) -> str:
        """Run Python in a persistent session (variables stay between calls)."""
        try:
            return _code_text(sandbox.run_code(code, timeout=timeout))
        except AgentNestError as e:
            return _refusal(e)

    @function_tool
    def run_shell(command: str) -> str:
        """Run a shell command in the sandbox's /workspace."""
        try:
            return _exec_text(sandbox.exec_shell(command, timeout=timeout))
        except AgentNestError as e:
            return _refusal(e)

    @function_tool
    def write_file(path: str, content: str) -> str:
        """Write a text file under /workspace."""
        try:
            sandbox.write_file(path, content)
            return f"wrote {len(content.encode())} bytes to {path}"
        except AgentNestError as e:
            return _refusal(e)

    @function_tool
    def read_file(path: str) -> str:
        """Read a text file under /workspace."""
        try:
            return sandbox.read_file(path).decode("utf-8", "replace")
        except AgentNestError as e:
            return _refusal(e)

    return [run_python, run_shell, write_file, read_file]
