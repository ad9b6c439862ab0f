"""The CA the host sends with egress_listen: the PEM bundle and the Java trust store (PKCS12)."""
import os
import socket
import stat
import tempfile
import unittest
from unittest import mock

from agent_under_test import agent, new_agent

PEM = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def pfx(content_len):
    """A DER SEQUENCE that starts like a PFX (version 3) with content_len bytes of content."""
    body = b"\x02\x01\x03" + b"\x04" * (content_len - 3)
    if content_len < 0x80:
        return b"\x30" + bytes([content_len]) + body
    n = (content_len.bit_length() + 7) // 8
    return b"\x30" + bytes([0x80 | n]) + content_len.to_bytes(n, "big") + body


class TrustTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        root = os.path.join(self.dir.name, ".agentnest")
        self.bundle = os.path.join(root, "ca-bundle.pem")
        self.store = os.path.join(root, "ca-trust.p12")
        for name, value in (("CA_BUNDLE", self.bundle), ("CA_TRUST_STORE", self.store), ("SYSTEM_CA_BUNDLES", ())):
            patcher = mock.patch.object(agent, name, value)
            patcher.start()
            self.addCleanup(patcher.stop)
        self.a = new_agent()
        # A listener of the test's own, so egress_listen starts no accept thread.
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.addCleanup(self.listener.close)
        self.a.egress_listener = self.listener

    def listen(self, header, payload):
        header = dict({"op": "egress_listen", "id": 7, "port": 3128}, **header)
        self.a.dispatch(header, payload)
        return self.a.channel.final(7)

    def test_the_pem_and_the_trust_store_are_written_beside_each_other_readable_by_all(self):
        store = pfx(5000)

        res = self.listen({"trust_store": len(store)}, PEM + store)

        self.assertEqual(res["ev"], "res", res)
        with open(self.bundle, "rb") as f:
            self.assertEqual(f.read(), PEM)
        with open(self.store, "rb") as f:
            self.assertEqual(f.read(), store)
        self.assertEqual(stat.S_IMODE(os.stat(self.store).st_mode), 0o644)
        self.assertFalse(os.path.exists(self.store + ".tmp"))

    def test_a_host_that_sends_no_trust_store_gets_the_pem_bundle_alone(self):
        res = self.listen({}, PEM)

        self.assertEqual(res["ev"], "res", res)
        self.assertTrue(os.path.exists(self.bundle))
        self.assertFalse(os.path.exists(self.store))

    def test_a_trust_store_that_is_not_pkcs12_is_refused_and_nothing_half_written_stays(self):
        bad = (
            b"not der at all",
            pfx(5000)[:-1],  # shorter than its length says
            pfx(5000) + b"x",  # longer
            b"\x30\x06\x02\x01\x02\x30\x01\x00",  # version 2
            b"\x30\x84\x00\x00\x00\x03\x02\x01\x03",  # a length form no store of ours uses
        )
        for store in bad:
            with self.subTest(store=store[:12]):
                res = self.listen({"trust_store": len(store)}, PEM + store)
                self.assertEqual((res["ev"], res["code"]), ("err", "EGRESS"))
                self.assertIn("PKCS12", res["message"])
                self.assertFalse(os.path.exists(self.store))
                self.a.channel.frames.clear()

    def test_a_trust_store_over_the_bound_is_refused(self):
        store = pfx(agent.MAX_TRUST_STORE)

        res = self.listen({"trust_store": len(store)}, PEM + store)

        self.assertEqual(res["code"], "EGRESS")
        self.assertFalse(os.path.exists(self.store))

    def test_a_trust_store_length_that_does_not_fit_the_payload_is_an_error(self):
        for n in (-1, len(PEM) + 9, "8", 1.5, True):
            with self.subTest(n=n):
                res = self.listen({"trust_store": n}, PEM + pfx(6))
                self.assertEqual(res["ev"], "err")
                self.a.channel.frames.clear()
        self.assertFalse(os.path.exists(self.store))
        self.assertFalse(os.path.exists(self.bundle))

    def test_a_pem_split_at_the_wrong_place_is_refused(self):
        store = pfx(100)

        res = self.listen({"trust_store": len(store) + len(PEM)}, PEM + store)

        self.assertEqual(res["code"], "EGRESS")


if __name__ == "__main__":
    unittest.main()
