import importlib.util
import marshal
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BOOTSTRAP = os.path.normpath(
    os.path.join(HERE, "..", "..", "main", "resources", "io", "agentnest", "agent", "bootstrap.py")
)


def payload(agent_source, code=b"", worker=b"# worker"):
    head = b"%010d%010d%010d" % (len(agent_source), len(worker), len(code))
    return head + worker + agent_source + code


def run(data):
    with open(BOOTSTRAP, encoding="utf-8") as f:
        src = f.read()
    # Bounded: the bootstrap reads exactly what the lengths say, and the "agent" here prints one
    # line and ends.
    return subprocess.run(
        [sys.executable, "-u", "-c", src], input=data, capture_output=True, timeout=60
    )


class BootstrapTest(unittest.TestCase):
    """The bootstrap runs the host-compiled agent when its interpreter's magic number matches,
    and compiles the source otherwise: a stale or foreign compiled agent is never run."""

    SOURCE = b"print('from source', AGENTNEST_WORKER_SOURCE)"

    def test_the_source_runs_when_no_compiled_agent_is_sent(self):
        r = run(payload(self.SOURCE))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"from source # worker\n")

    def test_a_compiled_agent_for_this_python_runs_instead_of_the_source(self):
        code = compile("print('from bytecode', AGENTNEST_WORKER_SOURCE)", "agentnest-agent.py", "exec")
        r = run(payload(self.SOURCE, importlib.util.MAGIC_NUMBER + marshal.dumps(code)))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"from bytecode # worker\n")

    def test_a_compiled_agent_for_another_python_is_ignored(self):
        code = compile("print('from bytecode')", "agentnest-agent.py", "exec")
        other = bytes([importlib.util.MAGIC_NUMBER[0] ^ 0x55]) + importlib.util.MAGIC_NUMBER[1:]
        r = run(payload(self.SOURCE, other + marshal.dumps(code)))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"from source # worker\n")

    def test_a_short_stream_ends_the_bootstrap_with_97(self):
        r = run(payload(self.SOURCE)[:-5])
        self.assertEqual(r.returncode, 97)


if __name__ == "__main__":
    unittest.main()
