"""A smolagents code executor: every step of a ``CodeAgent`` runs in an AgentNest sandbox.

>>> from smolagents import CodeAgent                                  # doctest: +SKIP
>>> from agentnest.integrations.smolagents import AgentNestExecutor   # doctest: +SKIP
>>> agent = CodeAgent(tools=[], model=model, executor=AgentNestExecutor())  # doctest: +SKIP

The framework's own executor interface: tools and variables are sent into the sandbox's Python
session, and each step returns a ``CodeOutput`` (``output``, ``logs``, ``is_final_answer``).
State persists between steps (one session); a step's exception is the agent's to see
(``AgentError``), and so is a refusal by the sandbox's policy or a person.
"""

from __future__ import annotations

from typing import Any

from smolagents.local_python_executor import CodeOutput
from smolagents.monitoring import AgentLogger, LogLevel
from smolagents.remote_executors import RemotePythonExecutor
from smolagents.tools import Tool, get_tools_definition_code
from smolagents.utils import AgentError

from ..errors import AgentNestError, ExecutionTimeoutError
from ..sandbox import Sandbox

__all__ = ["AgentNestExecutor"]


class AgentNestExecutor(RemotePythonExecutor):
    """Runs a ``CodeAgent``'s code in one sandbox (created here unless ``sandbox`` is given).

    ``sandbox_args`` go to :class:`agentnest.Sandbox` (image, timeout, security_policy,
    approval_hook, ...). ``step_timeout`` bounds each step (seconds).
    """

    def __init__(
        self,
        additional_imports: list[str] | None = None,
        logger: AgentLogger | None = None,
        *,
        sandbox: Sandbox | None = None,
        step_timeout: float | None = 120,
        **sandbox_args: Any,
    ) -> None:
        super().__init__(additional_imports or [], logger or AgentLogger(level=LogLevel.INFO))
        self._owned = sandbox is None
        self.sandbox = sandbox if sandbox is not None else Sandbox(**sandbox_args)
        self.step_timeout = step_timeout
        self.installed_packages = self.install_packages(self.additional_imports)

    def run_code_raise_errors(self, code: str) -> CodeOutput:
        try:
            r = self.sandbox.run_code(code, timeout=self.step_timeout)
        except ExecutionTimeoutError as e:
            logs = e.result.output if e.result is not None else ""
            raise AgentError(
                f"{logs}\nThe code ran past its {self.step_timeout} s limit and was stopped "
                "(variables kept).",
                self.logger,
            ) from e
        except AgentNestError as e:
            raise AgentError(f"The sandbox refused or failed the step: {e}", self.logger) from e
        logs = r.output + (r.stderr if r.stderr else "")
        if r.error is not None:
            if r.error.name == self.FINAL_ANSWER_EXCEPTION:
                answer = self._deserialize_final_answer(r.error.value, self.allow_pickle)
                return CodeOutput(output=answer, logs=r.output, is_final_answer=True)
            raise AgentError(
                f"{logs}\nExecuting code yielded an error:\n{r.error.name}\n{r.error.value}\n"
                f"{r.error.traceback}",
                self.logger,
            )
        if r.limit is not None:
            raise AgentError(f"{logs}\nThe step hit the sandbox's {r.limit} limit.", self.logger)
        return CodeOutput(output=_value(r.result), logs=logs, is_final_answer=False)

    def send_tools(self, tools: dict[str, Tool]) -> None:
        """Defines the tools in the sandbox's session. Their source's top-level imports are
        guarded: a module the image lacks (the sandbox cannot install it) becomes a stub that
        raises ImportError naming it when a tool really uses it, instead of failing every tool."""
        if "final_answer" in tools:
            self._patch_final_answer_with_exception(tools["final_answer"])
        requirements = sorted({
            pkg for tool in tools.values() for pkg in tool.to_dict()["requirements"]
            if pkg != "smolagents"
        })
        self.installed_packages += self.install_packages(requirements)
        code = get_tools_definition_code(tools)
        if code:
            self.logger.log(self.run_code_raise_errors(_guard_imports(code)).logs)

    def install_packages(self, additional_imports: list[str]) -> list[str]:
        """Checks the modules are in the image (the sandbox has no network to install them).

        The agent's own ``additional_imports`` must be there (an error naming them); modules a
        tool's source merely mentions are reported and the run goes on: a step that really
        imports one sees the ImportError, as it would on any machine without it.
        """
        missing = self._missing(additional_imports)
        strict = additional_imports is self.additional_imports
        if missing and strict:
            raise AgentError(
                f"the sandbox's image lacks {missing}: use an image that has them (Sandbox("
                "image=...)), the sandbox has no network to install them",
                self.logger,
            )
        if missing:
            self.logger.log(
                f"agentnest: the sandbox's image lacks {missing}, which the tools mention",
                level=LogLevel.INFO,
            )
        return list(additional_imports)

    def _missing(self, modules: list[str]) -> list[str]:
        if not modules:
            return []
        probe = self.sandbox.run_code(
            "import importlib.util as _u\n"
            f"[m for m in {list(modules)!r} if _u.find_spec(m.split('.')[0]) is None]"
        )
        if probe.result is None:
            return list(modules)
        missing = _value(probe.result)
        return [str(m) for m in missing] if isinstance(missing, list) else list(modules)

    def cleanup(self) -> None:
        if self._owned:
            self.sandbox.destroy()

    def delete(self) -> None:
        self.cleanup()


_STUB = """
class _AgentNestMissingModule:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        raise ImportError(f"module {self._name!r} is not installed in the sandbox's image")
"""


def _guard_imports(code: str) -> str:
    """Wraps each top-level import in try/except ImportError binding its names to a stub."""
    import ast

    tree = ast.parse(code)
    body: list[ast.stmt] = list(ast.parse(_STUB).body)
    for node in tree.body:
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            body.append(node)
            continue
        names: list[tuple[str, str]] = []
        for alias in node.names:
            if alias.name == "*":
                names = []
                break
            bound = alias.asname or alias.name.split(".")[0]
            module = alias.name if isinstance(node, ast.Import) else (node.module or alias.name)
            names.append((bound, module))
        handler = [
            ast.parse(f"{bound} = _AgentNestMissingModule({module!r})").body[0]
            for bound, module in names
        ] or [ast.Pass()]
        body.append(ast.Try(
            body=[node],
            handlers=[ast.ExceptHandler(type=ast.Name("ImportError", ast.Load()), name=None,
                                        body=handler)],
            orelse=[], finalbody=[],
        ))
    tree.body = body
    return ast.unparse(ast.fix_missing_locations(tree))


def _value(result: str | None) -> Any:
    """The last expression's value as the agent logs it (the sandbox returns its repr)."""
    if result is None:
        return None
    import ast

    try:
        return ast.literal_eval(result)
    except (ValueError, SyntaxError):
        return result
