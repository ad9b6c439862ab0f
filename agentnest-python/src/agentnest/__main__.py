"""``python -m agentnest engine status|stop``: this user's local engine, by hand.

The engine starts on first use and exits after it has been idle; these are for the times a person
wants to know or to end it now (``stop`` destroys the sandboxes it holds).
"""

from __future__ import annotations

import argparse
import sys

from agentnest import _engine


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentnest",
        description="The local AgentNest engine of this user (AGENTNEST_HOME).",
    )
    sub = parser.add_subparsers(dest="what", required=True)
    engine = sub.add_parser("engine", help="the local engine")
    engine.add_argument("action", choices=["status", "stop"])
    args = parser.parse_args(argv)
    if args.action == "status":
        print(_engine.status())
    else:
        print("stopped" if _engine.stop() else f"no engine was running ({_engine.status()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
