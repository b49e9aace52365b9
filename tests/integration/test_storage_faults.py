"""Storage faults are errors, never "missing" and never skipped (issue 14).

- A record that does not decode (bytes flipped in the shard file while the node was down) is a 500
  naming the shard and the key: for a GET, `_all_docs` and `_bulk_get`; a `_changes` feed that
  reaches it stops short (the client sees a failed response, not a complete one without the row).
  Before, a GET answered 404 and listings skipped the document silently.
- A commit that fails (fdatasync returning an error, injected into the real process with libfiu's
  POSIX preload) fails its request with a 500, and the shard stays read-only until the node is
  restarted (LevelDB's rule: after a failed sync the file's state is unknown). Before, the failure
  was only logged and later writes carried on.
"""
import glob
import http.client
import os
import shutil
import stat
import struct
import subprocess
import tempfile
import unittest

from harness import BIN, Node, NodeTest, is_sanitized, main

BAD_ID = "corrupt-me-0123456789"


def corrupt_doc_record(data_dir, doc_id):
    """Overwrites with 0xff the value of every LMDB leaf node keyed exactly `doc_id`.

    Walks the file page by page (4 KB pages: a 16-byte header with flags at 10, lower at 12; then
    the node offsets) and follows only the offsets, so stale bytes in a page's free space are never
    mistaken for a node. A node is: data size (two uint16), flags (uint16), key size (uint16), key,
    data. Only the docs table has `doc_id` alone as a key, so the match is the rev-tree record.
    """
    key = doc_id.encode()
    patched = 0
    for path in glob.glob(os.path.join(data_dir, "shards", "**", "*"), recursive=True):
        if not os.path.isfile(path) or path.endswith("-lock"):
            continue
        with open(path, "r+b") as f:
            data = bytearray(f.read())
            for page in range(0, len(data) - 4095, 4096):
                flags, lower, upper = struct.unpack_from("<HHH", data, page + 10)
                if not flags & 0x02 or flags & 0x0C or not 16 <= lower <= upper <= 4096:
                    continue  # not a plain leaf page (P_LEAF without P_OVERFLOW or P_META)
                for i in range((lower - 16) // 2):
                    (node,) = struct.unpack_from("<H", data, page + 16 + 2 * i)
                    lo, hi, nflags, ksize = struct.unpack_from("<HHHH", data, page + node)
                    start = page + node + 8
                    if nflags == 0 and ksize == len(key) and data[start:start + ksize] == key:
                        size = lo | (hi << 16)
                        data[start + ksize:start + ksize + size] = b"\xff" * size
                        patched += 1
            f.seek(0)
            f.write(data)
    return patched


class CorruptRecord(NodeTest):
    def test_a_corrupt_record_is_an_error_not_missing(self):
        self.assertEqual(self.node.put("/faulty?q=1").status, 201)
        self.assertEqual(self.node.put(f"/faulty/{BAD_ID}", {"v": 1}).status, 201)
        self.assertEqual(self.node.put("/faulty/fine", {"v": 2}).status, 201)
        self.node.stop()
        self.assertGreater(corrupt_doc_record(self.node.data_dir, BAD_ID), 0)
        self.node.start()

        r = self.node.get(f"/faulty/{BAD_ID}")
        self.assertError(r, 500, "internal_server_error")
        self.assertIn(f"corrupt document record '{BAD_ID}'", r.json["reason"])
        r = self.node.get("/faulty/fine")
        self.assertEqual(r.status, 200, r)  # the rest of the shard reads
        self.assertError(self.node.get("/faulty/_all_docs"), 500, "internal_server_error")
        self.assertError(self.node.get(f'/faulty/_all_docs?keys=["{BAD_ID}"]'), 500, "internal_server_error")
        r = self.node.post("/faulty/_bulk_get", {"docs": [{"id": BAD_ID}]})
        self.assertError(r, 500, "internal_server_error")
        # The feed reads the change (by_seq is intact) but not the document: it stops short.
        c = http.client.HTTPConnection("127.0.0.1", self.node.port, timeout=10)
        c.request("GET", "/faulty/_changes?include_docs=true", headers=self.node.auth_header())
        resp = c.getresponse()
        self.assertEqual(resp.status, 200)
        with self.assertRaises(http.client.IncompleteRead):
            resp.read()
        c.close()
        with open(self.node.log.name) as f:
            self.assertIn(f"corrupt document record '{BAD_ID}'", f.read())
        self.assertEqual(self.node.get("/_up", fresh=True).status, 200)


def fiu_usable():
    if not shutil.which("fiu-run") or not shutil.which("fiu-ctrl"):
        return False
    # A sanitizer build must come first in the library list; the preload would take its place.
    return not is_sanitized()


@unittest.skipUnless(fiu_usable(), "needs fiu-utils (scripts/setup.sh installs it) and a non-sanitizer build")
class FailedCommit(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="settee-fiu-")
        self.ctl = os.path.join(self.tmp, "fiu-ctrl")
        wrapper = os.path.join(self.tmp, "settee-under-fiu")
        with open(wrapper, "w") as f:  # exec keeps the pid: fiu-ctrl names the process by it
            f.write(f"#!/bin/sh\nexec fiu-run -x -f {self.ctl} {os.path.abspath(BIN)} \"$@\"\n")
        os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR)
        self.node = Node(bin=wrapper)
        self.node.start()

    def tearDown(self):
        self.node.cleanup()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def fiu(self, command):
        subprocess.run(["fiu-ctrl", "-f", self.ctl, "-c", command, str(self.node.proc.pid)], check=True, timeout=10)

    def test_a_failed_commit_fails_the_write_and_latches_read_only(self):
        n = self.node
        self.assertEqual(n.put("/latch?q=1").status, 201)
        self.assertEqual(n.put("/latch/before", {"v": 1}).status, 201)
        self.fiu("enable name=posix/io/sync/fdatasync")
        r = n.put("/latch/during", {"v": 2})
        self.fiu("disable name=posix/io/sync/fdatasync")
        self.assertError(r, 500)
        self.assertIn("read-only after a failed commit", r.json["reason"])
        # The disk is healthy again, but the shard stays read-only until it is reopened...
        r = n.put("/latch/after", {"v": 3})
        self.assertError(r, 500)
        self.assertIn("read-only after a failed commit", r.json["reason"])
        self.assertEqual(n.get("/latch/before").json["v"], 1)  # ...and keeps answering reads
        n.stop()
        n.bin = BIN
        n.start()
        self.assertEqual(n.put("/latch/after", {"v": 3}).status, 201)
        self.assertEqual(n.get("/latch/before").json["v"], 1)

    def assertError(self, r, status):
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.json["error"], "internal_server_error", r)


if __name__ == "__main__":
    main()
