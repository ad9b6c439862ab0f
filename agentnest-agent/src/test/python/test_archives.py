import io
import os
import stat
import tarfile
import tempfile
import unittest

from agent_under_test import agent


def archive(*members):
    """A tar stream of (TarInfo, bytes-or-None) pairs."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    buf.seek(0)
    return buf


def entry(name, kind=tarfile.REGTYPE, linkname="", mode=0o644):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.mode = mode
    return info


class ExtractTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.dest = os.path.realpath(os.path.join(self.tmp.name, "dest"))
        os.mkdir(self.dest)

    def extract(self, stream, strict=True, cap_bytes=1 << 20, cap_entries=100):
        return agent.extract(self.dest, stream, strict, cap_bytes, cap_entries)

    def refused(self, stream, code="BAD_ENTRY", **kw):
        with self.assertRaises(agent.ArchiveRefused) as raised:
            self.extract(stream, **kw)
        self.assertEqual(raised.exception.code, code, str(raised.exception))
        return str(raised.exception)

    def test_a_plain_archive_unpacks_with_its_sizes_counted(self):
        n, total = self.extract(archive((entry("d", tarfile.DIRTYPE, mode=0o755), None), (entry("d/f"), b"abc")))
        self.assertEqual((n, total), (2, 3))
        with open(os.path.join(self.dest, "d", "f"), "rb") as f:
            self.assertEqual(f.read(), b"abc")

    def test_dot_dot_in_a_name_is_path_traversal(self):
        self.assertIn("path traversal", self.refused(archive((entry("../evil"), b"x"))))
        self.refused(archive((entry("a/../../evil"), b"x")))
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "evil")))

    def test_an_absolute_name_is_refused(self):
        self.refused(archive((entry("/etc/cron.d/x"), b"x")))

    def test_a_symlink_pointing_outside_is_refused_in_strict_mode(self):
        self.refused(archive((entry("l", tarfile.SYMTYPE, linkname="/etc"), None)))
        self.refused(archive((entry("l", tarfile.SYMTYPE, linkname="../../etc"), None)))

    def test_a_file_is_never_written_through_a_symlink_from_the_same_archive(self):
        outside = os.path.join(self.tmp.name, "outside")
        os.mkdir(outside)
        stream = archive(
            (entry("l", tarfile.SYMTYPE, linkname=outside), None),
            (entry("l/planted"), b"x"),
        )
        self.refused(stream, strict=False)
        self.assertEqual(os.listdir(outside), [])

    def test_a_hardlink_to_a_file_outside_the_archive_is_refused(self):
        self.refused(archive((entry("h", tarfile.LNKTYPE, linkname="/etc/passwd"), None)))
        self.refused(archive((entry("h", tarfile.LNKTYPE, linkname="../x"), None)))
        # inside the destination but not one of the archive's own entries
        with open(os.path.join(self.dest, "pre"), "w") as f:
            f.write("existing")
        self.refused(archive((entry("h", tarfile.LNKTYPE, linkname="pre"), None)))

    def test_a_hardlink_to_an_earlier_entry_is_kept(self):
        n, _ = self.extract(archive((entry("f"), b"x"), (entry("h", tarfile.LNKTYPE, linkname="f"), None)))
        self.assertEqual(n, 2)
        self.assertEqual(os.stat(os.path.join(self.dest, "h")).st_ino, os.stat(os.path.join(self.dest, "f")).st_ino)

    def test_devices_and_fifos_are_refused(self):
        for kind in (tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE):
            with self.subTest(kind=kind):
                self.assertIn("special file", self.refused(archive((entry("dev", kind), None))))

    def test_names_that_differ_only_in_case_or_normalisation_are_refused_in_strict_mode(self):
        self.refused(archive((entry("Report"), b"a"), (entry("report"), b"b")))
        self.refused(archive((entry("caf\u00e9"), b"a"), (entry("cafe\u0301"), b"b")))

    def test_caps_on_entries_and_bytes_hold(self):
        self.refused(archive((entry("a"), b"1"), (entry("b"), b"2")), code="TOO_LARGE", cap_entries=1)
        self.refused(archive((entry("a"), b"12345")), code="TOO_LARGE", cap_bytes=4)

    def test_setuid_bits_are_dropped(self):
        self.extract(archive((entry("f", mode=0o6755), b"x")))
        mode = stat.S_IMODE(os.lstat(os.path.join(self.dest, "f")).st_mode)
        self.assertEqual(mode & 0o7000, 0)

    def test_an_entry_never_replaces_a_directory(self):
        os.mkdir(os.path.join(self.dest, "d"))
        self.refused(archive((entry("d"), b"x")))


class ArchiveRootTest(unittest.TestCase):
    def test_only_the_workspace_and_tmp_can_be_archive_roots(self):
        self.assertEqual(agent.archive_root("/tmp"), os.path.realpath("/tmp"))
        with self.assertRaises(agent.ArchiveRefused) as raised:
            agent.archive_root("/etc")
        self.assertEqual(raised.exception.code, "BAD_PATH")


if __name__ == "__main__":
    unittest.main()
