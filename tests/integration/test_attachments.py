"""Attachments on one node (issue 11, the first slice): inline base64 attachments are stored as
blobs and read back as CouchDB's stubs; GET/HEAD /db/doc/att serves the bytes with CouchDB's
headers; stubs carry attachments across edits; every bad input is a clear 400/412. Expected
values are CouchDB 3's (couch_att, chttpd_db)."""
import base64
import hashlib

from harness import NodeTest, main


def b64(data):
    return base64.b64encode(data).decode()


def digest(data):
    return "md5-" + base64.b64encode(hashlib.md5(data).digest()).decode()


class Attachments(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        assert cls.node.put("/att").status == 201

    def test_inline_attachment_reads_back_as_a_stub_and_by_name(self):
        n = self.node
        data = b"hello"
        r = n.put("/att/doc", {"v": 1, "_attachments": {"a.txt": {"content_type": "text/plain", "data": b64(data)}}})
        self.assertEqual(r.status, 201, r)
        doc = n.get("/att/doc").json
        stub = doc["_attachments"]["a.txt"]
        self.assertEqual(list(stub), ["content_type", "revpos", "digest", "length", "stub"])  # CouchDB's order
        self.assertEqual(stub, {"content_type": "text/plain", "revpos": 1, "digest": digest(data), "length": 5,
                                "stub": True})
        self.assertEqual(stub["digest"], "md5-XUFAKrxLKna5cZ2REBfFkg==")
        g = n.get("/att/doc/a.txt")
        self.assertEqual((g.status, g.data), (200, data))
        self.assertEqual(g.header("Content-Type"), "text/plain")
        etag = '"' + digest(data)[4:] + '"'
        self.assertEqual(g.header("ETag"), etag)
        self.assertEqual(g.header("Content-MD5"), digest(data)[4:])
        self.assertEqual(n.get("/att/doc/a.txt", headers={"If-None-Match": etag}).status, 304)
        h = n.request("HEAD", "/att/doc/a.txt")
        self.assertEqual((h.status, h.data, h.header("Content-Length")), (200, b"", "5"))
        self.assertEqual(n.get(f"/att/doc/a.txt?rev={r.json['rev']}").data, data)

    def test_stubs_carry_attachments_and_dropping_one_removes_it(self):
        n = self.node
        binary = bytes(range(256)) * 300  # 76,800 bytes: more than one 64 KiB chunk
        r1 = n.put("/att/carry", {"_attachments": {"dir/b.bin": {"data": b64(binary)}, "x": {"data": b64(b"x")}}})
        self.assertEqual(r1.status, 201, r1)
        r2 = n.put("/att/carry", {"_rev": r1.json["rev"], "v": 2,
                                  "_attachments": {"dir/b.bin": {"stub": True}, "new": {"data": b64(b"n")}}})
        self.assertEqual(r2.status, 201, r2)
        atts = n.get("/att/carry").json["_attachments"]
        self.assertEqual(sorted(atts), ["dir/b.bin", "new"])
        self.assertEqual(atts["dir/b.bin"]["revpos"], 1)
        self.assertEqual(atts["dir/b.bin"]["content_type"], "application/octet-stream")  # CouchDB's default
        self.assertEqual(atts["new"]["revpos"], 2)
        self.assertEqual(n.get("/att/carry/dir/b.bin").data, binary)
        self.assertError(n.get("/att/carry/x"), 404, "not_found", "Document is missing attachment")
        d = n.delete(f"/att/carry?rev={r2.json['rev']}")
        self.assertError(n.get("/att/carry/new"), 404, "not_found", "deleted")
        self.assertEqual(d.status, 200)

    def test_feeds_and_listings_show_stubs(self):
        n = self.node
        n.put("/att/listed", {"_attachments": {"f": {"data": b64(b"abc")}}})
        rows = n.get("/att/_all_docs?include_docs=true&key=%22listed%22").json["rows"]
        self.assertTrue(rows[0]["doc"]["_attachments"]["f"]["stub"])
        self.assertNotIn("key", rows[0]["doc"]["_attachments"]["f"])
        changes = n.get("/att/_changes?include_docs=true").json["results"]
        listed = [c for c in changes if c["id"] == "listed"][0]
        self.assertEqual(listed["doc"]["_attachments"]["f"]["digest"], digest(b"abc"))

    def test_bulk_docs_and_replicated_revisions(self):
        n = self.node
        r = n.post("/att/_bulk_docs", {"docs": [{"_id": "bulk", "_attachments": {"a": {"data": b64(b"1")}}}]})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(n.get("/att/bulk/a").data, b"1")
        # new_edits=false (the replicator): inline data keeps its source's revpos.
        doc = {"_id": "rep", "_rev": "3-cc", "_revisions": {"start": 3, "ids": ["cc", "bb", "aa"]},
               "_attachments": {"a": {"data": b64(b"r"), "revpos": 2, "content_type": "text/plain"}}}
        r = n.post("/att/_bulk_docs", {"new_edits": False, "docs": [doc]})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(n.get("/att/rep").json["_attachments"]["a"]["revpos"], 2)
        self.assertEqual(n.get("/att/rep/a").data, b"r")

    def test_bad_attachments(self):
        n = self.node
        r1 = n.put("/att/bad", {"_attachments": {"a": {"data": b64(b"a")}}}).json["rev"]
        cases = [
            ({"_attachments": {"zz": {"stub": True}}, "_rev": r1}, 412, "missing_stub",
             "Invalid attachment stub in bad for zz"),
            ({"_attachments": {"a": {"stub": True}}}, 409, "conflict", None),  # no rev: the conflict first
            ({"_attachments": {"x": {"data": "%%%"}}, "_rev": r1}, 400, "bad_request", "Invalid attachment data for x"),
            ({"_attachments": [], "_rev": r1}, 400, "bad_request", "`_attachments` must be a JSON object"),
            ({"_attachments": {"_x": {"data": ""}}, "_rev": r1}, 400, "bad_request",
             "Attachment name '_x' starts with prohibited character '_'"),
            ({"_attachments": {"x": {"follows": True, "length": 1}}, "_rev": r1}, 400, "bad_request",
             "Attachment 'x' follows, but the body is not multipart"),
            ({"_attachments": {"x": {"content_type": "a/b"}}, "_rev": r1}, 400, "bad_request",
             "Attachment 'x' has neither data nor a stub"),
        ]
        for body, status, error, reason in cases:
            with self.subTest(body=body):
                self.assertError(n.put("/att/bad", body), status, error, reason)
        self.assertError(n.put("/att/fresh", {"_attachments": {"a": {"stub": True}}}), 412, "missing_stub",
                         "Previous revision missing for document fresh")
        self.assertEqual(n.get("/att/bad").json["_rev"], r1)  # nothing written
        self.assertError(n.get("/att/nodoc/a"), 404, "not_found", "missing")
        self.assertError(n.get("/att/bad/a?rev=9-zz"), 404, "not_found", "missing")
        self.assertError(n.get("/att/bad/a?rev=bad"), 400, "bad_request", "Invalid rev format")
        self.assertError(n.put("/att/bad/a", {}), 501, "not_implemented")  # by name: not yet
        self.assertError(n.request("POST", "/att/bad/a", {}), 501, "not_implemented")

    def test_design_document_attachments(self):
        n = self.node
        r = n.put("/att/_design/app", {"_attachments": {"index.html": {"content_type": "text/html",
                                                                       "data": b64(b"<p>hi</p>")}}})
        self.assertEqual(r.status, 201, r)
        g = n.get("/att/_design/app/index.html")
        self.assertEqual((g.status, g.data, g.header("Content-Type")), (200, b"<p>hi</p>", "text/html"))
        self.assertError(n.get("/att/_design/app/_view/v"), 501, "not_implemented")


if __name__ == "__main__":
    main()
