"""Documents: revisions, conflicts, query options, _local docs and every kind of bad input."""
import hashlib
import json
import re
import urllib.parse

from harness import NodeTest, main

REV = re.compile(r"^\d+-[0-9a-f]{32}$")


class Documents(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        assert cls.node.put("/docs").status == 201

    def test_put_get_update_delete(self):
        r = self.node.put("/docs/a", {"name": "x", "n": [1, 2]})
        self.assertEqual(r.status, 201)
        self.assertEqual(list(r.json), ["ok", "id", "rev"])
        rev1 = r.json["rev"]
        self.assertRegex(rev1, REV)
        self.assertEqual(r.header("ETag"), f'"{rev1}"')
        self.assertEqual(r.header("Location"), f"http://127.0.0.1:{self.node.port}/docs/a")
        g = self.node.get("/docs/a")
        self.assertEqual(g.json, {"_id": "a", "_rev": rev1, "name": "x", "n": [1, 2]})
        self.assertEqual(list(g.json), ["_id", "_rev", "name", "n"])  # field order kept
        self.assertEqual(g.header("ETag"), f'"{rev1}"')
        self.assertEqual(self.node.get("/docs/a", headers={"If-None-Match": f'"{rev1}"'}).status, 304)
        self.assertError(self.node.put("/docs/a", {"name": "y"}), 409, "conflict", "Document update conflict.")
        rev2 = self.node.put("/docs/a", {"_rev": rev1, "name": "y"}).json["rev"]
        self.assertTrue(rev2.startswith("2-"))
        self.assertError(self.node.put("/docs/a", {"_rev": rev1, "name": "z"}), 409, "conflict")
        self.assertError(self.node.delete("/docs/a"), 409, "conflict")
        self.assertError(self.node.delete("/docs/a?rev=" + rev1), 409, "conflict")
        d = self.node.delete("/docs/a?rev=" + rev2)
        self.assertEqual(d.status, 200)
        self.assertTrue(d.json["ok"])
        self.assertTrue(d.json["rev"].startswith("3-"))
        self.assertError(self.node.get("/docs/a"), 404, "not_found", "deleted")
        self.assertError(self.node.delete("/docs/a"), 404, "not_found", "deleted")
        tomb = self.node.get("/docs/a?rev=" + d.json["rev"]).json
        self.assertEqual(tomb, {"_id": "a", "_rev": d.json["rev"], "_deleted": True})
        # Re-creating a deleted document continues its history.
        r4 = self.node.put("/docs/a", {"back": True})
        self.assertTrue(r4.json["rev"].startswith("4-"))
        self.assertError(self.node.get("/docs/missing"), 404, "not_found", "missing")
        self.assertError(self.node.delete("/docs/missing?rev=1-abc"), 404, "not_found", "missing")

    def test_rev_sources_query_and_if_match(self):
        rev1 = self.node.put("/docs/src", {"v": 1}).json["rev"]
        rev2 = self.node.put(f"/docs/src?rev={rev1}", {"v": 2}).json["rev"]
        rev3 = self.node.put("/docs/src", {"v": 3}, headers={"If-Match": f'"{rev2}"'}).json["rev"]
        self.assertError(self.node.put(f"/docs/src?rev={rev2}", {"_rev": rev3, "v": 4}), 400, "bad_request",
                         "Document rev from request body and query string have different values")
        r = self.node.delete("/docs/src", headers={"If-Match": f'"{rev3}"'})
        self.assertEqual(r.status, 200)

    def test_same_edit_twice_is_idempotent_per_rev(self):
        r1 = self.node.put("/docs/idem", {"v": 1}).json["rev"]
        self.node.delete(f"/docs/idem?rev={r1}")
        r2 = self.node.put("/docs/idem2", {"v": 1}).json["rev"]
        self.assertEqual(r1, r2)  # same body, same parent: same revision id

    def test_revisions_are_hashed_with_sha256_when_every_copy_can(self):
        # One node, every copy its own: the first 16 bytes of SHA-256 over the deleted flag, NUL,
        # the parent, NUL and the stored body (storage/rev_tree.hpp rev_hash), not MD5.
        r1 = self.node.put("/docs/sha", {"v": 1}).json["rev"]
        self.assertEqual(r1, "1-" + hashlib.sha256(b'0\x00\x00{"v":1}').hexdigest()[:32])
        r2 = self.node.put("/docs/sha", {"v": 2, "_rev": r1}).json["rev"]
        self.assertEqual(r2, "2-" + hashlib.sha256(b'0\x00' + r1.encode() + b'\x00{"v":2}').hexdigest()[:32])

    def test_revs_revs_info_conflicts(self):
        rev1 = self.node.put("/docs/hist", {"v": 1}).json["rev"]
        rev2 = self.node.put("/docs/hist", {"_rev": rev1, "v": 2}).json["rev"]
        doc = self.node.get("/docs/hist?revs=true").json
        self.assertEqual(doc["_revisions"], {"start": 2, "ids": [rev2.split("-")[1], rev1.split("-")[1]]})
        info = self.node.get("/docs/hist?revs_info=true").json["_revs_info"]
        # The older revision's body stays until compaction (test_compaction.py).
        self.assertEqual(info, [{"rev": rev2, "status": "available"}, {"rev": rev1, "status": "available"}])
        # A replicated conflicting branch.
        r = self.node.put("/docs/hist?new_edits=false",
                          {"_rev": "2-ffffffffffffffffffffffffffffffff", "v": "other",
                           "_revisions": {"start": 2, "ids": ["ffffffffffffffffffffffffffffffff", rev1.split("-")[1]]}})
        self.assertEqual(r.status, 201)
        self.assertEqual(r.json["rev"], "2-ffffffffffffffffffffffffffffffff")
        doc = self.node.get("/docs/hist?conflicts=true").json
        self.assertEqual(doc["_rev"], "2-ffffffffffffffffffffffffffffffff")  # greater hash wins
        self.assertEqual(doc["_conflicts"], [rev2])
        self.assertNotIn("_conflicts", self.node.get("/docs/hist").json)
        # Resolve by deleting the loser.
        self.node.delete(f"/docs/hist?rev={rev2}")
        doc = self.node.get("/docs/hist?conflicts=true&deleted_conflicts=true").json
        self.assertNotIn("_conflicts", doc)
        self.assertEqual(len(doc["_deleted_conflicts"]), 1)
        self.assertTrue(doc["_deleted_conflicts"][0].startswith("3-"))
        meta = self.node.get("/docs/hist?meta=true").json
        self.assertIn("_revs_info", meta)
        self.assertIn("_deleted_conflicts", meta)
        self.assertIn("_local_seq", self.node.get("/docs/hist?local_seq=true").json)

    def test_open_revs_and_latest(self):
        rev1 = self.node.put("/docs/or", {"v": 1}).json["rev"]
        rev2 = self.node.put("/docs/or", {"_rev": rev1, "v": 2}).json["rev"]
        self.node.put("/docs/or?new_edits=false", {"_rev": "1-aaaa", "v": "b"})
        all_revs = self.node.get("/docs/or?open_revs=all").json
        self.assertEqual(sorted(x["ok"]["_rev"] for x in all_revs), sorted([rev2, "1-aaaa"]))
        r = self.node.get(f'/docs/or?open_revs=["{rev2}","9-nope"]').json
        self.assertEqual(r[0]["ok"]["_rev"], rev2)
        self.assertEqual(r[1], {"missing": "9-nope"})
        r = self.node.get(f'/docs/or?open_revs=["{rev1}"]').json
        self.assertEqual(r, [{"ok": {"_id": "or", "_rev": rev1, "v": 1}}])  # not a leaf: kept until compaction
        r = self.node.get(f'/docs/or?open_revs=["{rev1}"]&latest=true').json
        self.assertEqual(r[0]["ok"]["_rev"], rev2)
        self.assertEqual(self.node.get("/docs/or?open_revs=all&revs=true").json[0]["ok"]["_revisions"]["start"] > 0,
                         True)
        self.assertError(self.node.get("/docs/nothing?open_revs=all"), 404, "not_found", "missing")
        self.assertEqual(self.node.get('/docs/nothing?open_revs=["1-abc"]').json, [{"missing": "1-abc"}])
        self.assertError(self.node.get("/docs/or?open_revs=bogus"), 400, "bad_request")

    def test_specific_old_rev(self):
        rev1 = self.node.put("/docs/old", {"v": 1}).json["rev"]
        self.node.put("/docs/old", {"_rev": rev1, "v": 2})
        self.assertEqual(self.node.get(f"/docs/old?rev={rev1}").json["v"], 1)  # until compaction
        self.assertError(self.node.get("/docs/old?rev=7-unknown"), 404, "not_found", "missing")

    def test_new_edits_false_merges_and_is_idempotent(self):
        body = {"_rev": "3-c", "_revisions": {"start": 3, "ids": ["c", "b", "a"]}, "x": 1}
        self.assertEqual(self.node.put("/docs/rep?new_edits=false", body).status, 201)
        self.assertEqual(self.node.put("/docs/rep?new_edits=false", body).status, 201)
        doc = self.node.get("/docs/rep?revs=true").json
        self.assertEqual(doc["_revisions"], {"start": 3, "ids": ["c", "b", "a"]})
        self.assertError(self.node.put("/docs/rep2?new_edits=false", {"x": 1}), 400, "bad_request")

    def test_design_docs(self):
        r = self.node.put("/docs/_design/app", {"views": {}})
        self.assertEqual((r.status, r.json["id"]), (201, "_design/app"))
        self.assertEqual(self.node.get("/docs/_design/app").json["_id"], "_design/app")
        self.assertEqual(self.node.get("/docs/_design%2Fapp").json["_id"], "_design/app")

    def test_ids_with_special_characters(self):
        for doc_id, path in [("a b", "a%20b"), ("ü/ß", "%C3%BC%2F%C3%9F"), ("q?x", "q%3Fx"), ("1+1", "1%2B1")]:
            r = self.node.put(f"/docs/{path}", {"v": 1})
            self.assertEqual(r.status, 201, doc_id)
            self.assertEqual(r.json["id"], doc_id)
            self.assertEqual(self.node.get(f"/docs/{path}").json["_id"], doc_id)

    def test_bad_documents(self):
        self.assertError(self.node.put("/docs/b", raw_body="{not json", headers={"Content-Type": "application/json"}),
                         400, "bad_request", "invalid UTF-8 JSON")
        for body in ["[1,2]", "\"s\"", "12", "null"]:
            self.assertError(self.node.put("/docs/b", raw_body=body), 400, "bad_request",
                             "Document must be a JSON object")
        self.assertError(self.node.put("/docs/b", {"_rev": "bad"}), 400, "bad_request", "Invalid rev format")
        self.assertError(self.node.put("/docs/b", {"_rev": 12}), 400, "bad_request", "Invalid rev format")
        self.assertError(self.node.put("/docs/b", {"_rev": "1-" + "a" * 200}), 400, "bad_request")
        self.assertError(self.node.put("/docs/b", {"_foo": 1}), 400, "doc_validation", "Bad special document member: _foo")
        # couch_doc:transfer_fields: a special member of the wrong type is as unknown as `_foo`.
        self.assertError(self.node.put("/docs/b", {"_deleted": "yes"}), 400, "doc_validation",
                         "Bad special document member: _deleted")
        self.assertError(self.node.put("/docs/b", {"_revisions": 5}), 400, "doc_validation",
                         "Bad special document member: _revisions")
        self.assertError(self.node.get("/docs/b?rev=nope"), 400, "bad_request", "Invalid rev format")
        self.assertError(self.node.get("/docs/b?revs=maybe"), 400, "query_parse_error")
        self.assertError(self.node.put("/docs/b?new_edits=perhaps", {}), 400, "query_parse_error")
        self.assertEqual(self.node.get("/docs/b").status, 404)  # nothing was written

    def test_bad_ids(self):
        cases = [
            ("_bad", "Only reserved document ids may start with underscore."),
            ("_design/", "Illegal document id `_design/`"),
            ("%FF%FE", "Document id must be valid UTF-8"),
        ]
        for path, reason in cases:
            self.assertError(self.node.put(f"/docs/{path}", {"v": 1}), 400, "illegal_docid", reason)
            # As CouchDB: a read or DELETE of an id that cannot exist is a 404.
            self.assertError(self.node.get(f"/docs/{path}"), 404, "not_found", "missing")
            self.assertError(self.node.delete(f"/docs/{path}"), 404, "not_found", "missing")
            self.assertError(self.node.get(f"/docs/{path}/att"), 404, "not_found", "missing")
        self.assertError(self.node.post("/docs", {"_id": 5}), 400, "illegal_docid", "Document id must be a string")
        self.assertError(self.node.post("/docs", {"_id": ""}), 400, "illegal_docid", "Document id must not be empty")
        self.assertError(self.node.request("PATCH", "/docs/x", {}), 405, "method_not_allowed")
        self.assertError(self.node.get("/docs/x/attachment"), 404, "not_found", "missing")  # no document x
        self.assertError(self.node.request("PATCH", "/docs/x/attachment", {}), 405, "method_not_allowed")


class LongIds(NodeTest):
    """Ids of any length, as CouchDB (max_document_id_length = infinity): LMDB keys hold 511 bytes,
    so ids over 400 bytes are keyed by prefix and SHA-256 (storage/doc_key.hpp); _all_docs keeps
    id order, also among long ids that share their first 400 bytes."""

    def test_long_ids_are_documents_like_any_other(self):
        n = self.node
        self.assertEqual(n.put("/long?q=1").status, 201)
        p = "p" * 400
        ids = [p + "b", p + "a", p + "c" * 2000, p, p + "a\u00e9", "q" + "x" * 600, "a" * 65536, "m", "z" * 5000]
        r = n.post("/long/_bulk_docs", {"docs": [{"_id": i, "i": k} for k, i in enumerate(ids)]})
        self.assertEqual([row.get("ok") for row in r.json], [True] * len(ids), r)
        want = sorted(ids, key=lambda s: s.encode())
        rows = n.get("/long/_all_docs").json["rows"]
        self.assertEqual([row["id"] for row in rows], want)
        self.assertEqual([row["id"] for row in n.get("/long/_all_docs?descending=true").json["rows"]], want[::-1])
        # Paging from inside a group: start, offset and end are those of the ids.
        for k, start in enumerate(want):
            if len(start) > 60000:
                continue  # not in a 64 KB request line
            q = urllib.parse.quote(json.dumps(start))
            page = n.get(f"/long/_all_docs?startkey={q}&limit=2").json
            self.assertEqual(([row["id"] for row in page["rows"]], page["offset"]), (want[k:k + 2], k), k)
            page = n.get(f"/long/_all_docs?endkey={q}&inclusive_end=false").json
            self.assertEqual([row["id"] for row in page["rows"]], want[:k])
            page = n.get(f"/long/_all_docs?startkey={q}&descending=true").json
            self.assertEqual(([row["id"] for row in page["rows"]], page["offset"]), (want[k::-1], len(want) - 1 - k))
        # By URL (up to the 64 KB request line), by keys, in _bulk_get, _changes; edits and deletes.
        doc = n.get("/long/" + urllib.parse.quote(p + "c" * 2000)).json
        self.assertEqual((doc["_id"], doc["i"]), (p + "c" * 2000, 2))
        keys = n.post("/long/_all_docs", {"keys": ["a" * 65536, p + "nope"]}).json["rows"]
        self.assertEqual((keys[0]["id"], keys[1]["error"]), ("a" * 65536, "not_found"))
        got = n.post("/long/_bulk_get", {"docs": [{"id": "a" * 65536}]}).json["results"][0]["docs"][0]["ok"]
        self.assertEqual(got["i"], 6)
        self.assertEqual(sorted(c["id"] for c in n.get("/long/_changes").json["results"]), sorted(ids))
        r1 = n.put("/long/" + urllib.parse.quote(p + "b"), {"_rev": rows[want.index(p + "b")]["value"]["rev"], "i": 9})
        self.assertEqual(r1.status, 201, r1)
        self.assertEqual(n.delete("/long/" + urllib.parse.quote(p + "b") + "?rev=" + r1.json["rev"]).status, 200)
        self.assertEqual(n.get("/long").json["doc_count"], len(ids) - 1)
        self.assertNotIn(p + "b", [row["id"] for row in n.get("/long/_all_docs").json["rows"]])
        # Attachments and old revisions on a long id, then compaction.
        att = "/long/" + urllib.parse.quote(p + "a") + "/note.txt?rev=" + rows[want.index(p + "a")]["value"]["rev"]
        self.assertEqual(n.request("PUT", att, raw_body=b"hello", headers={"Content-Type": "text/plain"}).status, 201)
        self.assertEqual(n.get("/long/" + urllib.parse.quote(p + "a") + "/note.txt").data, b"hello")
        self.assertEqual(n.post("/long/_compact", {}).status, 202)
        self.assertEqual(n.get("/long/" + urllib.parse.quote(p + "a") + "/note.txt").data, b"hello")
        # All of it survives a restart.
        n.stop()
        n.start(port=n.port)
        self.assertEqual([row["id"] for row in n.get("/long/_all_docs").json["rows"]], [i for i in want if i != p + "b"])
        # _local ids stay keys as they are: at most 400 bytes.
        self.assertError(n.put("/long/_local/" + "x" * 400, {}), 400, "illegal_docid", "Document id is too long")


class IdLimit(NodeTest):
    config = "[couchdb]\nmax_document_id_length = 10\n"

    def test_a_configured_limit_applies(self):
        self.new_db("lim")
        self.assertEqual(self.node.put("/lim/" + "x" * 10, {}).status, 201)
        self.assertError(self.node.put("/lim/" + "x" * 11, {}), 400, "illegal_docid", "Document id is too long")
        self.assertError(self.node.get("/lim/" + "x" * 11), 404, "not_found", "missing")


class LocalDocs(NodeTest):
    def test_local_lifecycle(self):
        self.new_db("loc")
        r = self.node.put("/loc/_local/cp", {"seq": 1})
        self.assertEqual((r.status, r.json), (201, {"ok": True, "id": "_local/cp", "rev": "0-1"}))
        self.assertEqual(self.node.get("/loc/_local/cp").json, {"_id": "_local/cp", "_rev": "0-1", "seq": 1})
        r = self.node.put("/loc/_local/cp", {"_rev": "0-1", "seq": 2})
        self.assertEqual(r.json["rev"], "0-2")
        self.assertEqual(self.node.put("/loc/_local/cp?rev=0-2", {"seq": 3}).json["rev"], "0-3")
        self.assertError(self.node.put("/loc/_local/cp", {"_rev": "1-abc"}), 400, "bad_request", "Invalid rev format")
        # Not in _all_docs, not counted.
        self.assertEqual(self.node.get("/loc/_all_docs").json["rows"], [])
        self.assertEqual(self.node.get("/loc").json["doc_count"], 0)
        r = self.node.delete("/loc/_local/cp?rev=0-3")
        self.assertEqual(r.json, {"ok": True, "id": "_local/cp", "rev": "0-0"})
        self.assertError(self.node.get("/loc/_local/cp"), 404, "not_found", "missing")
        self.assertError(self.node.delete("/loc/_local/cp"), 404, "not_found", "missing")
        self.assertEqual(self.node.put("/loc/_local/a%2Fb", {}).json["id"], "_local/a/b")
        self.assertEqual(self.node.get("/loc/_local/a%2Fb").json["_id"], "_local/a/b")

if __name__ == "__main__":
    main()
