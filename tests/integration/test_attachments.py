"""Attachments on one node (issue 11, the first slice): inline base64 attachments are stored as
blobs and read back as CouchDB's stubs; GET/HEAD /db/doc/att serves the bytes with CouchDB's
headers; stubs carry attachments across edits; every bad input is a clear 400/412. Expected
values are CouchDB 3's (couch_att, chttpd_db)."""
import base64
import gzip
import hashlib
import zlib
import http.client
import json
import os
import socket
import time

from harness import NodeTest, is_sanitized, main


def b64(data):
    return base64.b64encode(data).decode()


def digest(data):
    return "md5-" + base64.b64encode(hashlib.md5(data).digest()).decode()


def gzip_stored(data):
    """The bytes CouchDB stores for a compressible type (couch_att:maybe_compress: gzip, level 8)."""
    z = zlib.compressobj(8, zlib.DEFLATED, 31, 8)
    return z.compress(data) + z.flush()


def text_digest(data):
    """CouchDB's digest of a text/* attachment: of the gzip bytes it stores."""
    return digest(gzip_stored(data))


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
        # text/plain is stored gzip-encoded, even 5 bytes: CouchDB's digest is of those bytes (a
        # CouchDB client's fixtures carry this one for a 5-byte text/plain attachment).
        self.assertEqual(stub, {"content_type": "text/plain", "revpos": 1, "digest": text_digest(data), "length": 5,
                                "stub": True})
        self.assertEqual(stub["digest"], "md5-iMaiC8wqiFlD2NjLTemvCQ==")
        g = n.get("/att/doc/a.txt")
        self.assertEqual((g.status, g.data), (200, data))
        self.assertEqual(g.header("Content-Type"), "text/plain")
        etag = '"' + text_digest(data)[4:] + '"'
        self.assertEqual(g.header("ETag"), etag)
        # Decoded for a client that does not take gzip: no ranges (chttpd_db).
        self.assertIsNone(g.header("Content-MD5"))
        self.assertEqual(g.header("Accept-Ranges"), "none")
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

    def test_feeds_and_listings_with_attachments_true(self):
        n = self.node
        text = b"listed text " * 100
        n.put("/att/inlisting", {"_attachments": {"f": {"data": b64(b"abc")},
                                                 "t.txt": {"content_type": "text/plain", "data": b64(text)}}})
        url = "/att/_all_docs?include_docs=true&key=%22inlisting%22&attachments=true&att_encoding_info=true"
        atts = n.get(url).json["rows"][0]["doc"]["_attachments"]
        self.assertEqual(atts["f"], {"content_type": "application/octet-stream", "revpos": 1,
                                     "digest": digest(b"abc"), "data": b64(b"abc")})
        self.assertEqual(base64.b64decode(atts["t.txt"]["data"]), text)  # decoded
        self.assertEqual(atts["t.txt"]["encoding"], "gzip")
        changes = n.get("/att/_changes?include_docs=true&attachments=true").json["results"]
        listed = [c for c in changes if c["id"] == "inlisting"][0]
        self.assertEqual(base64.b64decode(listed["doc"]["_attachments"]["t.txt"]["data"]), text)
        plain = n.get("/att/_changes?include_docs=true").json["results"]
        self.assertTrue([c for c in plain if c["id"] == "inlisting"][0]["doc"]["_attachments"]["f"]["stub"])
        self.assertError(n.get("/att/_all_docs?attachments=maybe"), 400, "query_parse_error")
        self.assertError(n.get("/att/_changes?attachments=maybe"), 400, "query_parse_error")

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
            ({"_attachments": [], "_rev": r1}, 400, "doc_validation", "Bad special document member: _attachments"),
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
        self.assertError(n.put("/att/bad/a", {}), 409, "conflict", "Document update conflict.")  # no rev
        self.assertError(n.request("POST", "/att/bad/a", {}), 405, "method_not_allowed",
                         "Only DELETE,GET,HEAD,PUT allowed")

    def test_design_document_attachments(self):
        n = self.node
        r = n.put("/att/_design/app", {"_attachments": {"index.html": {"content_type": "text/html",
                                                                       "data": b64(b"<p>hi</p>")}}})
        self.assertEqual(r.status, 201, r)
        g = n.get("/att/_design/app/index.html")
        self.assertEqual((g.status, g.data, g.header("Content-Type")), (200, b"<p>hi</p>", "text/html"))
        # `_view` is a view's path, never an attachment's: this design document has no views.
        self.assertError(n.get("/att/_design/app/_view/v"), 404, "not_found", "missing_named_view")


def put_raw(n, path, data, ctype="application/octet-stream", headers=None):
    h = {"Content-Type": ctype}
    h.update(headers or {})
    return n.request("PUT", path, raw_body=data, headers=h)


class AttachmentsByName(NodeTest):
    """PUT/DELETE /db/doc/att (chttpd_db:db_attachment_req), Range requests, attachments=true."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        assert cls.node.put("/byname").status == 201

    def test_put_creates_and_edits_a_document(self):
        n = self.node
        r1 = put_raw(n, "/byname/d1/hello.txt", b"hello world", "text/plain")
        self.assertEqual(r1.status, 201, r1)
        self.assertEqual(set(r1.json), {"ok", "id", "rev"})
        self.assertEqual(r1.header("Location"), f"http://127.0.0.1:{n.port}/byname/d1/hello.txt")
        self.assertTrue(r1.json["rev"].startswith("1-"))
        g = n.get("/byname/d1/hello.txt")
        self.assertEqual((g.status, g.data, g.header("Content-Type")), (200, b"hello world", "text/plain"))
        # A second attachment by ?rev=, a name with '/' and no Content-Type (CouchDB's default type).
        r2 = n.request("PUT", f"/byname/d1/dir/b.bin?rev={r1.json['rev']}", raw_body=b"\x00\x01")
        self.assertEqual(r2.status, 201, r2)
        self.assertEqual(r2.header("Location"), f"http://127.0.0.1:{n.port}/byname/d1/dir%2Fb.bin")
        atts = n.get("/byname/d1").json["_attachments"]
        self.assertEqual(atts["hello.txt"]["revpos"], 1)
        self.assertEqual(atts["dir/b.bin"], {"content_type": "application/octet-stream", "revpos": 2,
                                             "digest": digest(b"\x00\x01"), "length": 2, "stub": True})
        # If-Match names the rev as well; replacing keeps the name and moves its revpos.
        r3 = put_raw(n, "/byname/d1/hello.txt", b"HELLO", "text/plain", {"If-Match": '"' + r2.json["rev"] + '"'})
        self.assertEqual(r3.status, 201, r3)
        doc = n.get("/byname/d1").json
        self.assertEqual(doc["_attachments"]["hello.txt"]["revpos"], 3)
        self.assertEqual(doc["_attachments"]["dir/b.bin"]["revpos"], 2)
        self.assertEqual(n.get("/byname/d1/hello.txt").data, b"HELLO")
        self.assertEqual(n.get(f"/byname/d1/hello.txt?rev={r1.json['rev']}").data, b"hello world")  # until compaction
        # A document's other fields survive an attachment edit.
        r4 = n.put("/byname/d1", {"_rev": r3.json["rev"], "keep": 1, "_attachments": doc["_attachments"]})
        r5 = put_raw(n, f"/byname/d1/c?rev={r4.json['rev']}", b"c")
        self.assertEqual(r5.status, 201, r5)
        self.assertEqual(n.get("/byname/d1").json["keep"], 1)

    def test_delete_removes_one_attachment(self):
        n = self.node
        r1 = n.put("/byname/d2", {"v": 1, "_attachments": {"a": {"data": b64(b"a")}, "b": {"data": b64(b"b")}}})
        r2 = n.delete(f"/byname/d2/a?rev={r1.json['rev']}")
        self.assertEqual(r2.status, 200, r2)
        self.assertEqual(set(r2.json), {"ok", "id", "rev"})
        doc = n.get("/byname/d2").json
        self.assertEqual((sorted(doc["_attachments"]), doc["v"]), (["b"], 1))
        self.assertError(n.get("/byname/d2/a"), 404, "not_found", "Document is missing attachment")
        self.assertEqual(n.get("/byname/d2/b").data, b"b")
        r3 = n.delete(f"/byname/d2/b?rev={r2.json['rev']}")
        self.assertEqual(r3.status, 200, r3)
        self.assertNotIn("_attachments", n.get("/byname/d2").json)
        # On a tombstone's rev, the new revision is deleted too (CouchDB edits the revision it opened).
        r4 = n.delete(f"/byname/d2?rev={r3.json['rev']}")
        r5 = put_raw(n, f"/byname/d2/c?rev={r4.json['rev']}", b"c")
        self.assertEqual((r5.status, r5.json["rev"][:2]), (201, "5-"), r5)
        self.assertError(n.get("/byname/d2"), 404, "not_found", "deleted")
        tomb = n.get(f"/byname/d2?rev={r5.json['rev']}").json
        self.assertEqual((tomb["_deleted"], list(tomb["_attachments"])), (True, ["c"]))
        self.assertEqual(n.get(f"/byname/d2/c?rev={r5.json['rev']}").data, b"c")

    def test_write_errors(self):
        n = self.node
        r1 = put_raw(n, "/byname/d3/a", b"a").json["rev"]
        put_raw(n, f"/byname/d3/a?rev={r1}", b"a2")
        cases = [
            (put_raw(n, "/byname/d3/a", b"x"), 409, "conflict", "Document update conflict."),  # no rev
            (put_raw(n, f"/byname/d3/a?rev={r1}", b"x"), 409, "conflict", "Document update conflict."),  # stale
            (put_raw(n, "/byname/d3/a?rev=7-abc", b"x"), 409, "conflict", "Document update conflict."),
            (put_raw(n, "/byname/d3/a?rev=bad", b"x"), 400, "bad_request", "Invalid rev format"),
            (put_raw(n, "/byname/d3/a?rev=1-a", b"x", headers={"If-Match": '"1-b"'}), 400, "bad_request",
             "Document rev and etag have different values"),
            (put_raw(n, "/byname/d3/_a", b"x"), 400, "bad_request",
             "Attachment name '_a' starts with prohibited character '_'"),
            (put_raw(n, "/byname/new/a", b"x", headers={"Content-MD5": b64(hashlib.md5(b"y").digest())}), 400,
             "content_md5_mismatch", "Possible message corruption."),
            (put_raw(n, "/byname/new/a", b"x", headers={"Content-Encoding": "br"}), 415, "bad_content_type",
             "Only gzip and identity content-encodings are supported"),
            (put_raw(n, "/byname/new/a", b"not gzip", headers={"Content-Encoding": "gzip"}), 400, "bad_request",
             "The body is not valid gzip"),
            (n.delete("/byname/d3/a"), 409, "conflict", "Document update conflict."),  # no rev
            (n.delete("/byname/nodoc/a"), 404, "not_found", "missing"),
            (n.delete("/byname/nodoc/a?rev=1-abc"), 409, "conflict", "Document update conflict."),
        ]
        for r, status, error, reason in cases:
            with self.subTest(r=r):
                self.assertError(r, status, error, reason)
        self.assertEqual(n.get("/byname/new").status, 404)  # nothing written by the refusals
        ok = put_raw(n, "/byname/md5/a", b"x", headers={"Content-MD5": b64(hashlib.md5(b"x").digest())})
        self.assertEqual(ok.status, 201, ok)

    def test_gzip_upload_is_stored_decoded(self):
        n = self.node
        import gzip
        r = put_raw(n, "/byname/gz/t.txt", gzip.compress(b"text " * 100), "text/plain",
                    {"Content-Encoding": "gzip"})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(n.get("/byname/gz/t.txt").data, b"text " * 100)
        self.assertEqual(n.get("/byname/gz").json["_attachments"]["t.txt"]["length"], 500)

    def test_large_bodies_pipelined_on_one_connection(self):
        # Bodies of 64 KiB and more leave from where they are (http/server.cpp out_body): two such
        # answers to requests pipelined in one packet arrive whole and in order.
        n = self.node
        one, two = bytes(range(256)) * 400, bytes(reversed(range(256))) * 300
        put_raw(n, "/byname/big1/a", one)
        put_raw(n, "/byname/big2/a", two)
        auth = n.auth_header()["Authorization"].encode()
        with socket.create_connection(("127.0.0.1", n.port), timeout=10) as s:
            s.sendall(b"".join(b"GET /byname/%s/a HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n\r\n" % (d, auth)
                               for d in (b"big1", b"big2", b"big1")))
            data = b""
            while data.count(b"HTTP/1.1 200") < 3 or len(data) < 2 * len(one) + len(two):
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                data += chunk
        bodies = []
        while data:
            head, rest = data.split(b"\r\n\r\n", 1)
            length = int([h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")][0].split(b":")[1])
            bodies.append(rest[:length])
            data = rest[length:]
        self.assertEqual(bodies, [one, two, one])

    def test_range_requests(self):
        n = self.node
        data = bytes(range(100))
        put_raw(n, "/byname/rng/r", data)
        cases = [("bytes=2-4", 206, data[2:5], "bytes 2-4/100"), ("bytes=-3", 206, data[97:], "bytes 97-99/100"),
                 ("bytes=95-", 206, data[95:], "bytes 95-99/100"), ("bytes=90-200", 206, data[90:], "bytes 90-99/100"),
                 ("bytes=0-", 200, data, None), ("pages=1-2", 200, data, None)]
        for header, status, body, content_range in cases:
            with self.subTest(range=header):
                g = n.get("/byname/rng/r", headers={"Range": header})
                self.assertEqual((g.status, g.data, g.header("Content-Range")), (status, body, content_range))
                self.assertEqual(g.header("Accept-Ranges"), "bytes")
        for header in ("bytes=100-", "bytes=5-2"):
            with self.subTest(range=header):
                self.assertError(n.get("/byname/rng/r", headers={"Range": header}), 416,
                                 "requested_range_not_satisfiable", "Requested range not satisfiable")
        # JSON is never ranged (issue 14).
        self.assertEqual(n.get("/byname/rng", headers={"Range": "bytes=0-1"}).status, 200)

    def test_attachments_true_and_atts_since(self):
        n = self.node
        r1 = n.put("/byname/inl", {"_attachments": {"one": {"content_type": "text/plain", "data": b64(b"1")}}})
        r2 = put_raw(n, f"/byname/inl/two?rev={r1.json['rev']}", b"22", "text/plain")
        one = {"content_type": "text/plain", "revpos": 1, "digest": text_digest(b"1"), "data": b64(b"1")}
        two = {"content_type": "text/plain", "revpos": 2, "digest": text_digest(b"22"), "data": b64(b"22")}
        doc = n.get("/byname/inl?attachments=true").json
        self.assertEqual(doc["_attachments"], {"one": one, "two": two})
        self.assertEqual(list(doc["_attachments"]["one"]), ["content_type", "revpos", "digest", "data"])
        since = n.get(f'/byname/inl?atts_since=["{r1.json["rev"]}"]').json["_attachments"]
        self.assertEqual(since["one"], {"content_type": "text/plain", "revpos": 1, "digest": text_digest(b"1"),
                                        "length": 1, "stub": True})
        self.assertEqual(since["two"], two)
        # atts_since naming revisions the document does not have: everything inline.
        self.assertEqual(n.get('/byname/inl?atts_since=["9-zz"]').json["_attachments"], {"one": one, "two": two})
        revs = n.get("/byname/inl?open_revs=all&attachments=true&att_encoding_info=true").json
        info = {name: {**a, "encoding": "gzip", "encoded_length": len(gzip_stored(data))}
                for name, a, data in (("one", one, b"1"), ("two", two, b"22"))}
        self.assertEqual(revs[0]["ok"]["_attachments"], info)
        self.assertError(n.get("/byname/inl?atts_since=x"), 400, "bad_request",
                         "`atts_since` must be a JSON array of revisions")
        self.assertError(n.get('/byname/inl?atts_since=["x"]'), 400, "bad_request", "Invalid rev format")
        self.assertError(n.get("/byname/inl?attachments=yes"), 400, "query_parse_error")
        # _bulk_get: attachments=true for all, atts_since per entry, a bad atts_since is that entry's error.
        body = {"docs": [{"id": "inl"}, {"id": "inl", "atts_since": [r1.json["rev"]]},
                         {"id": "inl", "atts_since": ["bad"]}]}
        res = n.post("/byname/_bulk_get?attachments=true", body).json["results"]
        self.assertEqual(res[0]["docs"][0]["ok"]["_attachments"], {"one": one, "two": two})
        self.assertEqual(res[1]["docs"][0]["ok"]["_attachments"]["one"]["stub"], True)
        self.assertEqual(res[1]["docs"][0]["ok"]["_attachments"]["two"], two)
        self.assertEqual(res[2]["docs"][0]["error"]["error"], "bad_request")
        plain = n.post("/byname/_bulk_get", {"docs": [{"id": "inl"}]}).json["results"][0]["docs"][0]["ok"]
        self.assertTrue(all(a["stub"] for a in plain["_attachments"].values()))
        self.assertEqual(r2.status, 201)


def split_multipart(ctype, data):
    """The parts of a multipart body as (headers dict, body bytes), checking CouchDB's framing."""
    boundary = ctype.split('boundary="')[1].rstrip('"').encode()
    assert data.startswith(b"--" + boundary + b"\r\n"), data[:80]
    assert data.endswith(b"\r\n--" + boundary + b"--"), data[-80:]
    parts = []
    for chunk in data[len(boundary) + 4:-(len(boundary) + 6)].split(b"\r\n--" + boundary + b"\r\n"):
        head, body = chunk.split(b"\r\n\r\n", 1)
        headers = dict(line.split(": ", 1) for line in head.decode().split("\r\n"))
        parts.append((headers, body))
    return parts


def related(doc, atts, boundary="xyz"):
    """A multipart/related PUT body: the document, then one part per (filename, bytes)."""
    out = b"--" + boundary.encode() + b"\r\nContent-Type: application/json\r\n\r\n" + json.dumps(doc).encode()
    for name, data in atts:
        disp = f"Content-Disposition: attachment; filename=\"{name}\"\r\n" if name else ""
        out += f"\r\n--{boundary}\r\n{disp}Content-Length: {len(data)}\r\n\r\n".encode() + data
    return out + f"\r\n--{boundary}--".encode()


class Multipart(NodeTest):
    """multipart/related and multipart/mixed, as CouchDB's replicator reads and writes documents."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        assert cls.node.put("/mp").status == 201
        assert cls.node.put("/mp2").status == 201

    def test_get_multipart_related_and_put_it_back(self):
        n = self.node
        big = bytes(range(256)) * 300
        r1 = n.put("/mp/d", {"v": 1, "_attachments": {"a.txt": {"content_type": "text/plain", "data": b64(b"hello")},
                                                      "b.bin": {"data": b64(big)}}})
        g = n.get("/mp/d?attachments=true&revs=true", headers={"Accept": "multipart/related"})
        self.assertEqual(g.status, 200, g)
        self.assertTrue(g.header("Content-Type").startswith("multipart/related; boundary="))
        self.assertEqual(g.header("ETag"), '"' + r1.json["rev"] + '"')
        parts = split_multipart(g.header("Content-Type"), g.data)
        self.assertEqual([h.get("Content-Type") for h, _ in parts], ["application/json", "text/plain",
                                                                     "application/octet-stream"])
        doc = json.loads(parts[0][1])
        # A text attachment goes as CouchDB stores it, gzip-encoded (couch_doc's SendEncodedAtts).
        packed = gzip_stored(b"hello")
        self.assertEqual(doc["_attachments"]["a.txt"], {"content_type": "text/plain", "revpos": 1,
                                                        "digest": digest(packed), "length": 5, "follows": True,
                                                        "encoding": "gzip", "encoded_length": len(packed)})
        self.assertEqual(parts[1][0]["Content-Disposition"], 'attachment; filename="a.txt"')
        self.assertEqual(parts[1][0]["Content-Encoding"], "gzip")
        self.assertEqual((parts[1][0]["Content-Length"], parts[1][1]), (str(len(packed)), packed))
        self.assertEqual(parts[2][1], big)
        # The CouchDB replicator's write: the same body PUT to another database with new_edits=false.
        body = related(doc, [("a.txt", packed), ("b.bin", big)])
        p = n.request("PUT", "/mp2/d?new_edits=false", raw_body=body,
                      headers={"Content-Type": 'multipart/related; boundary="xyz"'})
        self.assertEqual(p.status, 201, p)
        self.assertEqual(n.get("/mp2/d").json, n.get("/mp/d").json)
        self.assertEqual(n.get("/mp2/d/b.bin").data, big)
        # Parts without a filename match the document's attachments in order; an interactive edit.
        doc2 = {"_rev": r1.json["rev"], "_attachments": {"z": {"follows": True, "length": 2, "content_type": "x/y"},
                                                         "a.txt": {"stub": True}}}
        p = n.request("PUT", "/mp/d", raw_body=related(doc2, [(None, b"zz")]),
                      headers={"Content-Type": "multipart/related;boundary=xyz"})
        self.assertEqual(p.status, 201, p)
        self.assertEqual(n.get("/mp/d/z").data, b"zz")
        self.assertEqual(sorted(n.get("/mp/d").json["_attachments"]), ["a.txt", "z"])
        # atts_since: only what is newer follows; with nothing to follow, plain JSON.
        g = n.get(f'/mp/d?atts_since=["{r1.json["rev"]}"]', headers={"Accept": "multipart/related"})
        parts = split_multipart(g.header("Content-Type"), g.data)
        self.assertEqual(len(parts), 2)
        self.assertEqual(json.loads(parts[0][1])["_attachments"]["a.txt"]["stub"], True)
        self.assertEqual(parts[1][1], b"zz")
        g = n.get(f'/mp/d?atts_since=["{p.json["rev"]}"]', headers={"Accept": "multipart/related"})
        self.assertEqual(g.header("Content-Type"), "application/json")
        # Unlike CouchDB, */* (curl's default) gets JSON, not multipart.
        g = n.get("/mp/d?attachments=true", headers={"Accept": "*/*"})
        self.assertEqual((g.header("Content-Type"), g.json["_attachments"]["z"]["data"]),
                         ("application/json", b64(b"zz")))

    def test_open_revs_as_multipart_mixed(self):
        n = self.node
        n.post("/mp/_bulk_docs", {"new_edits": False, "docs": [
            {"_id": "c", "_rev": "1-aaa", "_attachments": {"s": {"data": b64(b"side a")}}},
            {"_id": "c", "_rev": "1-bbb", "plain": True}]})
        g = n.get('/mp/c?open_revs=["1-aaa","1-bbb","9-zzz"]', headers={"Accept": "multipart/mixed"})
        self.assertEqual(g.status, 200, g)
        self.assertTrue(g.header("Content-Type").startswith("multipart/mixed; boundary="))
        parts = split_multipart(g.header("Content-Type"), g.data)
        self.assertEqual(len(parts), 3)
        inner_type = parts[0][0]["Content-Type"]
        self.assertTrue(inner_type.startswith("multipart/related; boundary="), inner_type)
        inner = split_multipart(inner_type, parts[0][1])
        self.assertEqual(json.loads(inner[0][1])["_rev"], "1-aaa")
        self.assertEqual(inner[1][1], b"side a")
        self.assertEqual(parts[1][0]["Content-Type"], "application/json")
        self.assertEqual(json.loads(parts[1][1])["_rev"], "1-bbb")
        self.assertEqual(parts[2], ({"Content-Type": 'application/json; error="true"'}, b'{"missing":"9-zzz"}'))
        self.assertEqual(n.get("/mp/c?open_revs=all").header("Content-Type"), "application/json")

    def test_bad_multipart_bodies(self):
        n = self.node
        ok_doc = {"_attachments": {"f": {"follows": True, "length": 5}}}
        mp = 'multipart/related; boundary="xyz"'
        cases = [
            (related(ok_doc, [("f", b"four")]), 400, "bad_request",
             "Attachment 'f' says length 5 but its part has 4 bytes"),
            (related(ok_doc, []), 400, "bad_request",
             "Invalid multipart body: 1 attachments follow the document but the body has 0 parts after it"),
            (related(ok_doc, [("f", b"hello"), ("g", b"x")]), 400, "bad_request",
             "Invalid multipart body: 1 attachments follow the document but the body has 2 parts after it"),
            (related(ok_doc, [("other", b"hello")]), 400, "bad_request",
             "Attachment 'f' follows, but the body has no part for it"),
            (related({"_attachments": {"f": {"follows": True, "digest": digest(b"HELLO")}}}, [("f", b"hello")]),
             400, "content_md5_mismatch", "Possible message corruption."),
            (related(ok_doc, [("f", b"hello")])[:-8], 400, "bad_request",
             "Invalid multipart body: the body ends before its closing boundary"),
            (b"no delimiter at all", 400, "bad_request", "Invalid multipart body: no opening boundary"),
            (related(["not", "an object"], []), 400, "bad_request", "Document must be a JSON object"),
            (related({"_attachments": {"f": {"follows": True, "encoding": "gzip"}}}, [("f", b"not gzip")]), 400,
             "bad_request", "The body is not valid gzip"),
        ]
        for body, status, error, reason in cases:
            with self.subTest(body=body[:120]):
                r = n.request("PUT", "/mp/bad", raw_body=body, headers={"Content-Type": mp})
                self.assertError(r, status, error, reason)
        r = n.request("PUT", "/mp/bad", raw_body=related(ok_doc, [("f", b"hello")]),
                      headers={"Content-Type": "multipart/related"})
        self.assertError(r, 400, "bad_request", "Invalid multipart body: missing or too long boundary")
        self.assertEqual(n.get("/mp/bad").status, 404)
        # A gzip part with its encoded length is stored decoded.
        import gzip
        packed = gzip.compress(b"zipped " * 50)
        doc = {"_attachments": {"g": {"follows": True, "encoding": "gzip", "encoded_length": len(packed),
                                      "length": 350, "content_type": "text/plain"}}}
        r = n.request("PUT", "/mp/gz", raw_body=related(doc, [("g", packed)]), headers={"Content-Type": mp})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(n.get("/mp/gz/g").data, b"zipped " * 50)


class Compression(NodeTest):
    """[attachments] compressible_types are stored gzip-encoded (CouchDB's defaults: text/*,
    application/javascript, application/json, application/xml; compression_level 8)."""

    def test_compressible_types_are_stored_encoded_and_served_either_way(self):
        import gzip
        n = self.node
        assert n.put("/gz").status == 201
        text = b"settee stores this text compressed. " * 300  # 10,800 bytes
        r = put_raw(n, "/gz/d/t.txt", text, "text/plain")
        put_raw(n, f"/gz/d/b.bin?rev={r.json['rev']}", text, "application/octet-stream")
        stub = n.get("/gz/d").json["_attachments"]["t.txt"]
        self.assertEqual(stub["length"], len(text))
        self.assertNotIn("encoding", stub)  # only with att_encoding_info
        info = n.get("/gz/d?att_encoding_info=true").json["_attachments"]
        self.assertEqual(info["t.txt"]["encoding"], "gzip")
        self.assertLess(info["t.txt"]["encoded_length"], len(text) // 10)
        self.assertNotIn("encoding", info["b.bin"])  # not a compressible type
        # Accept-Encoding: gzip gets the stored bytes, as CouchDB sends them; others the identity.
        g = n.get("/gz/d/t.txt", headers={"Accept-Encoding": "gzip, deflate"})
        self.assertEqual((g.header("Content-Encoding"), g.header("Accept-Ranges")), ("gzip", "none"))
        self.assertEqual(gzip.decompress(g.data), text)
        self.assertEqual(len(g.data), info["t.txt"]["encoded_length"])
        self.assertIsNone(g.header("Content-MD5"))  # CouchDB 3 sends none in answers
        self.assertEqual(g.header("Content-Security-Policy"), "sandbox")  # chttpd_util:maybe_add_csp_header
        self.assertEqual("md5-" + b64(hashlib.md5(g.data).digest()), info["t.txt"]["digest"])
        for accept in (None, "identity", "gzip;q=0"):
            with self.subTest(accept=accept):
                p = n.get("/gz/d/t.txt", headers={"Accept-Encoding": accept} if accept else None)
                self.assertEqual((p.data, p.header("Content-Encoding"), p.header("Content-MD5")), (text, None, None))
        # No ranges on an encoded attachment (chttpd_db): the whole of it.
        part = n.get("/gz/d/t.txt", headers={"Range": "bytes=7-12"})
        self.assertEqual((part.status, part.header("Accept-Ranges")), (200, "none"))
        self.assertTrue(part.data == text)
        # attachments=true shows the identity bytes.
        inline = n.get("/gz/d?attachments=true").json["_attachments"]["t.txt"]
        self.assertEqual(base64.b64decode(inline["data"]), text)
        # Multipart sends the stored bytes with Content-Encoding, and a copy put back reads the same.
        g = n.get("/gz/d?attachments=true", headers={"Accept": "multipart/related"})
        parts = split_multipart(g.header("Content-Type"), g.data)
        doc = json.loads(parts[0][1])
        self.assertEqual(doc["_attachments"]["t.txt"]["encoding"], "gzip")
        by_name = {h["Content-Disposition"].split('"')[1]: (h, body) for h, body in parts[1:]}
        self.assertEqual(by_name["t.txt"][0].get("Content-Encoding"), "gzip")
        self.assertEqual(gzip.decompress(by_name["t.txt"][1]), text)
        self.assertNotIn("Content-Encoding", by_name["b.bin"][0])
        assert n.put("/gz2").status == 201
        body = related(doc, [("t.txt", by_name["t.txt"][1]), ("b.bin", by_name["b.bin"][1])])
        p = n.request("PUT", "/gz2/d?new_edits=false", raw_body=body,
                      headers={"Content-Type": 'multipart/related; boundary="xyz"'})
        self.assertEqual(p.status, 201, p)
        self.assertEqual(n.get("/gz2/d/t.txt").data, text)
        self.assertEqual(n.get("/gz2/d/b.bin").data, text)


class AttachmentLimit(NodeTest):
    config = "[couchdb]\nmax_attachment_size = 1000\n"

    def test_an_attachment_over_the_limit_is_413(self):
        n = self.node
        assert n.put("/lim").status == 201
        self.assertEqual(put_raw(n, "/lim/ok/a", b"x" * 1000).status, 201)
        self.assertError(put_raw(n, "/lim/big/a", b"x" * 1001), 413, "too_large",
                         "Attachment 'a' is larger than max_attachment_size")
        import gzip
        bomb = gzip.compress(b"\0" * 10_000_000)  # 10 KB on the wire, 10 MB decoded
        self.assertError(put_raw(n, "/lim/bomb/a", bomb, headers={"Content-Encoding": "gzip"}), 413, "too_large")
        self.assertEqual(n.get("/lim/big").status, 404)

    def test_a_2_gb_upload_is_refused_before_its_body(self):
        # Over [chttpd] max_http_request_size (64 MiB): 413 at the headers, the body never read.
        n = self.node
        n.put("/lim2")
        with socket.create_connection(("127.0.0.1", n.port), timeout=10) as s:
            s.sendall(b"PUT /lim2/huge/a HTTP/1.1\r\nHost: x\r\nAuthorization: " + n.auth_header()["Authorization"].encode() +
                      b"\r\nContent-Type: application/octet-stream\r\nContent-Length: 2147483648\r\n\r\n" +
                      b"x" * 65536)
            start = time.monotonic()
            reply = b""
            while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                reply += chunk
        self.assertLess(time.monotonic() - start, 5)
        self.assertTrue(reply.startswith(b"HTTP/1.1 413 "), reply[:200])
        self.assertIn(b'"error":"too_large"', reply)
        self.assertEqual(n.get("/lim2/huge").status, 404)


MiB = 1 << 20


def pieces(total, seed=b"settee"):
    """`total` bytes of incompressible data, a MiB at a time, the same for the same seed."""
    block = hashlib.shake_256(seed).digest(MiB)
    for i in range(0, total, MiB):
        part = i.to_bytes(8, "big") + block[8:]
        yield part[:min(MiB, total - i)]


def random_bytes(n):
    return os.urandom(n)


def stream_put(node, path, chunks, length=None, headers=None):
    """PUT from an iterable without holding the body: Content-Length when `length`, else chunked."""
    h = dict(node.auth_header())
    h.update(headers or {"Content-Type": "application/octet-stream"})
    conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=600)
    if length is not None:
        h["Content-Length"] = str(length)
    conn.request("PUT", path, body=chunks, headers=h, encode_chunked=length is None)
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, json.loads(body)


def stream_get(node, path, headers=None):
    """GET, hashing the body as it arrives: (status, headers, md5 hex, length)."""
    h = dict(node.auth_header())
    h.update(headers or {})
    conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=600)
    conn.request("GET", path, headers=h)
    r = conn.getresponse()
    md5, n = hashlib.md5(), 0
    while True:
        part = r.read(MiB)
        if not part:
            break
        md5.update(part)
        n += len(part)
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, md5.hexdigest(), n


def peak_rss_kb(node):
    with open(f"/proc/{node.proc.pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


class HugeAttachment(NodeTest):
    """A 1 GiB attachment streams in and out: the front spools it, the copies stage it in pieces,
    reads go a piece at a time, and the node's peak RSS stays under 100 MB."""

    def test_1_gib_in_and_out_with_rss_under_100_mb(self):
        n = self.node
        assert n.put("/huge").status == 201
        size = 1 << 30
        md5 = hashlib.md5()
        for part in pieces(size):
            md5.update(part)
        status, body = stream_put(n, "/huge/doc/big.bin", pieces(size), length=size)
        self.assertEqual(status, 201, body)
        stub = n.get("/huge/doc").json["_attachments"]["big.bin"]
        self.assertEqual((stub["length"], stub["revpos"], stub["stub"]), (size, 1, True))
        self.assertEqual(stub["digest"], "md5-" + base64.b64encode(md5.digest()).decode())
        status, headers, got, length = stream_get(n, "/huge/doc/big.bin")
        self.assertEqual((status, length, got), (200, size, md5.hexdigest()))
        self.assertEqual(headers["content-length"], str(size))
        self.assertNotIn("transfer-encoding", headers)
        # A range in the middle, across pieces.
        start = 500 * MiB - 10
        r = n.get("/huge/doc/big.bin", headers={"Range": f"bytes={start}-{start + 4 * MiB + 9}"})
        self.assertEqual(r.status, 206)
        self.assertEqual(r.header("Content-Range"), f"bytes {start}-{start + 4 * MiB + 9}/{size}")
        expected = b"".join(p for i, p in enumerate(pieces(size)) if 499 <= i <= 504)
        self.assertEqual(r.data, expected[MiB - 10:MiB - 10 + 4 * MiB + 10])
        # A small range of it reads only that range (the RSS bound below would catch a whole read).
        r = n.get("/huge/doc/big.bin", headers={"Range": f"bytes={700 * MiB + 3}-{700 * MiB + 102}"})
        self.assertEqual((r.status, r.data), (206, next(p for i, p in enumerate(pieces(size)) if i == 700)[3:103]))
        r = n.get("/huge/doc/big.bin", headers={"Range": "bytes=-5"})
        self.assertEqual(r.data, next(p for i, p in enumerate(pieces(size)) if i == 1023)[-5:])
        if not is_sanitized():
            self.assertLess(peak_rss_kb(n), 100 * 1024)


class LargeAttachments(NodeTest):
    """Uploads over 1 MiB take the streaming path: every encoding, check and limit of the small one."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        assert cls.node.put("/large?q=1").status == 201  # one shard: equal bytes are stored once

    def test_compressible_types_are_stored_encoded_and_served_either_way(self):
        n = self.node
        text = b"".join(b"line %d of a large text attachment\n" % i for i in range(200000))  # ~7 MB
        self.assertEqual(put_raw(n, "/large/t/log.txt", text, "text/plain").status, 201)
        e = n.get("/large/t?att_encoding_info=true").json["_attachments"]["log.txt"]
        self.assertEqual((e["encoding"], e["length"]), ("gzip", len(text)))
        self.assertLess(e["encoded_length"], len(text) // 4)
        plain = n.get("/large/t/log.txt")
        self.assertEqual((plain.status, plain.data, plain.header("Content-Encoding")), (200, text, None))
        packed = n.get("/large/t/log.txt", headers={"Accept-Encoding": "gzip"})
        self.assertEqual((packed.header("Content-Encoding"), len(packed.data)), ("gzip", e["encoded_length"]))
        self.assertEqual(gzip.decompress(packed.data), text)
        self.assertEqual(e["digest"], digest(packed.data))
        part = n.get("/large/t/log.txt", headers={"Range": "bytes=3000000-5000000"})
        self.assertEqual((part.status, part.header("Accept-Ranges")), (200, "none"))  # as CouchDB
        self.assertTrue(part.data == text)

    def test_gzip_and_chunked_uploads(self):
        n = self.node
        data = random_bytes(3 * MiB + 5)
        r = put_raw(n, "/large/g/a.bin", gzip.compress(data), headers={"Content-Encoding": "gzip"})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(n.get("/large/g/a.bin").data, data)
        status, body = stream_put(n, "/large/c/a.bin", iter([data[:MiB], data[MiB:]]))
        self.assertEqual(status, 201, body)
        got = n.get("/large/c/a.bin")
        self.assertEqual((got.data, got.header("Content-Length")), (data, str(len(data))))
        # The same bytes again: the copy holds them already and stores them once.
        before = n.get("/large").json["sizes"]["external"]
        self.assertEqual(put_raw(n, "/large/c2/a.bin", data).status, 201)
        self.assertLess(n.get("/large").json["sizes"]["external"] - before, 10000)
        self.assertEqual(n.get("/large/c2/a.bin").data, data)

    def test_bad_uploads_leave_nothing_behind(self):
        n = self.node
        before = n.get("/large").json["sizes"]["external"]
        data = random_bytes(2 * MiB)
        self.assertError(put_raw(n, "/large/b/a.bin", data, headers={"Content-MD5": "AAAAAAAAAAAAAAAAAAAAAA=="}),
                         400, "content_md5_mismatch", "Possible message corruption.")
        self.assertError(put_raw(n, "/large/b/a.bin", data, headers={"Content-Encoding": "gzip"}), 400, "bad_request",
                         "The body is not valid gzip")
        self.assertError(put_raw(n, "/large/b/a.bin", gzip.compress(data)[:-100], headers={"Content-Encoding": "gzip"}),
                         400, "bad_request", "The body is not valid gzip")
        # A stale rev: the bytes were staged, the write is refused, the staged bytes go.
        self.assertEqual(put_raw(n, "/large/b/x", b"x").status, 201)
        self.assertError(put_raw(n, "/large/b/a.bin?rev=1-00000000000000000000000000000000", data), 409, "conflict")
        self.assertEqual(n.get("/large/b").json["_attachments"].keys(), {"x"})
        self.assertLess(n.get("/large").json["sizes"]["external"] - before, 1000)
        md5 = base64.b64encode(hashlib.md5(data).digest()).decode()
        r = put_raw(n, "/large/b/a.bin?rev=" + n.get("/large/b").json["_rev"], data, headers={"Content-MD5": md5})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(n.get("/large/b/a.bin").data, data)


    def test_large_multipart_documents_are_spooled_and_staged(self):
        # The replicator's write of a document with large attachments (new_edits=false, revpos kept):
        # spooled by the front, each part staged from the file, never whole in memory.
        n = self.node
        data = random_bytes(5 * MiB)
        text = b"".join(b"row %d\n" % i for i in range(400000))
        packed = gzip.compress(text)
        doc = {"_id": "r", "_revisions": {"start": 3, "ids": ["c" * 32, "b" * 32, "a" * 32]}, "v": 1,
               "_attachments": {
                   "data.bin": {"follows": True, "length": len(data), "revpos": 2, "digest": digest(data),
                                "content_type": "application/octet-stream"},
                   "rows.txt": {"follows": True, "length": len(text), "encoding": "gzip", "encoded_length": len(packed),
                                "revpos": 3, "digest": digest(packed), "content_type": "text/plain"}}}
        hdr = {"Content-Type": 'multipart/related; boundary="xyz"'}
        p = n.request("PUT", "/large/r?new_edits=false", raw_body=related(doc, [("data.bin", data), ("rows.txt", packed)]),
                      headers=hdr)
        self.assertEqual(p.status, 201, p)
        got = n.get("/large/r?att_encoding_info=true").json
        self.assertEqual((got["_rev"], got["_attachments"]["data.bin"]["revpos"], got["_attachments"]["rows.txt"]["revpos"]),
                         ("3-" + "c" * 32, 2, 3))
        self.assertEqual(got["_attachments"]["rows.txt"]["encoding"], "gzip")
        self.assertEqual(n.get("/large/r/data.bin").data, data)
        self.assertEqual(n.get("/large/r/rows.txt").data, text)
        # Read back as the replicator reads it: multipart, the parts streamed with a Content-Length.
        g = n.get("/large/r?attachments=true&revs=true", headers={"Accept": "multipart/related"})
        self.assertEqual((g.status, g.header("Content-Length"), g.header("Transfer-Encoding")),
                         (200, str(len(g.data)), None))
        parts = split_multipart(g.header("Content-Type"), g.data)
        self.assertEqual(parts[1][1], data)
        # A gzip part is decoded, then stored as the policy says (gzip again, by settee).
        self.assertEqual((parts[2][0]["Content-Encoding"], gzip.decompress(parts[2][1])), ("gzip", text))
        self.assertEqual(json.loads(parts[0][1])["_attachments"]["data.bin"]["follows"], True)
        g = n.get(f'/large/r?open_revs=["{got["_rev"]}","9-{"0" * 32}"]', headers={"Accept": "multipart/mixed"})
        outer = split_multipart(g.header("Content-Type"), g.data)
        self.assertEqual(len(outer), 2)
        inner = split_multipart(outer[0][0]["Content-Type"], outer[0][1])
        self.assertEqual([p[1] for p in inner[1:]], [p[1] for p in parts[1:]])
        self.assertEqual(json.loads(outer[1][1]), {"missing": "9-" + "0" * 32})
        # An interactive edit: a stub and a new large part without a filename.
        more = random_bytes(2 * MiB)
        doc2 = {"_rev": got["_rev"], "_attachments": {"data.bin": {"stub": True},
                                                     "more": {"follows": True, "length": len(more)}}}
        p = n.request("PUT", "/large/r", raw_body=related(doc2, [(None, more)]), headers=hdr)
        self.assertEqual(p.status, 201, p)
        self.assertEqual((n.get("/large/r/more").data, n.get("/large/r/data.bin").data), (more, data))
        self.assertEqual(sorted(n.get("/large/r").json["_attachments"]), ["data.bin", "more"])
        # Bodies that lie: nothing stays staged, nothing is written.
        before = n.get("/large").json["sizes"]["external"]
        bad = dict(doc2, _rev=p.json["rev"])
        bad["_attachments"] = {"x": {"follows": True, "length": len(more) + 1}}
        r = n.request("PUT", "/large/r", raw_body=related(bad, [("x", more)]), headers=hdr)
        self.assertError(r, 400, "bad_request", f"Attachment 'x' says length {len(more) + 1} but its part has "
                                                f"{len(more)} bytes")
        bad["_attachments"] = {"x": {"follows": True, "length": len(more), "digest": digest(b"other")}}
        r = n.request("PUT", "/large/r", raw_body=related(bad, [("x", more)]), headers=hdr)
        self.assertError(r, 400, "content_md5_mismatch")
        bad["_attachments"] = {"x": {"follows": True}, "y": {"follows": True}}
        r = n.request("PUT", "/large/r", raw_body=related(bad, [("x", more)]), headers=hdr)
        self.assertError(r, 400, "bad_request")
        bad["_attachments"] = {"x": {"follows": True}}
        r = n.request("PUT", "/large/r", raw_body=related(bad, [("x", more)])[:-50], headers=hdr)
        self.assertError(r, 400, "bad_request", "Invalid multipart body: the body ends before its closing boundary")
        fresh = random_bytes(2 * MiB)  # staged, then the write is a conflict: the staged bytes go
        r = n.request("PUT", "/large/r", raw_body=related(dict(bad, _rev="9-" + "0" * 32), [("x", fresh)]), headers=hdr)
        self.assertError(r, 409, "conflict")
        self.assertEqual(n.get("/large").json["sizes"]["external"], before)
        self.assertEqual(sorted(n.get("/large/r").json["_attachments"]), ["data.bin", "more"])


if __name__ == "__main__":
    main()
