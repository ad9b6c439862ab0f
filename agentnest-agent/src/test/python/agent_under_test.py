"""Loads the in-sandbox agent (a resource, not a package) as a module, and fakes its channel."""
import importlib.util
import os
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "..", "main", "resources", "io", "agentnest", "agent", "agent.py")


def load():
    spec = importlib.util.spec_from_file_location("agentnest_agent", os.path.normpath(SOURCE))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


agent = load()


class RecordingChannel:
    """Collects what the agent sends; waits (bounded) for a call's final frame."""

    def __init__(self):
        self.frames = []
        self.cond = threading.Condition()

    def send(self, header, payload=b""):
        with self.cond:
            self.frames.append((header, bytes(payload)))
            self.cond.notify_all()

    def final(self, call_id, timeout=10.0):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for h, _payload in self.frames:
                    if h.get("id") == call_id and h.get("ev") in ("res", "err"):
                        return h
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("no final frame for call %r within %ss: %r" % (call_id, timeout, self.frames))
                self.cond.wait(left)

    def of(self, call_id):
        with self.cond:
            return [(h, p) for h, p in self.frames if h.get("id") == call_id]


def new_agent():
    return agent.Agent(RecordingChannel(), worker_source="", pool_size=1)
