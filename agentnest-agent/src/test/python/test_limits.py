"""Which limit a call hit: the RLIMIT_NPROC a runtime with a kernel of its own is held to."""
import threading
import unittest

from agent_under_test import agent


class NprocLimitTest(unittest.TestCase):
    def probe_with_limit(self, nproc):
        p = agent.LimitProbe()
        p.nproc = nproc
        return p

    def test_a_full_nproc_limit_is_reported_as_the_pids_limit(self):
        probe = self.probe_with_limit(64)
        real_start = threading.Thread.start

        def refused(self):
            raise RuntimeError("can't start new thread")

        threading.Thread.start = refused
        try:
            probe.sample_tasks()
        finally:
            threading.Thread.start = real_start
        self.assertEqual(probe.hit(check_disk=False), "PIDS")

    def test_room_under_the_nproc_limit_is_no_limit_hit(self):
        probe = self.probe_with_limit(64)
        probe.sample_tasks()
        probe.sample_now()
        self.assertIsNone(probe.hit(check_disk=False))

    def test_the_engines_own_nproc_default_is_not_watched(self):
        # Docker's containers inherit a large RLIMIT_NPROC: not the sandbox's limit, no sampling.
        self.assertIsNone(agent.LimitProbe().nproc)

    def test_without_an_nproc_limit_nothing_is_counted(self):
        p = self.probe_with_limit(None)
        p.sample_tasks()
        self.assertFalse(p.nproc_full)


if __name__ == "__main__":
    unittest.main()
