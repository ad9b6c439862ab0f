"""Fixtures: a fresh AGENTNEST_HOME per engine, the engine stopped (its sandboxes destroyed)
after. Nothing here skips: without Java, Docker or the image the engine tests fail, naming what
is missing (the project's rule: a missing dependency is a failure, never a silent skip)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentnest import _engine, sandbox


def _fresh_home() -> Path:
    # Short: a Unix socket path has about 100 bytes.
    return Path(tempfile.mkdtemp(prefix="an-py-", dir="/tmp"))


def _stop_and_remove(home: Path) -> None:
    old = os.environ.get("AGENTNEST_HOME")
    os.environ["AGENTNEST_HOME"] = str(home)
    try:
        _engine.stop()
    finally:
        sandbox._reset_local()
        if old is None:
            os.environ.pop("AGENTNEST_HOME", None)
        else:
            os.environ["AGENTNEST_HOME"] = old
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def engine_home() -> Iterator[Path]:
    """One engine for the tests that only use it."""
    home = _fresh_home()
    old = os.environ.get("AGENTNEST_HOME")
    os.environ["AGENTNEST_HOME"] = str(home)
    os.environ.setdefault("AGENTNEST_ENGINE_IDLE_EXIT", "2m")
    os.environ.pop("AGENTNEST_URL", None)
    sandbox._reset_local()
    yield home
    _stop_and_remove(home)
    if old is not None:
        os.environ["AGENTNEST_HOME"] = old


@pytest.fixture()
def own_home(engine_home: Path) -> Iterator[Path]:
    """A home (and so an engine) of the test's own, for lifecycle tests."""
    home = _fresh_home()
    os.environ["AGENTNEST_HOME"] = str(home)
    sandbox._reset_local()
    yield home
    _stop_and_remove(home)
    os.environ["AGENTNEST_HOME"] = str(engine_home)
    sandbox._reset_local()
