"""``SandboxPool``: sandboxes made ahead of time, handed out at once."""

from __future__ import annotations

import queue
import threading
from typing import Any

from .errors import AgentNestError
from .sandbox import Sandbox

__all__ = ["SandboxPool"]


class SandboxPool:
    """Keeps ``size`` sandboxes of one definition ready; ``acquire()`` hands one out and a
    replacement is made in the background. ``close()`` destroys what is left."""

    def __init__(self, size: int = 2, **sandbox_args: Any) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 64:
            raise ValueError(f"size={size!r}: give a whole number from 1 to 64")
        self._args = sandbox_args
        self._ready: queue.Queue[Sandbox] = queue.Queue()
        self._closed = False
        self._lock = threading.Lock()
        self._errors: list[AgentNestError] = []
        for _ in range(size):
            self._ready.put(Sandbox(**sandbox_args))

    def _refill(self) -> None:
        try:
            sb = Sandbox(**self._args)
        except AgentNestError as e:
            self._errors.append(e)
            return
        with self._lock:
            if self._closed:
                sb.destroy()
                return
            self._ready.put(sb)

    def acquire(self, timeout: float = 120) -> Sandbox:
        if self._closed:
            raise AgentNestError("the pool is closed", code="closed", fix="make a new SandboxPool")
        try:
            sb = self._ready.get(timeout=timeout)
        except queue.Empty:
            last = self._errors[-1] if self._errors else None
            raise AgentNestError(
                f"no pooled sandbox became ready within {timeout} s"
                + (f": the last refill failed: {last}" if last else ""),
                code="pool_empty", fix="raise timeout= or size=",
            ) from last
        threading.Thread(target=self._refill, name="agentnest-pool-refill", daemon=True).start()
        return sb

    def close(self) -> None:
        with self._lock:
            self._closed = True
        while True:
            try:
                self._ready.get_nowait().destroy()
            except queue.Empty:
                return

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
