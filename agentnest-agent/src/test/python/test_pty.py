import tempfile
import time
import unittest
from unittest import mock

from agent_under_test import agent, new_agent


class PtyTest(unittest.TestCase):
    """exec with a "pty" header: the command gets a terminal of the asked size, keys arrive as
    pty_in frames, window sizes as pty_resize, both frames of no call."""

    def setUp(self):
        self.a = new_agent()

    def output(self, call_id):
        return b"".join(p for h, p in self.a.channel.of(call_id) if h.get("ev") == "out")

    def wait_for(self, call_id, text, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output(call_id):
                return
            time.sleep(0.02)
        self.fail("%r never appeared in %r" % (text, self.output(call_id)))

    def test_a_command_on_a_pty_sees_a_terminal_of_the_asked_size_and_follows_resizes(self):
        script = "tty >/dev/null && echo is-a-tty; stty size; read line; echo got $line; stty size"
        with tempfile.TemporaryDirectory() as ws, mock.patch.object(agent, "WORKSPACE", ws):
            self.a.dispatch({"op": "exec", "id": 20, "argv": ["/bin/sh", "-c", script],
                             "pty": {"rows": 30, "cols": 100}, "timeout_ms": 20000}, b"")
            self.wait_for(20, b"30 100")
            self.a.dispatch({"op": "pty_resize", "target": 20, "rows": 40, "cols": 120}, b"")
            self.a.dispatch({"op": "pty_in", "target": 20}, b"typed\n")
            res = self.a.channel.final(20, timeout=20)
            self.assertEqual(res["exit_code"], 0)
            out = self.output(20)
            self.assertIn(b"is-a-tty", out)
            self.assertIn(b"got typed", out)
            self.assertTrue(out.rstrip().endswith(b"40 120"), out)
            self.assertEqual({h["s"] for h, _ in self.a.channel.of(20) if h.get("ev") == "out"}, {"o"})

    def test_keys_sent_right_after_the_exec_frame_wait_for_the_program(self):
        with tempfile.TemporaryDirectory() as ws, mock.patch.object(agent, "WORKSPACE", ws):
            self.a.dispatch({"op": "exec", "id": 23, "argv": ["/bin/sh", "-c", "sleep 0.5; read l; echo got-$l"],
                             "pty": {"rows": 24, "cols": 80}, "timeout_ms": 20000}, b"")
            self.a.dispatch({"op": "pty_in", "target": 23}, b"early\n")
            self.assertEqual(self.a.channel.final(23, timeout=20)["exit_code"], 0)
            self.assertIn(b"got-early", self.output(23))
            self.assertNotIn(23, self.a.running)

    def test_keys_and_sizes_for_no_such_call_or_a_call_without_a_pty_are_dropped(self):
        self.a.dispatch({"op": "pty_in", "target": 999}, b"x")
        self.a.dispatch({"op": "pty_resize", "target": 999, "rows": 1, "cols": 1}, b"")
        with tempfile.TemporaryDirectory() as ws, mock.patch.object(agent, "WORKSPACE", ws):
            self.a.dispatch({"op": "exec", "id": 21, "cmd": "sleep 0.3; echo done", "timeout_ms": 10000}, b"")
            self.a.dispatch({"op": "pty_in", "target": 21}, b"ignored\n")
            self.assertEqual(self.a.channel.final(21)["exit_code"], 0)
        self.assertEqual([h for h, _ in self.a.channel.frames if h.get("id") is None], [])

    def test_sizes_are_clamped_and_an_unknown_term_is_replaced(self):
        self.assertEqual(agent.pty_size({"rows": 0, "cols": 99999}), (1, agent.MAX_PTY_SIDE))
        self.assertEqual(agent.pty_size({"rows": "x"}), (24, 80))
        self.assertIsNone(agent.pty_size(None))
        self.assertEqual(agent.pty_term("xterm\x1b]52"), "xterm-256color")
        self.assertEqual(agent.pty_term("vt100"), "vt100")

    def test_a_timeout_stops_a_program_on_a_pty(self):
        with tempfile.TemporaryDirectory() as ws, mock.patch.object(agent, "WORKSPACE", ws):
            self.a.dispatch({"op": "exec", "id": 22, "argv": ["/bin/sh", "-c", "sleep 30"],
                             "pty": {"rows": 24, "cols": 80}, "timeout_ms": 500}, b"")
            res = self.a.channel.final(22, timeout=15)
            self.assertEqual(res["limit"], "TIMEOUT")


if __name__ == "__main__":
    unittest.main()
