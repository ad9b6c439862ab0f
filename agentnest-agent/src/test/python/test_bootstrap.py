import importlib.util
import marshal
import os
import socket
import subprocess
import sys
import tempfile
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


class AgentLinkTest(unittest.TestCase):
    """With AGENTNEST_LINK ("socket:token"), the bootstrap connects to the host's socket, presents
    the token, and reads the agent from it; the agent keeps the original stdin/stdout for a later
    host and never sees the token in its environment."""

    AGENT = (
        b"import os,sys\n"
        b"print('agent', AGENTNEST_WORKER_SOURCE, type(AGENTNEST_STDIO).__name__,"
        b" os.environ.get('AGENTNEST_LINK'))\n"
    )

    def test_the_agent_comes_over_the_link_and_answers_on_it(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "agent.sock")
            srv = socket.socket(socket.AF_UNIX)
            srv.bind(path)
            srv.listen(1)
            srv.settimeout(60)
            with open(BOOTSTRAP, encoding="utf-8") as f:
                src = f.read()
            env = dict(os.environ, AGENTNEST_LINK=path + ":abc123")
            p = subprocess.Popen(
                [sys.executable, "-u", "-c", src],
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            try:
                conn, _ = srv.accept()
                conn.settimeout(60)
                got = b""
                while not got.endswith(b"\n"):
                    got += conn.recv(1)
                self.assertEqual(got, b"abc123\n")
                conn.sendall(payload(self.AGENT))
                out = b""
                while not out.endswith(b"\n"):
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    out += chunk
                self.assertEqual(out, b"agent # worker tuple None\n")
                self.assertEqual(p.wait(timeout=60), 0)
                self.assertEqual(p.stdout.read(), b"", "nothing goes to the container's stdout")
            finally:
                p.kill()
                p.wait(timeout=60)
                for f in (p.stdin, p.stdout, p.stderr):
                    f.close()
                srv.close()

    def test_an_unreachable_link_ends_the_bootstrap_with_96_and_says_why(self):
        with tempfile.TemporaryDirectory() as d:
            with open(BOOTSTRAP, encoding="utf-8") as f:
                src = f.read()
            env = dict(os.environ, AGENTNEST_LINK=os.path.join(d, "none.sock") + ":abc123")
            r = subprocess.run(
                [sys.executable, "-u", "-c", src],
                env=env,
                input=b"",
                capture_output=True,
                timeout=60,
            )
            self.assertEqual(r.returncode, 96)
            self.assertIn(b"cannot reach the agent link", r.stderr)


if __name__ == "__main__":
    unittest.main()
