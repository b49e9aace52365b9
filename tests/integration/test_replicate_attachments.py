"""Replication of attachments (issue 33 points 2 and 4): small ones travel inline in `_bulk_get`,
large ones one revision at a time as multipart (GET ?open_revs as multipart/mixed into a spool
file, PUT multipart/related new_edits=false from it), so the node's memory stays bounded however
large an attachment is; a revision whose attachments the target already has sends stubs only;
a connection cut halfway through an attachment is retried; a source without `_bulk_get` gets the
same exact copy through open_revs."""
import base64
import hashlib
import os
import threading

from harness import is_sanitized, main
from test_replicate_faults import ProxiedNodeTest

MiB = 1 << 20


class ReplicateAttachments(ProxiedNodeTest):
    def rss_anon_mb(self):
        with open(f"/proc/{self.node.proc.pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f)
        return int(fields["RssAnon"].split()[0]) / 1024

    def put_attachment(self, db, doc, name, data, rev=None, content_type="application/octet-stream"):
        path = f"/{db}/{doc}/{name}" + (f"?rev={rev}" if rev else "")
        r = self.node.request("PUT", path, raw_body=data, headers={"Content-Type": content_type})
        self.assertEqual(r.status, 201, r)
        return r.json["rev"]

    def attachments_of(self, db):
        """Every leaf revision of every document: its body and, per attachment, the digest of the
        bytes a client downloads."""
        out = {}
        for row in self.node.get(f"/{db}/_all_docs").json["rows"]:
            leaves = self.node.get(f"/{db}/{row['id']}?open_revs=all&revs=true",
                                   headers={"Accept": "application/json"}).json
            for leaf in leaves:
                doc = leaf["ok"]
                atts = {}
                for name in doc.pop("_attachments", {}):
                    r = self.node.get(f"/{db}/{row['id']}/{name}?rev={doc['_rev']}")
                    self.assertEqual(r.status, 200, r)
                    atts[name] = hashlib.sha256(r.data).hexdigest()
                out[(row["id"], doc["_rev"])] = (doc, atts)
        return out

    def replicate(self, source, target, **extra):
        r = self.node.post("/_replicate", dict({"source": source, "target": target}, **extra))
        self.assertEqual(r.status, 200, r)
        return r.json["history"][0]

    def test_large_attachments_stream_with_bounded_memory_and_stubs_go_alone(self):
        self.new_db("asrc")
        big = os.urandom(80 * MiB)  # above the 64 MiB a JSON request may have: it cannot go inline
        rev = self.put_attachment("asrc", "big", "big.bin", big)
        self.put_attachment("asrc", "big", "note.txt", b"a small one beside it", rev=rev, content_type="text/plain")
        self.put_attachment("asrc", "medium", "m.bin", os.urandom(200 << 10))  # above the inline limit
        self.assertEqual(self.node.put("/asrc/small", {"_attachments": {"s.txt": {
            "content_type": "text/plain", "data": base64.b64encode(b"hello " * 100).decode()}}}).status, 201)
        self.assertEqual(self.node.put("/asrc/plain", {"x": 1}).status, 201)
        # Two conflicting leaves, each with its own attachment.
        for leaf, data in (("2-aaaa", b"left leaf"), ("2-bbbb", b"right leaf")):
            r = self.node.post("/asrc/_bulk_docs", {"new_edits": False, "docs": [{
                "_id": "conflicted", "_rev": leaf, "_revisions": {"start": 2, "ids": [leaf[2:], "root"]},
                "_attachments": {"leaf.txt": {"content_type": "text/plain", "data": base64.b64encode(data).decode()}}}]})
            self.assertEqual(r.status, 201, r)

        base = self.rss_anon_mb()
        peak, done = [base], threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], self.rss_anon_mb())
                done.wait(0.02)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            h = self.replicate("asrc", "atgt", create_target=True)
        finally:
            done.set()
            sampler.join()
        self.assertEqual(h["docs_written"], 6, h)
        self.assertEqual(h["doc_write_failures"], 0, h)
        copied = self.attachments_of("atgt")
        self.assertEqual(copied, self.attachments_of("asrc"))
        self.assertEqual(len(copied), 6)
        self.assertEqual(copied[("big", self.node.get("/asrc/big").json["_rev"])][1]["big.bin"],
                         hashlib.sha256(big).hexdigest())
        # Inline, the 80 MiB attachment alone would be 107 MiB of base64 in one JSON answer.
        if not is_sanitized():  # a sanitizer's allocator keeps freed memory in quarantine
            self.assertLess(peak[0] - base, 48, f"RssAnon grew from {base:.0f} MB to {peak[0]:.0f} MB")

        # A new revision that keeps its attachments: only the document travels (through a proxy
        # that counts the bytes the source sends), and the target keeps the attachments' bytes.
        doc = self.node.get("/asrc/big").json
        doc["edited"] = True
        self.assertEqual(self.node.put("/asrc/big", doc).status, 201)
        before = self.proxy.bytes_out
        h = self.replicate(self.proxy.url("asrc"), "atgt")
        self.assertEqual(h["docs_written"], 1, h)
        self.assertLess(self.proxy.bytes_out - before, 64 << 10)
        self.assertEqual(self.attachments_of("atgt"), self.attachments_of("asrc"))

    def test_a_cut_mid_attachment_is_retried_and_open_revs_copies_without_bulk_get(self):
        self.new_db("bsrc")
        data = os.urandom(3 * MiB)
        self.put_attachment("bsrc", "one", "a.bin", data)
        self.put_attachment("bsrc", "two", "b.bin", os.urandom(100 << 10))
        self.assertEqual(self.node.put("/bsrc/three", {"_attachments": {"c.txt": {
            "content_type": "text/plain", "data": base64.b64encode(b"tiny").decode()}}}).status, 201)
        # The source's _bulk_get is missing (404: each document through open_revs, as multipart),
        # and the first multipart answer is cut halfway: the read is retried from a fresh spool.
        self.proxy.plans = {"_bulk_get": ["404"] * 10, "open_revs": ["half"]}
        self.addCleanup(self.proxy.plans.clear)
        h = self.replicate(self.proxy.url("bsrc"), "btgt", create_target=True)
        self.assertEqual(self.proxy.plans["open_revs"], [])
        self.assertEqual(h["docs_written"], 3, h)
        self.assertEqual(h["bulk_get_docs"], 0, h)
        self.assertEqual(self.attachments_of("btgt"), self.attachments_of("bsrc"))


if __name__ == "__main__":
    main()
