"""Corners where CouchDB's answer is what clients (PouchDB, the replicator) rely on (issue 11, points
3-5): recreating a deleted document, `_local` writes by POST and with `_deleted`, the replicator's
special fields, `_revisions` over `_rev`, design documents settee cannot honour, and the order of
filter errors in `_changes`. Each expectation is CouchDB 3's answer (couch_doc, couch_db,
couch_changes)."""
import socket
import time

from harness import NodeTest, main


class Parity(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        assert cls.node.put("/par").status == 201
        user = {"name": "mem", "type": "user", "roles": [], "password": "mem-pw"}  # not a db admin
        assert cls.node.put("/_users/org.couchdb.user:mem", user).status == 201

    def test_recreating_a_deleted_document_extends_its_tombstone(self):
        n = self.node
        rev1 = n.put("/par/re", {"v": 1}).json["rev"]
        rev2 = n.delete(f"/par/re?rev={rev1}").json["rev"]
        r = n.put("/par/re", {"v": 1})  # the body of the first revision: CouchDB rebases, no conflict
        self.assertEqual(r.status, 201, r)
        self.assertTrue(r.json["rev"].startswith("3-"), r.json)
        revs = n.get("/par/re?revs=true").json["_revisions"]
        self.assertEqual(revs["start"], 3)
        self.assertEqual(revs["ids"][1:], [rev2.split("-")[1], rev1.split("-")[1]])
        self.assertNotIn("_conflicts", n.get("/par/re?conflicts=true").json)
        rev4 = n.delete(f"/par/re?rev={r.json['rev']}").json["rev"]
        again = n.put("/par/re", {"v": 2})
        self.assertEqual(again.status, 201)
        self.assertTrue(again.json["rev"].startswith("5-"))
        self.assertEqual(n.get("/par/re?revs=true").json["_revisions"]["ids"][1], rev4.split("-")[1])

    def test_post_with_a_local_id_writes_a_local_document(self):
        n = self.node
        r = n.post("/par", {"_id": "_local/posted", "v": 1})
        self.assertEqual((r.status, r.json), (201, {"ok": True, "id": "_local/posted", "rev": "0-1"}))
        self.assertEqual(n.get("/par/_local/posted").json, {"_id": "_local/posted", "_rev": "0-1", "v": 1})
        r = n.post("/par", {"_id": "_local/posted", "_rev": "0-1", "v": 2})
        self.assertEqual(r.json["rev"], "0-2")
        r = n.post("/par", {"_id": "_local/posted", "v": 3})  # never checked (issue 28 item 3)
        self.assertEqual(r.json["rev"], "0-1")
        self.assertError(n.post("/par", {"_id": "_local/posted", "_rev": "x", "v": 3}), 400, "bad_request")

    def test_put_local_with_deleted_true_deletes_it(self):
        n = self.node
        self.assertEqual(n.put("/par/_local/gone", {"v": 1}).json["rev"], "0-1")
        r = n.put("/par/_local/gone", {"_rev": "0-1", "_deleted": True})
        # A deletion answers 200 (chttpd_db:send_updated_doc).
        self.assertEqual((r.status, r.json), (200, {"ok": True, "id": "_local/gone", "rev": "0-0"}))
        self.assertError(n.get("/par/_local/gone"), 404, "not_found", "missing")
        self.assertEqual(n.put("/par/_local/gone", {"v": 2}).json["rev"], "0-1")  # starts again
        self.assertError(n.put("/par/_local/gone", {"_rev": "0-1", "_deleted": "yes"}), 400, "doc_validation",
                         "Bad special document member: _deleted")
        b = n.post("/par/_bulk_docs", {"docs": [{"_id": "_local/gone", "_rev": "0-1", "_deleted": True}]})
        self.assertEqual(b.json, [{"ok": True, "id": "_local/gone", "rev": "0-0"}])
        self.assertError(n.get("/par/_local/gone"), 404, "not_found", "missing")
        self.assertError(n.post("/par/_bulk_docs", {"docs": [{"_id": "_local/x", "_rev": "1-abc"}]}), 400,
                         "bad_request", "Invalid rev format")

    def test_replication_fields_are_kept_in_any_database(self):
        n = self.node
        fields = {"_replication_id": "abc", "_replication_state": "completed", "_replication_state_time": 17,
                  "_replication_state_reason": "none", "_replication_stats": {"docs_written": 3}}
        r = n.put("/par/repl", dict(fields, v=1))
        self.assertEqual(r.status, 201, r)
        got = n.get("/par/repl").json
        for k, v in fields.items():
            self.assertEqual(got[k], v)
        self.assertError(n.put("/par/other", {"_replication_other": 1}), 400, "doc_validation",
                         "Bad special document member: _replication_other")

    def test_special_members_of_the_wrong_type_are_unknown_to_couchdb(self):
        # couch_doc:transfer_fields matches `_deleted` as a boolean and `_attachments`, `_revisions`
        # as objects; any other value falls to its "unknown special field" clause. `_revisions`'s
        # own checks come next, with its messages; `_access` is kept in the body (CouchDB 3.5).
        n = self.node
        for member, value in [("_deleted", "yes"), ("_deleted", None), ("_attachments", None), ("_attachments", []),
                              ("_revisions", 5), ("_revisions", None)]:
            with self.subTest(member=member, value=value):
                self.assertError(n.put("/par/typed", {member: value, "v": 1}), 400, "doc_validation",
                                 f"Bad special document member: {member}")
                self.assertError(n.post("/par/_bulk_docs", {"docs": [{"_id": "typed", member: value}]}), 400,
                                 "doc_validation", f"Bad special document member: {member}")
        for revisions, reason in [({"start": "1", "ids": ["a"]}, "_revisions.start isn't an integer."),
                                  ({"ids": ["a"]}, "_revisions.start isn't an integer."),
                                  ({"start": 1, "ids": "a"}, "_revisions.ids isn't a array."),
                                  ({"start": 1, "ids": [7]}, "RevId isn't a string")]:
            with self.subTest(revisions=revisions):
                self.assertError(n.put("/par/typed?new_edits=false", {"_revisions": revisions}), 400,
                                 "doc_validation", reason)
        # `_rev` goes to couch_doc:parse_rev whatever it is: null is no revision to it.
        self.assertError(n.put("/par/typed", {"_rev": None, "v": 1}), 400, "bad_request", "Invalid rev format")
        self.assertError(n.put("/par/_local/typed", {"_rev": None, "v": 1}), 400, "bad_request", "Invalid rev format")
        r = n.put("/par/access", {"_access": ["someone"], "v": 1})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(n.get("/par/access").json["_access"], ["someone"])
        self.assertEqual(n.get("/par/typed").status, 404)

    def test_revisions_win_over_rev(self):
        n = self.node
        docs = [{"_id": "nr", "_rev": "1-", "_revisions": {"start": 2, "ids": ["bb", "aa"]}, "v": 1},
                {"_id": "nr2", "_rev": "7-zz", "_revisions": {"start": 1, "ids": ["cc"]}, "v": 1}]
        r = n.post("/par/_bulk_docs", {"new_edits": False, "docs": docs})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(n.get("/par/nr").json["_rev"], "2-bb")
        self.assertEqual(n.get("/par/nr?revs=true").json["_revisions"], {"start": 2, "ids": ["bb", "aa"]})
        self.assertEqual(n.get("/par/nr2").json["_rev"], "1-cc")
        # Interactive edits take their base from `_revisions` too.
        r = n.put("/par/nr", {"_rev": "9-ignored", "_revisions": {"start": 2, "ids": ["bb", "aa"]}, "v": 2})
        self.assertEqual(r.status, 201, r)
        self.assertTrue(r.json["rev"].startswith("3-"))
        # Without `_revisions`, `_rev` is the revision, even "1-" (issue 28 item 10).
        self.assertEqual(n.post("/par/_bulk_docs", {"new_edits": False, "docs": [{"_id": "nr3", "_rev": "1-"}]}).status,
                         201)
        self.assertEqual(n.get("/par/nr3").json["_rev"], "1-")

    def test_special_members_are_read_in_their_order(self):
        # couch_doc:transfer_fields reads the members one by one: the first bad one refuses the
        # document, and a `_rev` ahead of `_revisions` is parsed (one after it is not even read).
        n = self.node
        revisions = {"start": 1, "ids": ["cc"]}
        for path, body in [("/par/ord?new_edits=false", {"_rev": "bad", "_revisions": revisions}),
                           ("/par/ord", {"_rev": "x-1", "_revisions": revisions}),
                           ("/par/ord", {"_rev": "bad", "_foo": 1}),
                           ("/par/_local/ord", {"_rev": "bad", "_foo": 1}),
                           # a 32-character hash after a generation other than 0 is hexadecimal
                           ("/par/ord", {"_rev": "1-" + "z" * 32}),
                           ("/par/ord?new_edits=false", {"_rev": "1-" + "z" * 32, "_revisions": revisions})]:
            with self.subTest(body=body):
                self.assertError(n.put(path, body), 400, "bad_request", "Invalid rev format")
        self.assertError(n.post("/par/_bulk_docs", {"new_edits": False, "docs": [
            {"_id": "ord", "_rev": "bad", "_revisions": revisions}]}), 400, "bad_request", "Invalid rev format")
        for path in ["/par/ord", "/par/_local/ord"]:
            self.assertError(n.put(path, {"_foo": 1, "_rev": "bad"}), 400, "doc_validation",
                             "Bad special document member: _foo")
        self.assertError(n.put("/par/ord", {"_revisions": {"start": "1"}, "_foo": 1}), 400, "doc_validation",
                         "_revisions.start isn't an integer.")
        self.assertError(n.put("/par/ord", {"_foo": 1, "_revisions": {"start": "1"}}), 400, "doc_validation",
                         "Bad special document member: _foo")
        # After `_revisions`, `_rev` is not read; ahead of it, any revision CouchDB can parse passes.
        for body in [{"_revisions": revisions, "_rev": "bad"}, {"_rev": "0-abc", "_revisions": revisions},
                     {"_rev": "2-" + "a" * 200, "_revisions": revisions}]:
            with self.subTest(body=body):
                r = n.put("/par/ord?new_edits=false", body)
                self.assertEqual(r.status, 201, r)
                self.assertEqual(r.json["rev"], "1-cc")

    def test_validate_doc_update_is_saved_and_runs(self):
        n = self.node
        vdu = "function(newDoc) { if (newDoc.bad) throw({forbidden: 'no bad docs'}); }"
        self.assertEqual(n.put("/par/_design/v", {"validate_doc_update": vdu}).status, 201)
        self.assertError(n.put("/par/vbad", {"bad": True}), 403, "forbidden", "no bad docs")
        # In a batch a refusal is that document's answer; the others are written (a replication goes on).
        b = n.post("/par/_bulk_docs", {"docs": [{"_id": "vbad2", "bad": 1}, {"_id": "vok"}]})
        self.assertEqual(b.status, 201)
        self.assertEqual(b.json[0], {"id": "vbad2", "error": "forbidden", "reason": "no bad docs"})
        self.assertTrue(b.json[1]["ok"])
        # Not a function: refused when saved (CouchDB stores it and fails every later write).
        r = n.put("/par/_design/v2", {"validate_doc_update": "f"})
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["error"], "compilation_error")
        self.assertEqual(n.put("/par/validate_doc_update", {"validate_doc_update": 1}).status, 201)  # not a ddoc
        self.assertEqual(n.delete(f"/par/_design/v?rev={n.get('/par/_design/v').json['_rev']}").status, 200)
        self.assertEqual(n.put("/par/vbad", {"bad": True}).status, 201)  # its design document is gone

    def test_filter_errors_come_in_couchdbs_order(self):
        n = self.node
        self.assertEqual(n.put("/par/_design/f", {"filters": {"ok": "function(){}"},
                                                  "views": {"v": {"map": "function(){}"}}}).status, 201)
        self.assertEqual(n.put("/par/_design/bare", {"language": "javascript"}).status, 201)
        cases = [
            ("filter=nodoc/x", 404, "not_found", "missing"),
            ("filter=bare/x", 404, "not_found", "missing json key: filters"),
            ("filter=f/x", 404, "not_found", "missing json key: x"),
            ("filter=_view", 400, "bad_request", "`view` filter parameter is not provided."),
            ("filter=_view&view=novslash", 400, "bad_request", "`view` filter parameter is not provided."),
            ("filter=_view&view=nodoc/v", 404, "not_found", "missing"),
            ("filter=_view&view=bare/v", 404, "not_found", "missing json key: views"),
            ("filter=_view&view=f/w", 404, "not_found", "missing json key: w"),
            ("filter=noslash", 400, "bad_request", "`filter` must be of the form `designname/filtername`"),
        ]
        for query, status, error, reason in cases:
            for feed in ("normal", "longpoll", "continuous"):
                with self.subTest(query=query, feed=feed):
                    self.assertError(n.get(f"/par/_changes?feed={feed}&timeout=100&{query}"), status, error, reason)
        for query in ("filter=f/ok", "filter=_view&view=f/v"):  # they run (issue 30)
            self.assertEqual(n.get(f"/par/_changes?{query}").status, 200)
        rev = n.get("/par/_design/f").json["_rev"]
        n.delete(f"/par/_design/f?rev={rev}")
        self.assertError(n.get("/par/_changes?filter=f/ok"), 404, "not_found", "missing")  # deleted: missing

    def test_latest_gives_each_leaf_once(self):
        n = self.node
        r1 = n.put("/par/lt", {"v": 1}).json["rev"]
        r2 = n.put("/par/lt", {"_rev": r1, "v": 2}).json["rev"]
        h1 = r1.split("-")[1]
        conflict = {"_id": "lt", "_rev": "2-ff", "_revisions": {"start": 2, "ids": ["ff", h1]}, "v": "c"}
        self.assertEqual(n.post("/par/_bulk_docs", {"new_edits": False, "docs": [conflict]}).status, 201)
        winner = max([r2, "2-ff"], key=lambda r: r.split("-")[1])
        # ?rev=<ancestor>&latest=true: the leaf grown from it (of two, the one that wins between them).
        self.assertEqual(n.get(f"/par/lt?rev={r1}&latest=true").json["_rev"], winner)
        self.assertEqual(n.get(f"/par/lt?rev={r2}&latest=true").json["_rev"], r2)
        got = n.get(f'/par/lt?open_revs=["{r1}","{r2}","2-ff"]&latest=true', headers={"Accept": "application/json"})
        self.assertEqual(sorted(d["ok"]["_rev"] for d in got.json), sorted([r2, "2-ff"]))  # each once
        got = n.get(f'/par/lt?open_revs=["{r2}","{r2}"]', headers={"Accept": "application/json"})
        self.assertEqual(len(got.json), 1)  # each once without latest too (fabric_doc_open_revs, issue 28)

    def test_compact_and_view_cleanup_answer_as_couchdb(self):
        n = self.node
        json_ct = {"Content-Type": "application/json"}
        for path in ("/par/_compact", "/par/_view_cleanup"):
            r = n.request("POST", path, raw_body="", headers=json_ct)
            self.assertEqual((r.status, r.json), (202, {"ok": True}), path)
            self.assertError(n.request("POST", path, raw_body="", headers={"Content-Type": "text/plain"}), 415,
                             "bad_content_type", "Content-Type must be application/json")
            self.assertError(n.get(path), 405, "method_not_allowed")
            self.assertEqual(n.request("POST", path, raw_body="", headers=json_ct, user=("nobody", "x")).status, 401)
            self.assertEqual(n.request("POST", path, raw_body="", headers=json_ct, user=("mem", "mem-pw")).status, 403)
        self.assertEqual(n.put("/par/_design/views", {"views": {}}).status, 201)
        self.assertEqual(n.request("POST", "/par/_compact/views", raw_body="", headers=json_ct).status, 202)
        self.assertError(n.request("POST", "/par/_compact/nodoc", raw_body="", headers=json_ct), 404, "not_found",
                         "missing")
        self.assertError(n.request("POST", "/nodb/_compact", raw_body="", headers=json_ct), 404, "not_found")

    def test_json_is_never_gzipped_so_feeds_arrive_row_by_row(self):
        # CouchDB encodes attachments only; a gzipped feed would reach the client in compressed blocks.
        n = self.node
        auth = n.auth_header()["Authorization"]
        for path in ("/par", "/par/_all_docs", "/par/_changes", "/par/_changes?feed=longpoll&since=now&timeout=50"):
            s = socket.create_connection(("127.0.0.1", n.port), timeout=5)
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, deflate\r\n"
                      f"Authorization: {auth}\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while chunk := s.recv(65536):
                data += chunk
            s.close()
            head = data.partition(b"\r\n\r\n")[0].decode().lower()
            self.assertIn("200 ok", head.split("\r\n")[0], path)
            self.assertNotIn("content-encoding", head, path)
        # A continuous feed with gzip offered: the row of a write arrives while the feed stays open.
        s = socket.create_connection(("127.0.0.1", n.port), timeout=5)
        s.sendall(f"GET /par/_changes?feed=continuous&since=now&heartbeat=100 HTTP/1.1\r\nHost: x\r\n"
                  f"Accept-Encoding: gzip\r\nAuthorization: {auth}\r\n\r\n".encode())
        time.sleep(0.2)
        n.put("/par/live-row", {})
        data, deadline = b"", time.time() + 5
        while b'"id":"live-row"' not in data and time.time() < deadline:
            data += s.recv(65536)
        s.close()
        self.assertIn(b'"id":"live-row"', data)
        self.assertNotIn(b"content-encoding", data.partition(b"\r\n\r\n")[0].lower())


if __name__ == "__main__":
    main()
