import os
import signal
import unittest

from agent_under_test import HERE, RecordingChannel, agent

WORKER = os.path.normpath(os.path.join(HERE, "..", "..", "main", "resources", "io", "agentnest", "agent", "worker.py"))


class SessionTest(unittest.TestCase):
    """A real interpreter (worker.py) behind the agent's default session: the waiting one started
    ahead of use answers the first call, and the session's pipes, registered once per
    interpreter, serve call after call and a restarted interpreter's too."""

    def setUp(self):
        with open(WORKER, encoding="utf-8") as f:
            source = f.read()
        self.channel = RecordingChannel()
        self.agent = agent.Agent(self.channel, worker_source=source, pool_size=2)
        self.addCleanup(self.agent.close_sessions)

    def call(self, call_id, code):
        self.agent.handle({"op": "py", "id": call_id}, code.encode("utf-8"))
        return self.channel.final(call_id, timeout=30)

    def out(self, call_id):
        return b"".join(p for h, p in self.channel.of(call_id) if h.get("ev") == "out")

    def test_the_prewarmed_interpreter_answers_the_first_call_without_a_restart(self):
        self.assertFalse(self.agent.default_session_alive())
        self.agent.prewarm()
        self.assertTrue(self.agent.default_session_alive())
        first = self.call(1, "1 + 1")
        self.assertEqual(first["result"], "2")
        self.assertFalse(first["restarted"])
        self.assertEqual(self.agent.sessions["default"].generation, 1)

    def test_calls_after_calls_and_after_a_restart_are_answered_with_their_output(self):
        self.agent.prewarm()
        session = self.agent.sessions["default"]
        self.assertIsNone(self.call(1, "x = 20")["error"])
        self.assertEqual(self.call(2, "print('out', x)\nx + 1")["result"], "21")
        self.assertEqual(self.out(2), b"out 20\n")
        first_selector = session.sel
        os.kill(session.proc.pid, signal.SIGKILL)
        session.proc.wait(timeout=10)
        self.assertFalse(self.agent.default_session_alive())
        again = self.call(3, "print('again')\n3")
        self.assertTrue(again["restarted"])
        self.assertEqual(again["result"], "3")
        self.assertEqual(self.out(3), b"again\n")
        self.assertIsNot(session.sel, first_selector)
        session.close()
        self.assertIsNone(session.sel)


if __name__ == "__main__":
    unittest.main()
