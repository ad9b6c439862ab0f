import os
import tempfile
import unittest
from unittest import mock

from agent_under_test import agent, new_agent


class WorkspaceTest(unittest.TestCase):
    """A temporary directory stands in for /workspace; a sibling directory is 'outside'."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.ws = os.path.realpath(os.path.join(self.tmp.name, "ws"))
        self.outside = os.path.realpath(os.path.join(self.tmp.name, "outside"))
        os.mkdir(self.ws)
        os.mkdir(self.outside)
        with open(os.path.join(self.outside, "secret"), "w") as f:
            f.write("host data")
        patcher = mock.patch.object(agent, "WORKSPACE", self.ws)
        patcher.start()
        self.addCleanup(patcher.stop)


class ResolveTest(WorkspaceTest):
    def test_a_relative_path_maps_into_the_workspace(self):
        self.assertEqual(agent.resolve("a/b.txt"), os.path.join(self.ws, "a", "b.txt"))

    def test_the_empty_path_and_dot_are_the_workspace_root(self):
        self.assertEqual(agent.resolve(""), self.ws)
        self.assertEqual(agent.resolve("./."), self.ws)

    def test_an_absolute_path_is_refused(self):
        with self.assertRaisesRegex(agent.PathRefused, "absolute path"):
            agent.resolve("/etc/passwd")

    def test_dot_dot_is_refused_wherever_it_is(self):
        for rel in ("..", "../x", "a/../../x", "a/..", "a/b/../c"):
            with self.subTest(rel=rel), self.assertRaisesRegex(agent.PathRefused, "'..'"):
                agent.resolve(rel)

    def test_nul_bytes_and_non_strings_are_refused(self):
        for rel in ("a\x00b", None, 42, ["a"]):
            with self.subTest(rel=rel), self.assertRaisesRegex(agent.PathRefused, "NUL"):
                agent.resolve(rel)

    def test_a_symlink_leading_outside_is_refused(self):
        os.symlink(self.outside, os.path.join(self.ws, "out"))
        with self.assertRaisesRegex(agent.PathRefused, "symlink"):
            agent.resolve("out/secret")
        with self.assertRaisesRegex(agent.PathRefused, "symlink"):
            agent.resolve("out")

    def test_a_symlink_that_stays_inside_is_followed(self):
        os.mkdir(os.path.join(self.ws, "real"))
        os.symlink("real", os.path.join(self.ws, "alias"))
        self.assertEqual(agent.resolve("alias/f"), os.path.join(self.ws, "real", "f"))

    def test_a_missing_path_is_not_found_only_when_it_must_exist(self):
        self.assertEqual(agent.resolve("nope"), os.path.join(self.ws, "nope"))
        with self.assertRaises(FileNotFoundError):
            agent.resolve("nope", must_exist=True)

    def test_a_prefix_sibling_of_the_workspace_is_outside(self):
        # /tmp/x/ws-evil starts with /tmp/x/ws but is not inside it.
        os.mkdir(self.ws + "-evil")
        os.symlink(self.ws + "-evil", os.path.join(self.ws, "evil"))
        with self.assertRaisesRegex(agent.PathRefused, "symlink"):
            agent.resolve("evil")


class OpenBeneathTest(WorkspaceTest):
    def test_a_final_symlink_is_not_followed(self):
        os.symlink(os.path.join(self.outside, "secret"), os.path.join(self.ws, "link"))
        real = os.path.join(self.ws, "link")  # what resolve() would give if the link was planted later
        with self.assertRaises(OSError) as raised:
            agent.open_beneath(real, os.O_RDONLY)
        self.assertEqual(raised.exception.errno, 40)  # ELOOP

    def test_a_parent_outside_the_workspace_is_refused(self):
        # A directory on the way swapped for a symlink after resolve() checked it.
        with self.assertRaisesRegex(agent.PathRefused, "replaced by a symlink"):
            agent.open_beneath(os.path.join(self.outside, "secret"), os.O_RDONLY)


class FileOpsTest(WorkspaceTest):
    def call(self, header, payload=b""):
        a = new_agent()
        header.setdefault("id", 7)
        a.dispatch(header, payload)
        return a, a.channel.final(header["id"])

    def test_a_written_file_reads_back(self):
        _, res = self.call({"op": "fs_write", "path": "d/f.txt"}, b"hello")
        self.assertEqual((res["ev"], res["size"], res["path"]), ("res", 5, "d/f.txt"))
        a, res = self.call({"op": "fs_read", "path": "d/f.txt"})
        self.assertEqual(res["size"], 5)
        self.assertEqual(b"".join(p for h, p in a.channel.of(7) if h["ev"] == "data"), b"hello")

    def test_reading_through_a_symlink_to_outside_is_a_bad_path(self):
        os.symlink(os.path.join(self.outside, "secret"), os.path.join(self.ws, "leak"))
        a, res = self.call({"op": "fs_read", "path": "leak"})
        self.assertEqual(res["code"], "BAD_PATH")
        self.assertFalse(any(h["ev"] == "data" for h, _ in a.channel.of(7)))

    def test_writing_through_a_symlink_that_stays_inside_writes_its_target(self):
        with open(os.path.join(self.ws, "target"), "w") as f:
            f.write("old")
        os.symlink("target", os.path.join(self.ws, "alias"))
        _, res = self.call({"op": "fs_write", "path": "alias"}, b"new")
        self.assertEqual((res["ev"], res["path"]), ("res", "target"))
        with open(os.path.join(self.ws, "target")) as f:
            self.assertEqual(f.read(), "new")

    def test_the_workspace_root_cannot_be_deleted(self):
        _, res = self.call({"op": "fs_delete", "path": "", "recursive": True})
        self.assertEqual(res["code"], "BAD_PATH")
        self.assertTrue(os.path.isdir(self.ws))

    def test_errors_carry_the_codes_the_host_knows(self):
        os.mkdir(os.path.join(self.ws, "dir"))
        with open(os.path.join(self.ws, "dir", "f"), "w") as f:
            f.write("x")
        cases = [
            ({"op": "fs_read", "path": "missing"}, "NOT_FOUND"),
            ({"op": "fs_read", "path": "dir"}, "NOT_A_FILE"),
            ({"op": "fs_list", "path": "dir/f"}, "NOT_A_DIRECTORY"),
            ({"op": "fs_delete", "path": "dir"}, "NOT_EMPTY"),
            ({"op": "fs_mkdir", "path": "dir", "parents": False}, "EXISTS"),
            ({"op": "fs_read", "path": "dir/f", "max_bytes": 0}, "TOO_LARGE"),
            ({"op": "fs_stat", "path": "../x"}, "BAD_PATH"),
        ]
        for header, code in cases:
            with self.subTest(header=header):
                _, res = self.call(dict(header))
                self.assertEqual((res["ev"], res["code"]), ("err", code))


if __name__ == "__main__":
    unittest.main()
