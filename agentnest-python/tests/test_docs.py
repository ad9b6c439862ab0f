"""Every Python block of README.md and docs/*.md is a checked example.

Each block compiles (top-level ``await`` allowed, as in a notebook), and every name it imports
exists in the installed package or framework: a renamed class or module fails here, not in a
reader's terminal. Blocks marked ``<!-- example: run -->`` on the line before them are run as
they are written against a real engine, in a scratch directory. (Java, YAML and the CLI lines
of shell blocks are checked by agentnest-cli's DocsExamplesTest.)
"""

from __future__ import annotations

import ast
import importlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_TAG = re.compile(r"^<!--\s*(example|not checked):(.*)-->$")


@dataclass(frozen=True)
class Block:
    file: Path
    line: int
    text: str
    tags: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}"


def _blocks() -> list[Block]:
    out: list[Block] = []
    for f in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        lines = f.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            if lines[i].strip() != "```python":
                i += 1
                continue
            tags = []
            j = i - 1
            while j >= 0 and (m := _TAG.match(lines[j].strip())):
                tags.append(f"{m.group(1)}:{m.group(2).strip()}")
                j -= 1
            start = i + 2
            body = []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            out.append(Block(f, start, "\n".join(body) + "\n", tuple(tags)))
            i += 1
    return out


BLOCKS = _blocks()


def test_the_python_examples_are_found() -> None:
    assert len(BLOCKS) >= 10
    for b in BLOCKS:
        for t in b.tags:
            if t.startswith("not checked:"):
                assert t.removeprefix("not checked:").strip(), f"{b.where}: say why"


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.where)
def test_every_python_example_compiles_and_its_imports_exist(block: Block) -> None:
    tree = compile(block.text, block.where, "exec",
                   flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    assert isinstance(tree, ast.Module)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                importlib.import_module(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            module = importlib.import_module(node.module)
            for alias in node.names:
                if alias.name == "*":
                    continue
                if not hasattr(module, alias.name):
                    # a submodule imported by name
                    importlib.import_module(f"{node.module}.{alias.name}")
    # Names the block uses from agentnest objects it imported must exist on them.
    imported = {a.asname or a.name: node.module for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module
                and node.module.startswith("agentnest") for a in node.names}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in imported):
            owner = getattr(importlib.import_module(str(imported[node.value.id])), node.value.id)
            assert hasattr(owner, node.attr), \
                f"{block.where}: {node.value.id}.{node.attr} does not exist"


RUN = [b for b in BLOCKS if "example:run" in b.tags]


def test_the_examples_marked_to_run_are_there() -> None:
    assert len(RUN) >= 3, [b.where for b in RUN]


@pytest.mark.engine
@pytest.mark.parametrize("block", RUN, ids=lambda b: b.where)
def test_every_example_marked_to_run_runs_as_written(
    block: Block, engine_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("GITHUB_TOKEN", "OPENAI_API_KEY", "DB_PASSWORD"):  # Secret.from_env examples
        monkeypatch.setenv(name, f"docs-example-{name.lower()}-0123456789")
    scope: dict[str, object] = {"__name__": "__docs__"}
    code = compile(block.text, block.where, "exec", dont_inherit=True)
    try:
        exec(code, scope)  # noqa: S102 - the docs' own example, run as a reader would
    finally:
        for value in list(scope.values()):
            destroy = getattr(value, "destroy", None)
            if callable(destroy) and type(value).__module__.startswith("agentnest"):
                destroy()
    assert os.getcwd() == str(tmp_path)
