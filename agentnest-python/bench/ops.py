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

    def first_result(**kw: Any) -> float:
        t = time.perf_counter()
        sb = Sandbox(image, **kw)
        r = sb.exec_shell("echo hi")
        took = time.perf_counter() - t
        assert r.stdout.strip() == "hi", r
        sb.destroy()
        return took

    results: dict[str, Any] = {"package": which}

    def warm_calls() -> None:
        sb = Sandbox(image)
        try:
            # The engine is long-lived (shared by the user's processes, idle exit after minutes):
            # its JIT is warm in use, so it is warmed as the Java figures are (same count; a cold
            # JVM answers a request in 0.5 ms that a warm one answers in 0.05). The published
            # package has no JIT to warm: 150 calls settle it.
            warm = 2000 if which == "ours" else 150
            results["exec_shell_echo"] = timed(lambda: sb.exec_shell("echo hi"), n, warmup=warm)
            session = sb.python_session()
            results["session_call"] = timed(lambda: session.run("x = 1"), n, warmup=warm)
        finally:
            sb.destroy()

    if which == "ours":
        # The first call starts the user's engine (a JVM) as well.
        results["first_call_with_engine_start"] = figures([first_result()])
        # A warm pool member of this shape: the engine refills it in the background after each
        # hand-out, so each Sandbox() waits until a member has had time to start. First on a
        # fresh engine (its hand-out path not yet compiled by the JIT), then again after the
        # warm calls below, as a long-lived engine answers.
        pooled = []
        for _ in range(cold_n):
            time.sleep(2.0)
            pooled.append(first_result())
        results["pooled_to_first_result_fresh_engine"] = figures(pooled)
        # Cold: a shape of its own each time, which no pool holds (a container start).
        results["cold_to_first_result"] = figures(
            [first_result(memory=f"{520 + i}m") for i in range(cold_n)])
        time.sleep(2.0)  # let the engine finish what the cold starts left (refills, removals)
        warm_calls()
        pooled = []
        for _ in range(cold_n):
            time.sleep(2.0)
            pooled.append(first_result())
        results["pooled_to_first_result"] = figures(pooled)
    else:
        results["cold_to_first_result"] = figures([first_result() for _ in range(cold_n)])
        time.sleep(2.0)
        warm_calls()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
