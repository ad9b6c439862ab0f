import os
import signal
import threading
import time
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
        self.assertFalse(self.agent.default_session_waiting())
        self.agent.prewarm()
        self.assertTrue(self.agent.default_session_waiting())
        first = self.call(1, "1 + 1")
        self.assertEqual(first["result"], "2")
        self.assertFalse(first["restarted"])
        self.assertEqual(self.agent.sessions["default"].generation, 1)

    def test_the_warm_up_leaves_no_trace_in_the_interpreter_or_its_pipes(self):
        self.agent.prewarm()
        session = self.agent.sessions["default"]
        self.assertEqual(session.generation, 1)
        # Nothing left behind in the control pipe for the first call to take as its answer.
        self.assertEqual(session.sel.select(timeout=0.2), [])
        first = self.call(
            1,
            "import linecache\n(sorted(k for k in globals() if not k.startswith('__')),"
            " [k for k in linecache.cache if k.startswith('<cell')])",
        )
        self.assertEqual(first["result"], "(['linecache'], ['<cell 1>'])")
        self.assertEqual(self.out(1), b"")
        self.assertFalse(first["restarted"])

    def test_an_interpreter_that_does_not_answer_the_warm_up_is_closed_and_the_first_call_starts_one(self):
        session = self.agent.session("default")
        original = session.warm_up
        session.warm_up = lambda: original(wait_s=0) and False
        self.agent.prewarm()
        self.assertIsNone(session.proc)
        self.assertFalse(self.agent.default_session_waiting())
        first = self.call(1, "6 * 7")
        self.assertEqual(first["result"], "42")

    def test_calls_after_calls_and_after_a_restart_are_answered_with_their_output(self):
        self.agent.prewarm()
        session = self.agent.sessions["default"]
        self.assertIsNone(self.call(1, "x = 20")["error"])
        self.assertEqual(self.call(2, "print('out', x)\nx + 1")["result"], "21")
        self.assertEqual(self.out(2), b"out 20\n")
        first_selector = session.sel
        os.kill(session.proc.pid, signal.SIGKILL)
        session.proc.wait(timeout=10)
        again = self.call(3, "print('again')\n3")
        self.assertTrue(again["restarted"])
        self.assertEqual(again["result"], "3")
        self.assertEqual(self.out(3), b"again\n")
        self.assertIsNot(session.sel, first_selector)
        session.close()
        self.assertIsNone(session.sel)

    def test_the_users_variables_reach_the_prewarmed_interpreter_ahead_of_its_first_request(self):
        self.agent.prewarm()
        self.agent.secret_env.update({"AGENTNEST_T_TOKEN": "s3cret"})
        self.agent.hand_env_to_prewarmed()
        session = self.agent.sessions["default"]
        self.assertEqual(session.pending_env, {"AGENTNEST_T_TOKEN": "s3cret"})
        first = self.call(1, "import os\nos.environ.get('AGENTNEST_T_TOKEN')")
        self.assertEqual(first["result"], "'s3cret'")
        self.assertFalse(first["restarted"])
        self.assertIsNone(session.pending_env)
        self.assertEqual(session.generation, 1)

    def test_a_start_up_variable_replaces_the_prewarmed_interpreter_which_starts_with_it(self):
        self.agent.prewarm()
        self.agent.secret_env.update({"PYTHONHASHSEED": "7", "AGENTNEST_T_TOKEN": "s3cret"})
        self.agent.hand_env_to_prewarmed()
        session = self.agent.sessions["default"]
        self.assertIsNone(session.proc)
        self.assertFalse(self.agent.default_session_waiting())
        first = self.call(1, "import os\n(os.environ['PYTHONHASHSEED'], os.environ['AGENTNEST_T_TOKEN'])")
        self.assertEqual(first["result"], "('7', 's3cret')")
        self.assertIsNone(session.pending_env)

    def test_an_interpreter_restarted_before_its_first_request_gets_the_variables_once_at_start(self):
        self.agent.prewarm()
        self.agent.secret_env.update({"AGENTNEST_T_TOKEN": "s3cret"})
        self.agent.hand_env_to_prewarmed()
        session = self.agent.sessions["default"]
        os.kill(session.proc.pid, signal.SIGKILL)
        session.proc.wait(timeout=10)
        first = self.call(1, "import os\nos.environ.get('AGENTNEST_T_TOKEN')")
        self.assertTrue(first["restarted"])
        self.assertEqual(first["result"], "'s3cret'")
        self.assertIsNone(session.pending_env)


class TimerTest(unittest.TestCase):
    """The agent's one deadline thread: woken only for a deadline before its next look at the
    heap, so that a far one (a sandbox's expiry) costs no wake-up; near ones still fire."""

    def setUp(self):
        self.timer = agent.Timer()
        self.notified = 0
        original = self.timer.cond.notify

        def counting(n=1):
            self.notified += 1
            original(n)

        self.timer.cond.notify = counting
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # bounded: until the thread waits on the empty heap
            with self.timer.cond:
                if self.timer.wake_at not in (0.0, float("inf")):
                    break
            time.sleep(0.01)

    def test_a_deadline_past_the_next_look_is_queued_without_waking_the_thread(self):
        self.timer.schedule(3600, lambda: None)
        self.assertEqual(self.notified, 0)

    def test_a_near_deadline_wakes_the_thread_and_fires(self):
        fired = threading.Event()
        self.timer.schedule(3600, lambda: None)
        self.timer.schedule(0.05, fired.set)
        self.assertEqual(self.notified, 1)
        self.assertTrue(fired.wait(10))

    def test_deadlines_fire_in_order_and_a_cancelled_one_does_not(self):
        order = []
        done = threading.Event()
        self.timer.schedule(0.2, lambda: (order.append("late"), done.set()))
        cancelled = self.timer.schedule(0.05, lambda: order.append("cancelled"))
        self.timer.schedule(0.1, lambda: order.append("early"))
        agent.Timer.cancel(cancelled)
        self.assertTrue(done.wait(10))
        self.assertEqual(order, ["early", "late"])


if __name__ == "__main__":
    unittest.main()
