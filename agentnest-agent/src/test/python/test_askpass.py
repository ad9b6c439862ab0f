import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock

from agent_under_test import agent, new_agent


class AskpassTest(unittest.TestCase):
    """The credential helper the agent writes asks the host through the agent's socket; git reads
    what the host answered, or nothing."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        self.patches = [
            mock.patch.object(agent, "ASKPASS_DIR", d),
            mock.patch.object(agent, "ASKPASS_SOCKET", d + "/askpass.sock"),
        ]
        for p in self.patches:
            p.start()
        self.a = new_agent()

    def tearDown(self):
        if self.a.askpass.server is not None:
            srv, self.a.askpass.server = self.a.askpass.server, None
            srv.close()
        for p in self.patches:
            p.stop()
        self.dir.cleanup()

    def answer_questions(self, answers, stop):
        """Plays the host: answers each askpass frame with the next of answers (bounded)."""
        seen = set()
        deadline = time.monotonic() + 20
        while not stop.is_set() and time.monotonic() < deadline:
            for h, _ in list(self.a.channel.frames):
                if h.get("ev") == "askpass" and h["aid"] not in seen:
                    seen.add(h["aid"])
                    reply = answers(h)
                    reply.update({"op": "askpass_reply", "aid": h["aid"]})
                    self.a.dispatch(reply, b"")
            time.sleep(0.01)

    def run_helper(self, answers, nonce="n-1"):
        self.a.dispatch({"op": "askpass_setup", "id": 1}, b"")
        res = self.a.channel.final(1)
        self.assertEqual(res["ev"], "res")
        self.assertTrue(res["path"].startswith(self.dir.name + "/askpass-"))
        self.assertTrue(res["path"].endswith("/git-credential"))
        stop = threading.Event()
        t = threading.Thread(target=self.answer_questions, args=(answers, stop), daemon=True)
        t.start()
        try:
            p = subprocess.run(
                [sys.executable, res["path"], "get"],
                input=b"protocol=https\nhost=git.example.com\n\n",
                env={"AGENTNEST_ASKPASS_NONCE": nonce, "PATH": os.environ.get("PATH", "")},
                capture_output=True,
                timeout=30,
            )
        finally:
            stop.set()
            t.join(5)
        return p

    def test_the_hosts_answers_become_the_helpers_username_and_password(self):
        p = self.run_helper(lambda h: {"ok": True, "value": "bot" if h["prompt"].startswith("Username") else "s3cret"})
        self.assertEqual(p.stdout, b"username=bot\npassword=s3cret\n")
        questions = [h for h, _ in self.a.channel.frames if h.get("ev") == "askpass"]
        self.assertEqual([q["nonce"] for q in questions], ["n-1", "n-1"])
        self.assertEqual(questions[0]["prompt"], "Username for 'https://git.example.com': ")
        self.assertEqual(questions[1]["prompt"], "Password for 'https://bot@git.example.com': ")

    def test_a_refusal_gives_git_nothing(self):
        p = self.run_helper(lambda h: {"ok": False, "message": "refused: no operation"})
        self.assertEqual(p.stdout, b"")
        self.assertIn(b"refused: no operation", p.stderr)

    def test_a_value_with_a_line_break_is_not_passed_on(self):
        p = self.run_helper(lambda h: {"ok": True, "value": "bot\npassword=evil"})
        self.assertEqual(p.stdout, b"")

    def test_store_and_erase_do_nothing(self):
        self.a.dispatch({"op": "askpass_setup", "id": 2}, b"")
        path = self.a.channel.final(2)["path"]
        for action in ("store", "erase"):
            p = subprocess.run([sys.executable, path, action], input=b"password=x\n\n", capture_output=True, timeout=30)
            self.assertEqual((p.returncode, p.stdout), (0, b""))
        self.assertEqual([h for h, _ in self.a.channel.frames if h.get("ev") == "askpass"], [])

    def test_each_setup_writes_a_fresh_helper_and_removes_the_last(self):
        self.a.dispatch({"op": "askpass_setup", "id": 3}, b"")
        first = self.a.channel.final(3)["path"]
        self.a.dispatch({"op": "askpass_setup", "id": 4}, b"")
        second = self.a.channel.final(4)["path"]
        self.assertNotEqual(first, second)
        self.assertFalse(os.path.exists(first))
        self.assertTrue(os.path.exists(second))

    def test_a_reply_for_no_waiting_question_is_dropped(self):
        self.a.dispatch({"op": "askpass_reply", "aid": 77, "ok": True, "value": "x"}, b"")
        self.a.dispatch({"op": "askpass_reply", "aid": "1", "ok": True, "value": "x"}, b"")
        self.assertEqual(self.a.channel.frames, [])


if __name__ == "__main__":
    unittest.main()
