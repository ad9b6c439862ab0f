"""Real agents from the frameworks' own packages, with scripted models in place of an LLM.

Each agent takes several steps that run code in one sandbox, keeps state between them, recovers
from its own error, and one step is refused by an approval rule and the agent sees the refusal.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agentnest import ApprovalRequest, Sandbox, SandboxDestroyedError

pytestmark = pytest.mark.engine


def _deny_deletes(asked: list[ApprovalRequest]) -> Any:
    def hook(req: ApprovalRequest) -> bool:
        asked.append(req)
        return False

    return hook


# --- smolagents --------------------------------------------------------------------------------
def test_a_smolagents_code_agent_runs_every_step_in_the_sandbox(engine_home: Path) -> None:
    from smolagents import CodeAgent
    from smolagents.models import ChatMessage, MessageRole, Model

    from agentnest.integrations.smolagents import AgentNestExecutor

    steps = [
        # 1: state that must survive to later steps, and proof it runs in the sandbox
        "import os\nsecret_total = sum(range(10))\nprint('cwd', os.getcwd(), os.getuid())",
        # 2: an error of its own, which it must see
        "print(undefined_name)",
        # 3: recovery, reading the state of step 1
        "print('total is', secret_total)",
        # 4: a deletion the approval hook refuses
        "open('keep.txt', 'w').write('x')\nimport os\nos.remove('keep.txt')",
        # 5: the final answer
        "final_answer(secret_total * 2)",
    ]

    class Scripted(Model):
        def __init__(self) -> None:
            super().__init__(model_id="scripted")
            self.seen: list[str] = []

        def generate(
            self, messages: Sequence[Any], stop_sequences: list[str] | None = None, **kw: Any
        ) -> ChatMessage:
            last = messages[-1]
            content = last.content if hasattr(last, "content") else last["content"]
            text = content if isinstance(content, str) else " ".join(
                str(c.get("text", "")) for c in content or [])
            self.seen.append(text)
            code = steps[min(len(self.seen) - 1, len(steps) - 1)]
            return ChatMessage(role=MessageRole.ASSISTANT,
                               content=f"Thought: next step.\n<code>\n{code}\n</code>")

    asked: list[ApprovalRequest] = []
    executor = AgentNestExecutor(approval_hook=_deny_deletes(asked))
    model = Scripted()
    agent = CodeAgent(tools=[], model=model, executor=executor, max_steps=8)
    try:
        answer = agent.run("compute twice the sum of 0..9")
        observations = "\n".join(model.seen)
        assert answer == 90
        assert "cwd /workspace" in observations and "cwd /workspace 0" not in observations
        assert "undefined_name" in observations  # the agent saw its own error
        assert "total is 45" in observations  # state kept across steps
        assert asked, "the deletion was never asked about"
        assert "denied" in observations.lower() or "refused" in observations.lower()
        assert executor.sandbox.read_file("keep.txt") == b"x"
    finally:
        executor.cleanup()
    assert executor.sandbox.destroyed


# --- LangChain / LangGraph ---------------------------------------------------------------------
def test_a_langchain_agent_uses_the_toolkit_in_one_sandbox(engine_home: Path) -> None:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, ToolMessage

    from agentnest.integrations.langchain import AgentNestToolkit

    def call(name: str, args: dict[str, Any], i: int) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"c{i}"}])

    script = iter([
        call("run_python", {"code": "rows = [3, 4, 5]\nlen(rows)"}, 1),
        call("run_python", {"code": "sum(rowz)"}, 2),  # its own mistake
        call("run_python", {"code": "sum(rows)"}, 3),  # recovered, state kept
        call("write_file", {"path": "out.txt", "content": "data"}, 4),
        call("run_shell", {"command": "rm out.txt"}, 5),  # refused by the approval hook
        AIMessage(content="done: 12"),
    ])

    class Scripted(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kw: Any) -> Any:
            return self

    asked: list[ApprovalRequest] = []
    toolkit = AgentNestToolkit(sandbox_args={"approval_hook": _deny_deletes(asked)})
    agent = create_agent(Scripted(messages=script), toolkit.get_tools())
    try:
        out = agent.invoke({"messages": [{"role": "user", "content": "sum the rows"}]})
        tools_said = [m.content for m in out["messages"] if isinstance(m, ToolMessage)]
        assert "[result] 3" in tools_said[0]
        assert "NameError" in tools_said[1]
        assert "[result] 12" in tools_said[2]
        assert "wrote 4 bytes" in tools_said[3]
        assert [q.kind for q in asked] == ["file.delete"]
        assert tools_said[4].startswith("[refused by the sandbox's policy or a person]")
        assert out["messages"][-1].content == "done: 12"
        assert toolkit.sandbox is not None and toolkit.sandbox.read_file("out.txt") == b"data"
    finally:
        toolkit.close()


# --- OpenAI Agents SDK -------------------------------------------------------------------------
def test_an_openai_agents_agent_runs_its_tools_in_one_sandbox(engine_home: Path) -> None:
    from agents import Agent, Runner, set_tracing_disabled
    from agents.items import ToolCallOutputItem
    from agents.testing import ScriptedModel, assistant_message, function_call

    from agentnest.integrations.openai_agents import sandbox_tools

    set_tracing_disabled(True)  # no LLM provider here: nothing to export traces to
    model = ScriptedModel([
        [function_call("run_python", {"code": "x = 7\nx"}, call_id="c1")],
        [function_call("run_python", {"code": "x + y"}, call_id="c2")],  # its own mistake
        [function_call("run_python", {"code": "x + 1"}, call_id="c3")],  # recovered, state kept
        [function_call("write_file", {"path": "keep.txt", "content": "k"}, call_id="c4")],
        [function_call("run_shell", {"command": "rm keep.txt"}, call_id="c5")],  # refused
        [assistant_message("done: 8")],
    ])
    asked: list[ApprovalRequest] = []
    with Sandbox(approval_hook=_deny_deletes(asked)) as sb:
        agent = Agent(name="coder", instructions="use the tools", model=model,
                      tools=sandbox_tools(sb))
        result = Runner.run_sync(agent, "compute", max_turns=10)
        outputs = [str(i.output) for i in result.new_items if isinstance(i, ToolCallOutputItem)]
        assert "[result] 7" in outputs[0]
        assert "NameError" in outputs[1]
        assert "[result] 8" in outputs[2]
        assert outputs[4].startswith("[refused by the sandbox's policy or a person]")
        assert [q.kind for q in asked] == ["file.delete"]
        assert result.final_output == "done: 8"
        assert sb.read_file("keep.txt") == b"k"


# --- OpenAI Agents SDK: AgentNest as its sandbox backend -----------------------------------------
def test_an_openai_sandbox_agent_runs_the_sdks_own_shell_tool_in_an_agentnest_sandbox(
    engine_home: Path,
) -> None:
    from agents import Runner, set_tracing_disabled
    from agents.items import ToolCallOutputItem
    from agents.run_config import RunConfig, SandboxRunConfig
    from agents.sandbox import SandboxAgent
    from agents.testing import ScriptedModel, assistant_message, function_call

    from agentnest.integrations.openai_agents_sandbox import (
        AgentNestSandboxClient,
        AgentNestSandboxClientOptions,
    )

    set_tracing_disabled(True)
    model = ScriptedModel([
        [function_call("exec_command", {"cmd": "echo $((6*7)) > answer.txt; id -u; pwd"},
                       call_id="c1")],
        [function_call("exec_command", {"cmd": "no-such-program --now"}, call_id="c2")],
        [function_call("exec_command", {"cmd": "cat answer.txt"}, call_id="c3")],  # state kept
        [function_call("exec_command", {"cmd": "rm answer.txt"}, call_id="c4")],  # refused
        [function_call("exec_command", {"cmd": "cat answer.txt"}, call_id="c5")],
        [assistant_message("done: 42")],
    ])
    asked: list[ApprovalRequest] = []
    agent = SandboxAgent(name="coder", instructions="use the shell", model=model)
    run_config = RunConfig(sandbox=SandboxRunConfig(
        client=AgentNestSandboxClient(approval_hook=_deny_deletes(asked)),
        options=AgentNestSandboxClientOptions()))
    result = Runner.run_sync(agent, "compute", max_turns=10, run_config=run_config)
    outputs = [str(i.output) for i in result.new_items if isinstance(i, ToolCallOutputItem)]
    assert len(outputs) == 5, outputs
    uid, cwd = [line for line in outputs[0].splitlines() if line.strip()][-2:]
    assert uid.strip() != "0" and cwd.strip() == "/workspace"  # the hardened sandbox's user
    assert "not found" in outputs[1]  # its own error, seen
    assert "42" in outputs[2]
    assert "denied" in outputs[3].lower() or "refused" in outputs[3].lower(), outputs[3]
    assert "42" in outputs[4]  # the refused deletion deleted nothing
    assert [q.kind for q in asked] == ["file.delete"]
    assert asked[0].sandbox_id
    assert result.final_output == "done: 42"
    # The run's end shut its sandbox down: the engine has it no more.
    with pytest.raises(SandboxDestroyedError):
        Sandbox.connect(asked[0].sandbox_id)


def test_the_openai_sandbox_backend_persists_hydrates_and_resumes_a_workspace(
    engine_home: Path,
) -> None:
    import asyncio
    import io
    import tarfile

    from agents.sandbox.errors import InvalidManifestPathError, WorkspaceReadNotFoundError

    from agentnest.integrations.openai_agents_sandbox import (
        AgentNestSandboxClient,
        AgentNestSandboxClientOptions,
    )

    async def scenario() -> None:
        client = AgentNestSandboxClient()
        session = await client.create(options=AgentNestSandboxClientOptions())
        async with session:
            r = await session.exec("mkdir -p d && printf hi > d/run.sh && chmod +x d/run.sh")
            assert r.ok(), r.stderr
            await session.write(Path("notes.txt"), io.BytesIO(b"n\xffb"))
            assert (await session.read(Path("/workspace/notes.txt"))).read() == b"n\xffb"
            with pytest.raises(WorkspaceReadNotFoundError):
                await session.read(Path("missing.txt"))
            with pytest.raises(InvalidManifestPathError):
                await session.read(Path("../etc/passwd"))
            archive = (await session.persist_workspace()).read()
            with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                names = tar.getnames()
            assert {"./notes.txt", "./d/run.sh"} <= set(names), names

            # resume reattaches to the same sandbox: its files are there, nothing is rebuilt
            payload = client.serialize_session_state(session.state)
            resumed = await client.resume(client.deserialize_session_state(payload))
            assert resumed.state.sandbox_id == session.state.sandbox_id
            assert (await resumed._inner.read(Path("notes.txt"))).read() == b"n\xffb"

            # a fresh sandbox hydrated from the tar has the files, modes kept
            fresh = await client.create(options=AgentNestSandboxClientOptions())
            async with fresh:
                await fresh.hydrate_workspace(io.BytesIO(archive))
                r = await fresh.exec("stat -c %a d/run.sh && cat d/run.sh")
                assert r.ok() and r.stdout == b"755\nhi", (r.stdout, r.stderr)
                assert (await fresh.read(Path("notes.txt"))).read() == b"n\xffb"
                gone_id = fresh.state.sandbox_id

        # a state whose sandbox is gone resumes into a new one (the SDK then hydrates it)
        state = client.deserialize_session_state(client.serialize_session_state(session.state))
        state.sandbox_id = gone_id
        replaced = await client.resume(state)
        try:
            assert replaced.state.sandbox_id != gone_id
            assert await replaced._inner.running()
        finally:
            await replaced._inner.shutdown()

    asyncio.run(scenario())
