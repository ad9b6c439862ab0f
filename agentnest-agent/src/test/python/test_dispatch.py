import inspect
import os
import tempfile
import unittest
from unittest import mock

from agent_under_test import SOURCE, agent, load, new_agent


class DispatchTest(unittest.TestCase):
    def setUp(self):
        self.a = new_agent()

    def final(self, header, payload=b""):
        self.a.dispatch(header, payload)
        return self.a.channel.final(header.get("id"))

    def test_every_op_has_a_handler_taking_agent_call_header_and_payload(self):
        for op, handler in agent.OPS.items():
            with self.subTest(op=op):
                self.assertEqual(list(inspect.signature(handler).parameters), ["agent", "call_id", "h", "payload"])

    def test_an_unknown_op_is_an_error_naming_it(self):
        res = self.final({"op": "format_disk", "id": 1})
        self.assertEqual((res["ev"], res["code"]), ("err", "UNKNOWN_OP"))
        self.assertIn("format_disk", res["message"])

    def test_an_op_that_is_not_a_string_is_unknown(self):
        for op in (None, 5, ["exec"], {"a": 1}):
            with self.subTest(op=op):
                self.assertEqual(self.final({"op": op, "id": 2})["code"], "UNKNOWN_OP")

    def test_a_frame_without_an_integer_call_id_gets_no_answer(self):
        for call_id in (None, "1", 1.5):
            self.a.dispatch({"op": "ping", "id": call_id}, b"")
        self.assertEqual(self.a.channel.frames, [])

    def test_init_after_the_first_frame_is_refused(self):
        res = self.final({"op": "init", "id": 3}, b'{"env":{"X":"y"}}')
        self.assertEqual(res["code"], "UNKNOWN_OP")
        self.assertEqual(self.a.secret_env, {})

    def test_a_bad_argument_becomes_an_agent_error_not_a_crash(self):
        res = self.final({"op": "set_ttl", "id": 4, "expires_at": "soon"})
        self.assertEqual(res["code"], "AGENT")
        self.assertIn("ValueError", res["message"])
        res = self.final({"op": "egress_listen", "id": 5, "port": "any"})
        self.assertEqual(res["code"], "AGENT")

    def test_a_tunnel_frame_for_an_unknown_tunnel_is_dropped(self):
        for op in ("tcp_data", "tcp_eof", "tcp_ack", "tcp_close"):
            self.a.dispatch({"op": op, "tid": 99}, b"x")
        self.assertEqual(self.a.channel.frames, [])

    def test_port_open_carries_a_connection_to_a_local_server_both_ways(self):
        import socket
        import threading
        import time

        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        srv.settimeout(10)

        def echo():
            c, _ = srv.accept()
            c.sendall(b"echo:" + c.recv(100))
            c.close()

        threading.Thread(target=echo, daemon=True).start()
        self.a.dispatch({"op": "port_open", "tid": -1, "port": srv.getsockname()[1], "window": 200000}, b"")
        self.a.dispatch({"op": "tcp_data", "tid": -1}, b"hi")
        deadline = time.time() + 10
        while time.time() < deadline and not any(h["ev"] == "tcp_eof" for h, _ in self.a.channel.frames):
            time.sleep(0.01)
        data = b"".join(p for h, p in self.a.channel.frames if h["ev"] == "tcp_data")
        self.assertEqual(data, b"echo:hi")
        self.assertEqual(self.a.tunnels[-1].credit, 200000 - len(data))
        srv.close()

    def test_a_peer_that_hung_up_ends_its_tunnel_not_the_agent(self):
        import signal
        import socket
        import time

        # As in the agent's main(): SIGPIPE at its default would end the process on a write to a
        # closed socket, unless the write asks for no signal.
        old = signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        try:
            srv = socket.socket()
            srv.bind(("127.0.0.1", 0))
            srv.listen(1)
            self.a.dispatch({"op": "port_open", "tid": -3, "port": srv.getsockname()[1]}, b"")
            conn, _ = srv.accept()
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            conn.close()
            srv.close()
            for _ in range(50):
                self.a.dispatch({"op": "tcp_data", "tid": -3}, b"x" * 65536)
                time.sleep(0.005)
            deadline = time.time() + 10
            while time.time() < deadline and not any(h["ev"] == "tcp_close" for h, _ in self.a.channel.frames):
                time.sleep(0.01)
            self.assertIn(({"ev": "tcp_close", "tid": -3}, b""), self.a.channel.frames)
        finally:
            signal.signal(signal.SIGPIPE, old)

    def test_port_open_refuses_agent_ids_and_bad_ports(self):
        self.a.dispatch({"op": "port_open", "tid": 5, "port": 80}, b"")
        self.assertEqual(self.a.channel.frames, [])
        self.a.dispatch({"op": "port_open", "tid": -2, "port": 70000}, b"")
        self.assertEqual(self.a.channel.frames, [({"ev": "tcp_close", "tid": -2}, b"")])

    def test_ping_and_hello_answer(self):
        self.assertEqual(self.final({"op": "ping", "id": 6})["ev"], "res")
        hello = self.final({"op": "hello", "id": 7})
        self.assertEqual(hello["version"], agent.PROTOCOL_VERSION)
        self.assertEqual(hello["workspace"], agent.WORKSPACE)

    def test_signal_for_no_running_call_finds_nothing(self):
        self.assertFalse(self.final({"op": "signal", "id": 8, "target": 12345})["found"])

    def test_a_failing_call_thread_answers_with_an_agent_error(self):
        def boom():
            raise RuntimeError("bug")

        self.a.spawn(9, boom)
        res = self.a.channel.final(9)
        self.assertEqual((res["code"], res["message"]), ("AGENT", "RuntimeError: bug"))

    def test_a_command_runs_on_a_call_thread_and_streams_its_output(self):
        with tempfile.TemporaryDirectory() as ws, mock.patch.object(agent, "WORKSPACE", ws):
            res = self.final({"op": "exec", "id": 10, "cmd": "echo hi; echo err >&2; exit 3", "timeout_ms": 10000})
            self.assertEqual(res["exit_code"], 3)
            out = {h["s"]: p for h, p in self.a.channel.of(10) if h["ev"] == "out"}
            self.assertEqual(out, {"o": b"hi\n", "e": b"err\n"})

    def test_a_set_ttl_that_only_extends_keeps_a_later_expiry(self):
        later = 4_000_000_000.0
        self.final({"op": "set_ttl", "id": 11, "expires_at": later})
        res = self.final({"op": "set_ttl", "id": 12, "expires_at": later - 100, "extend_only": True})
        self.assertEqual(res["expires_at"], later)


class ProtocolTest(unittest.TestCase):
    def test_the_protocol_lists_every_op_and_every_frame_type_once(self):
        p = agent.protocol()
        self.assertEqual(p["ops"], sorted(agent.OPS))
        self.assertEqual(len(p["events"]), len(set(p["events"])))
        self.assertIn("res", p["events"])
        self.assertIn("tcp_open", p["events"])

    def test_every_frame_type_the_agent_sends_is_a_named_constant(self):
        # protocol() lists the EV_ constants: a literal "ev" would be a frame type nobody checks.
        import re

        with open(SOURCE, encoding="utf-8") as f:
            literals = re.findall(r'"ev": "[a-z_]*"', f.read())
        self.assertEqual(literals, [])

    def test_importing_the_agent_leaves_the_standard_streams_alone(self):
        # main() takes fds 0/1/2 for the channel and points them at /dev/null; importing must not.
        def streams():
            return [(st.st_dev, st.st_ino) for st in (os.fstat(0), os.fstat(1), os.fstat(2))]

        before = streams()
        load()
        self.assertEqual(streams(), before)


if __name__ == "__main__":
    unittest.main()
