"""The measured operations, run by one Python package: this one, or the published reference
(``agentnest`` 0.3 from PyPI) in its own virtual environment. Prints one JSON object.

Usage: python ops.py {ours,reference} IMAGE ITERATIONS COLD_ITERATIONS
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any


def figures(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    return {
        "p50_ms": round(statistics.median(s) * 1000, 2),
        "p95_ms": round(s[min(len(s) - 1, int(len(s) * 0.95))] * 1000, 2),
        "n": len(s),
    }


def timed(fn: Callable[[], Any], n: int, warmup: int = 3) -> dict[str, float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return figures(out)


def main() -> None:
    which, image, n, cold_n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    from agentnest import Sandbox  # the package of this interpreter's environment

    def make() -> Any:
        return Sandbox(image) if which == "ours" else Sandbox(image)

    results: dict[str, Any] = {"package": which}
    # Cold: Sandbox() to the first result of a shell command, then destroy (not timed).
    cold = []
    for _ in range(cold_n):
        t = time.perf_counter()
        sb = make()
        r = sb.exec_shell("echo hi")
        cold.append(time.perf_counter() - t)
        assert r.stdout.strip() == "hi", r
        sb.destroy()
    results["cold_to_first_result"] = figures(cold)
    sb = make()
    try:
        results["exec_shell_echo"] = timed(lambda: sb.exec_shell("echo hi"), n)
        session = sb.python_session()
        results["session_call"] = timed(lambda: session.run("x = 1"), n)
    finally:
        sb.destroy()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
