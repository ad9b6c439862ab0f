import json
import os
import struct
import tempfile
import threading
import unittest
from unittest import mock

from agent_under_test import agent


def frame(header, payload=b"", magic=agent.MAGIC):
    hb = json.dumps(header).encode("utf-8") if isinstance(header, dict) else header
    return magic + struct.pack(">II", len(hb), len(payload)) + hb + payload


class PipeChannelTest(unittest.TestCase):
    """The agent's channel over a real pipe: what the host writes, the agent reads."""

    def setUp(self):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        self.w = w
        self.channel = agent.Channel(r, -1)

    def feed(self, data):
        # Everything at once, then end of stream: every read_frame() call below is bounded by it.
        os.write(self.w, data)
        os.close(self.w)

    def test_a_frame_reads_back_as_header_and_payload(self):
        self.feed(frame({"op": "ping", "id": 1}, b"\x00\xffdata"))
        self.assertEqual(self.channel.read_frame(), ({"op": "ping", "id": 1}, b"\x00\xffdata"))
        self.assertIsNone(self.channel.read_frame())

    def test_garbage_before_a_frame_is_skipped(self):
        self.feed(b"junk\xa9x" + frame({"op": "ping", "id": 2}))
        self.assertEqual(self.channel.read_frame()[0]["id"], 2)

    def test_an_oversized_header_length_is_not_read_and_the_next_frame_is_found(self):
        huge = agent.MAGIC + struct.pack(">II", agent.MAX_HEADER + 1, 0)
        self.feed(huge + frame({"op": "ping", "id": 3}))
        self.assertEqual(self.channel.read_frame()[0]["id"], 3)

    def test_an_oversized_payload_length_is_not_read(self):
        huge = agent.MAGIC + struct.pack(">II", 2, agent.MAX_PAYLOAD + 1) + b"{}"
        self.feed(huge + frame({"op": "ping", "id": 4}))
        self.assertEqual(self.channel.read_frame()[0]["id"], 4)

    def test_a_truncated_frame_is_the_end_of_the_stream(self):
        self.feed(frame({"op": "ping", "id": 5}, b"0123456789")[:-3])
        self.assertIsNone(self.channel.read_frame())

    def test_a_truncated_length_is_the_end_of_the_stream(self):
        self.feed(agent.MAGIC + b"\x00\x00")
        self.assertIsNone(self.channel.read_frame())

    def test_headers_that_are_not_a_json_object_are_skipped(self):
        self.feed(
            frame(b"\xff\xfe")  # not UTF-8
            + frame(b"{not json")
            + frame(b"[1, 2]")  # JSON, but not an object
            + frame({"op": "ping", "id": 6})
        )
        self.assertEqual(self.channel.read_frame()[0]["id"], 6)


class BufferedReadTest(unittest.TestCase):
    """Reads are buffered (one read per burst of frames, not five per frame: under gVisor each
    read traps into the sentry), and a frame is the same whatever the reads cut it into."""

    def pipe_channel(self):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        return agent.Channel(r, -1), w

    def test_frames_that_arrive_together_take_one_read(self):
        channel, w = self.pipe_channel()
        os.write(w, frame({"op": "init"}, b"{}") + frame({"op": "hello", "id": 1}) + frame({"op": "set_ttl", "id": 2}))
        os.close(w)
        with mock.patch.object(agent.os, "read", wraps=os.read) as reads:
            ops = [channel.read_frame()[0]["op"] for _ in range(3)]
            self.assertEqual(reads.call_count, 1)
        self.assertEqual(ops, ["init", "hello", "set_ttl"])
        self.assertIsNone(channel.read_frame())

    def test_a_frame_larger_than_the_read_ahead_and_the_next_one_read_back_whole(self):
        channel, w = self.pipe_channel()
        big = bytes(range(256)) * (3 * agent.READ_AHEAD // 256 + 7)
        data = b"junk" + frame({"op": "fs_write", "id": 1}, big) + frame({"op": "ping", "id": 2}, b"tail")

        def writer():
            # Bounded: writes the fixed bytes above in small pieces, then ends the stream.
            for i in range(0, len(data), 4093):
                os.write(w, data[i : i + 4093])
            os.close(w)

        t = threading.Thread(target=writer, daemon=True)
        t.start()
        self.assertEqual(channel.read_frame(), ({"op": "fs_write", "id": 1}, big))
        self.assertEqual(channel.read_frame(), ({"op": "ping", "id": 2}, b"tail"))
        self.assertIsNone(channel.read_frame())
        t.join(10)
        self.assertLessEqual(len(channel.rbuf), 2 * agent.READ_AHEAD)


class AgentLinkTest(unittest.TestCase):
    """On the agent link (a socket), the container's stdin/stdout stay as the channel's stdio side
    for a second host: its calls are answered there, everything else goes to the link while it is
    up, and to stdio once it ended. Nothing kills the agent when the link's host goes (sends to
    it are dropped, not a SIGPIPE)."""

    def setUp(self):
        import socket

        self.host, mine = socket.socketpair()
        self.addCleanup(self.host.close)
        self.host.settimeout(60)
        self.stdin_r, self.stdin_w = os.pipe()
        self.stdout_r, self.stdout_w = os.pipe()
        for fd in (self.stdin_r, self.stdin_w, self.stdout_r, self.stdout_w):
            self.addCleanup(self.close_quietly, fd)
        self.channel = agent.Channel(os.dup(mine.fileno()), mine.detach(), link=True)
        self.channel.stdio_side = agent.Channel(self.stdin_r, self.stdout_w)
        self.agent = agent.Agent(self.channel, pool_size=1, timer=mock.Mock())

    @staticmethod
    def close_quietly(fd):
        try:
            os.close(fd)
        except OSError:
            pass

    def from_link(self):
        return self.host.recv(4096)

    def from_stdout(self):
        return os.read(self.stdout_r, 4096)

    def test_frames_go_over_the_link_while_its_host_holds_it(self):
        self.host.sendall(frame({"op": "ping", "id": 1}))
        self.assertEqual(self.channel.read_frame()[0]["id"], 1)
        self.agent.send({"id": 1, "ev": "res"})
        self.assertIn(b'"id":1', self.from_link())

    def test_a_second_hosts_calls_are_answered_on_stdout_and_the_links_on_the_link(self):
        self.agent.note_stdio({"op": "ping", "id": 7})
        self.agent.send({"id": 7, "ev": "out", "data": "x"})
        self.agent.send({"id": 9, "ev": "res"})
        self.agent.send({"id": 7, "ev": "res"})
        self.assertIn(b'"id":9', self.from_link())
        got = b""
        while got.count(agent.MAGIC) < 2:
            got += self.from_stdout()
        self.assertIn(b'"ev":"out"', got)
        self.assertIn(b'"ev":"res"', got)
        self.assertEqual(self.agent.stdio_ids, {}, "a call's final frame ends its entry")
        self.agent.send({"id": 7, "ev": "res"})
        self.assertIn(b'"id":7', self.from_link(), "an id no longer known goes to the link")

    def test_the_second_hosts_tunnels_stay_on_stdout_until_they_close(self):
        self.agent.note_stdio({"op": "port_open", "tid": -3, "port": 80})
        self.agent.send({"ev": "tcp_data", "tid": -3})
        self.agent.send({"ev": "tcp_close", "tid": -3})
        got = b""
        while got.count(agent.MAGIC) < 2:
            got += self.from_stdout()
        self.assertEqual(self.agent.stdio_ids, {})

    def test_the_end_of_the_link_sends_everything_to_stdout(self):
        self.host.close()
        self.assertIsNone(self.channel.read_frame())
        self.channel.end_link()
        self.agent.send({"id": 8, "ev": "res"})
        self.assertIn(b'"id":8', self.from_stdout())
        self.agent.note_stdio({"op": "ping", "id": 10})
        self.assertEqual(self.agent.stdio_ids, {}, "nothing to remember once all goes there")

    def test_a_send_after_the_host_went_is_dropped_and_the_reader_then_sees_the_end(self):
        self.host.close()
        for _ in range(3):
            self.agent.send({"ev": "out", "id": 5, "data": "x" * 1000})
        self.assertIsNone(self.channel.read_frame())

    def test_the_remembered_calls_are_bounded(self):
        with mock.patch.object(agent.Agent, "MAX_STDIO_IDS", 4):
            for i in range(10):
                self.agent.note_stdio({"op": "ping", "id": i})
        self.assertEqual(list(self.agent.stdio_ids), [6, 7, 8, 9])


class CounterTest(unittest.TestCase):
    """The limit probe's cgroup counters: read with plain os calls, a missing file not looked for
    again (the cgroup layout of a running container does not change)."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        self.addCleanup(agent._MISSING_COUNTERS.clear)

    def test_the_first_file_that_exists_gives_the_counter(self):
        present = os.path.join(self.dir, "memory.events")
        with open(present, "w") as f:
            f.write("low 0\noom 2\noom_kill 3\n")
        missing = os.path.join(self.dir, "oom_control")
        self.assertEqual(agent.read_counter((missing, present), "oom_kill"), 3)
        self.assertIsNone(agent.read_counter((missing, present), "max"))

    def test_a_missing_file_is_not_opened_again(self):
        missing = os.path.join(self.dir, "pids.events")
        self.assertIsNone(agent.read_counter((missing,), "max"))
        with open(missing, "w") as f:
            f.write("max 5\n")
        with mock.patch.object(agent.os, "open", wraps=os.open) as opens:
            self.assertIsNone(agent.read_counter((missing,), "max"))
            self.assertEqual(opens.call_count, 0)


class SendTest(unittest.TestCase):
    def test_a_sent_frame_is_magic_lengths_ascii_json_and_payload(self):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        agent.Channel(-1, w).send({"ev": "out", "id": 1, "s": "\u00e9"}, b"xyz")
        os.close(w)
        data = os.read(r, 1 << 16)
        self.assertEqual(data[:2], agent.MAGIC)
        hlen, plen = struct.unpack(">II", data[2:10])
        header = data[10 : 10 + hlen]
        self.assertTrue(all(b < 0x80 for b in header), header)  # ensure_ascii: no raw UTF-8
        self.assertEqual(json.loads(header), {"ev": "out", "id": 1, "s": "\u00e9"})
        self.assertEqual(data[10 + hlen :], b"xyz")
        self.assertEqual(plen, 3)


class InitTest(unittest.TestCase):
    def init(self, payload, op="init"):
        return ({"op": op}, json.dumps(payload).encode("utf-8") if not isinstance(payload, bytes) else payload)

    def status(self, frame):
        with self.assertRaises(agent.InitRefused) as raised:
            agent.parse_init(frame)
        return raised.exception.status

    def test_the_secrets_of_the_first_frame_are_taken(self):
        self.assertEqual(agent.parse_init(self.init({"env": {"TOKEN": "s3cr3t"}})), {"TOKEN": "s3cr3t"})
        self.assertEqual(agent.parse_init(self.init({})), {})

    def test_no_first_frame_ends_the_agent_with_97(self):
        self.assertEqual(self.status(None), 97)

    def test_anything_but_a_well_formed_init_ends_the_agent_with_98(self):
        self.assertEqual(self.status(self.init({"env": {}}, op="exec")), 98)
        self.assertEqual(self.status(self.init(b"\xff")), 98)
        self.assertEqual(self.status(self.init(b"[]")), 98)
        self.assertEqual(self.status(self.init({"env": ["A=1"]})), 98)
        self.assertEqual(self.status(self.init({"env": {"K%d" % i: "v" for i in range(agent.MAX_SECRETS + 1)}})), 98)
        self.assertEqual(self.status(({"op": "init"}, b" " * (agent.MAX_SECRET_BYTES + 1))), 98)

    def test_names_and_values_that_cannot_be_environment_variables_are_dropped(self):
        env = {"": "x", "A=B": "x", "N\x00": "x", "V": "a\x00b", "NUM": 1, "OK": "fine"}
        self.assertEqual(agent.parse_init(self.init({"env": env})), {"OK": "fine"})


if __name__ == "__main__":
    unittest.main()
