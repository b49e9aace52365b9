"""CouchDB 3.5, request for request (issue 28): each test is one numbered item of the issue, written
from CouchDB's source (chttpd, chttpd_db, couch_httpd, couch_util) and checked against what a running
CouchDB answered."""
import http.client
import json

from harness import NodeTest, main


class Location(NodeTest):
    """Item 1: chttpd_db sends absolute_uri(Req, "/" ++ url_encode(Db) ++ "/" ++ url_encode(DocId)),
    couch_util:url_encode keeping only letters, digits and _ . - : (so a control character never
    reaches the header raw, where Node's parser rejected the 201)."""

    def test_location_is_absolute_and_encoded(self):
        n = self.node
        assert n.put("/loc").status == 201
        base = f"http://127.0.0.1:{n.port}"
        for doc_id, encoded in (("a/b", "a%2Fb"), ("\u00e9", "%C3%A9"), ("a\x01b", "a%01b"), ("x:y~z", "x:y%7Ez"),
                                ("sp ace", "sp%20ace")):
            r = n.post("/loc", {"_id": doc_id})
            self.assertEqual(r.status, 201, r)
            self.assertEqual(r.header("Location"), f"{base}/loc/{encoded}", doc_id)
        r = n.put("/loc/_design/d", {"x": 1})
        self.assertEqual(r.header("Location"), f"{base}/loc/_design%2Fd")
        r = n.put("/loc/plain?batch=ok", {"x": 1})
        self.assertEqual(r.status, 202)
        self.assertIsNone(r.header("Location"))  # batch=ok answers without one
        r = n.put("/a%2Fb%2Bc")
        self.assertEqual(r.header("Location"), f"{base}/a%2Fb%2Bc")

    def test_forwarded_host_and_scheme(self):
        n = self.node
        assert n.put("/fwd").status == 201
        r = n.put("/fwd/d", {"x": 1}, headers={"X-Forwarded-Host": "db.example.org", "X-Forwarded-Proto": "https"})
        self.assertEqual(r.header("Location"), "https://db.example.org/fwd/d")
        r = n.put("/fwd/e", {"x": 1}, headers={"X-Forwarded-Ssl": "on"})
        self.assertEqual(r.header("Location"), f"https://127.0.0.1:{n.port}/fwd/e")

    def test_node_clients_accept_the_answer_for_any_id(self):
        # Raw bytes in the header line: what a strict parser (Node's) refuses.
        n = self.node
        assert n.put("/strict").status == 201
        conn = http.client.HTTPConnection("127.0.0.1", n.port, timeout=10)
        body = '{"_id":"ctl\\u0001\\u001f\\u007f"}'
        conn.request("POST", "/strict", body=body,
                     headers={**n.auth_header(), "Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()
        self.assertEqual(r.status, 201)
        loc = r.getheader("Location")
        self.assertTrue(all(0x20 < ord(ch) < 0x7f for ch in loc), repr(loc))
        self.assertTrue(loc.endswith("/strict/ctl%01%1F%7F"), loc)


class Unauthorized(NodeTest):
    """Item 2: CouchDB 3 sends no WWW-Authenticate on a 401, so a browser app with its own sign-in
    form gets no native dialog."""

    def test_no_www_authenticate(self):
        n = self.node
        for r in (n.get("/_all_dbs", auth=False), n.get("/_session", user=("nobody", "x")),
                  n.get("/", headers={"Authorization": "Basic !!!"}, auth=False)):
            self.assertEqual(r.status, 401, r)
            self.assertIsNone(r.header("WWW-Authenticate"), r)


class DatabaseCreation(NodeTest):
    """Item 9: `n` above the node count is capped (201, one copy per node, as mem3 places them), and
    `+` in a path is a space (mochiweb_util:unquote, which chttpd uses for path segments)."""

    def test_n_is_capped(self):
        r = self.node.put("/capped?n=5&q=2")
        self.assertEqual(r.status, 201, r)
        shards = self.node.get("/capped/_shards").json["shards"]
        self.assertEqual([len(nodes) for nodes in shards.values()], [1, 1])
        self.assertError(self.node.put("/zero?n=0"), 400, "bad_request")

    def test_plus_in_a_path_is_a_space(self):
        n = self.node
        assert n.put("/plus").status == 201
        r = n.put("/plus/a+b", {"x": 1})
        self.assertEqual(r.json["id"], "a b")
        self.assertEqual(n.get("/plus/a%20b").json["x"], 1)
        r = n.put("/plus/c%2Bd", {"x": 2})
        self.assertEqual(r.json["id"], "c+d")
        self.assertEqual(n.get("/plus/c%2Bd").json["x"], 2)
        self.assertEqual(n.get("/plus/c+d").status, 404)
        # A database name with `+` must say so as %2B; a raw one names "a b", which is illegal.
        self.assertError(n.put("/x+y"), 400, "illegal_database_name")
        self.assertEqual(n.put("/x%2By").status, 201)


class SmallCorners(NodeTest):
    """Item 13 (and 7's `_temp_view`), each from CouchDB's source."""

    def test_session_body(self):
        n = self.node
        # couch_httpd_auth: extract_username throws bad_request without `name` (or `username`).
        self.assertError(n.post("/_session", {}, auth=False), 400, "bad_request",
                         "request body must contain a username")
        self.assertError(n.request("POST", "/_session", raw_body="name=x", auth=False,
                                   headers={"Content-Type": "text/plain"}), 415, "bad_content_type")
        self.assertError(n.post("/_session", {"name": "admin"}, auth=False), 401, "unauthorized")
        r = n.post("/_session", {"username": n.admin[0], "password": n.admin[1]}, auth=False)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["name"], n.admin[0])

    def test_uuids_headers(self):
        # chttpd_misc:handle_uuids_req: an ETag and cache-busting headers.
        r = self.node.get("/_uuids?count=3")
        self.assertEqual(r.header("Cache-Control"), "no-cache")
        self.assertEqual(r.header("Pragma"), "no-cache")
        self.assertEqual(r.header("Expires"), "Mon, 01 Jan 1990 00:00:00 GMT")
        self.assertRegex(r.header("ETag"), r'^"[0-9a-f]{32}"$')
        self.assertNotEqual(r.header("ETag"), self.node.get("/_uuids?count=3").header("ETag"))

    def test_invalid_names_are_absent_unless_created(self):
        # chttpd_db:handle_request validates a name only in create_db_req; every other request asks
        # mem3 for the shards of a database that cannot exist: 404. A document id is validated on
        # writes (couch_doc:validate_docid); a GET or DELETE opens it first: 404 missing.
        n = self.node
        for name in ("Upper", "_nothing", "1abc", "a" * 300):
            for method in ("GET", "DELETE", "POST", "HEAD"):
                r = n.request(method, "/" + name, {} if method == "POST" else None)
                self.assertEqual(r.status, 404, (name, method))
            self.assertEqual(n.get(f"/{name}/doc").status, 404, name)
            self.assertIn(n.put("/" + name).json["error"], ("illegal_database_name", "database_name_too_long"))
        assert n.put("/ids").status == 201
        for doc_id in ("_nope", "%FF", "_design/"):
            self.assertError(n.get(f"/ids/{doc_id}"), 404, "not_found", "missing")
            self.assertError(n.delete(f"/ids/{doc_id}?rev=1-abc"), 404, "not_found", "missing")
            self.assertError(n.put(f"/ids/{doc_id}", {}), 400, "illegal_docid")
        self.assertError(n.get("/ids/_design"), 404, "not_found", "missing")
        self.assertError(n.delete("/ids?rev=1-x"), 400, "bad_request")

    def test_invalid_url_encoding(self):
        for path in ("/db/%ZZ", "/%4", "/_all_dbs?x=%G1"):
            self.assertError(self.node.get(path), 400, "bad_request", "invalid_url_encoding")
        self.assertEqual(self.node.get("/_all_dbs?x=%41").status, 200)

    def test_revisions_named_and_their_order(self):
        n = self.node
        assert n.put("/rn").status == 201
        r1 = n.put("/rn/d", {"v": 1}).json["rev"]
        r2 = n.put("/rn/d", {"_rev": r1, "v": 2}).json["rev"]
        # A conflict whose hash sorts before any 32-digit one: the edit's r2 wins, whatever it hashes to.
        n.post("/rn/_bulk_docs", {"new_edits": False, "docs": [{"_id": "d", "_rev": "2-0", "v": 3}]})
        # A named revision comes without its document's metadata (couch_db:open_doc_revs).
        doc = n.get(f"/rn/d?rev=2-0&revs_info=true&conflicts=true&deleted_conflicts=true&local_seq=true").json
        self.assertEqual(doc, {"_id": "d", "_rev": "2-0", "v": 3})
        self.assertEqual(n.get("/rn/d?conflicts=true").json["_conflicts"], ["2-0"])
        # open_revs: each once, by (pos, hash), the missing ones after (fabric_doc_open_revs).
        revs = n.get(f'/rn/d?open_revs=["{r2}","9-x","2-0","{r2}","3-b","9-x"]').json
        self.assertEqual(revs, [{"ok": {"_id": "d", "_rev": "2-0", "v": 3}},
                                {"ok": {"_id": "d", "_rev": r2, "v": 2}}, {"missing": "3-b"}, {"missing": "9-x"}])
        self.assertEqual([e["ok"]["_rev"] for e in n.get("/rn/d?open_revs=all").json], ["2-0", r2])
        # _revs_diff: missing revisions each once, sorted.
        diff = n.post("/rn/_revs_diff", {"d": ["9-z", "3-c", "9-z", r1, "3-a"]}).json
        self.assertEqual(diff["d"]["missing"], ["3-a", "3-c", "9-z"])

    def test_longpoll_with_heartbeat_waits_for_a_change(self):
        # fabric_view_changes: with a heartbeat the timeout never ends a wait; newlines keep it open.
        n = self.node
        assert n.put("/lph").status == 201
        since = n.get("/lph/_changes?since=now").json["last_seq"]
        conn = http.client.HTTPConnection("127.0.0.1", n.port, timeout=30)
        conn.request("GET", f"/lph/_changes?feed=longpoll&heartbeat=50&timeout=50&since={since}",
                     headers=n.auth_header())
        r = conn.getresponse()
        self.assertEqual(r.status, 200)
        got = b""
        while got.count(b"\n") < 6:  # the header's newline and five beats: well past the timeout
            got += r.read(1)
        self.assertEqual(got, b'{"results":[\n' + b"\n" * 5)
        n.put("/lph/late", {"v": 1})
        body = json.loads(got + r.read())
        self.assertEqual([row["id"] for row in body["results"]], ["late"])
        conn.close()
        # Without a heartbeat the timeout ends it.
        self.assertEqual(n.get("/lph/_changes?feed=longpoll&timeout=100&since=now").json["results"], [])

    def test_numbers_are_stored_as_couchdb_writes_them(self):
        # Floats as Erlang prints them (float_to_binary(F, [short])), integers as they came.
        n = self.node
        assert n.put("/num").status == 201
        r = n.request("PUT", "/num/d", raw_body='{"a":1e10,"b":1000.0,"c":1.0,"d":5,"e":0.0001,"f":12.5e0}',
                      headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 201, r)
        raw = n.get("/num/d").raw
        self.assertIn('"a":1.0e10,"b":1.0e3,"c":1.0,"d":5,"e":0.0001,"f":12.5}', raw)

    def test_temp_view_is_gone(self):
        assert self.node.put("/tv").status == 201
        self.assertError(self.node.post("/tv/_temp_view", {"map": "function(doc){}"}), 410, "gone",
                         "Temporary views are not supported in CouchDB")


class Listings(NodeTest):
    """Items 5 and 7: _all_docs, _design_docs and _local_docs take their options as
    couch_mrview_http:parse_body_and_query does (a POST body's, then the query string's, the last of
    a repeated parameter winning), `keys` rows come in request order (reversed when descending)
    with offset null, and the three answer POST .../queries (chttpd_db:multi_all_docs_view)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        n = cls.node
        assert n.put("/ls?q=4").status == 201
        for doc_id in ("A1", "b", "c", "d", "_design/x", "_design/y"):
            assert n.put(f"/ls/{doc_id}", {"v": doc_id}).status == 201
        for doc_id in ("l1", "l2", "l3"):
            assert n.put(f"/ls/_local/{doc_id}", {"v": doc_id}).status == 201

    def ids(self, r):
        self.assertEqual(r.status, 200, r)
        return [row.get("id", row.get("key")) for row in r.json["rows"]]

    def test_post_body_options(self):
        n = self.node
        r = n.post("/ls/_all_docs", {"include_docs": True, "limit": 2, "skip": 1, "startkey": "_design/x"})
        self.assertEqual(self.ids(r), ["_design/y", "b"])
        self.assertEqual(r.json["rows"][0]["doc"]["v"], "_design/y")
        self.assertEqual(r.json["offset"], 2)  # A1 and _design/x before the first row
        # The query string comes after the body: it wins.
        self.assertEqual(len(n.post("/ls/_all_docs?limit=3", {"limit": 1}).json["rows"]), 3)
        self.assertEqual(self.ids(n.post("/ls/_all_docs", {"descending": True, "limit": 1})), ["d"])
        self.assertError(n.post("/ls/_all_docs", {"limit": -1}), 400, "query_parse_error",
                         "Invalid value for positive integer: -1")
        self.assertError(n.post("/ls/_all_docs", {"include_docs": "yes"}), 400, "query_parse_error")

    def test_repeated_parameter_takes_the_last(self):
        r = self.node.get("/ls/_all_docs?limit=1&limit=3")
        self.assertEqual(len(r.json["rows"]), 3)
        r = self.node.get("/ls/_all_docs?descending=false&descending=true&limit=1")
        self.assertEqual(self.ids(r), ["d"])

    def test_keys(self):
        n = self.node
        r = n.post("/ls/_all_docs", {"keys": ["c", "nope", "A1"]})
        self.assertIsNone(r.json["offset"])
        self.assertEqual(r.json["total_rows"], 6)
        self.assertEqual(self.ids(r), ["c", "nope", "A1"])
        self.assertEqual(r.json["rows"][1], {"key": "nope", "error": "not_found"})
        r = n.post("/ls/_all_docs?descending=true", {"keys": ["c", "nope", "A1"]})
        self.assertEqual(self.ids(r), ["A1", "nope", "c"])
        r = n.get('/ls/_all_docs?keys=["b","c"]&descending=true')
        self.assertEqual(self.ids(r), ["c", "b"])
        self.assertIsNone(r.json["offset"])

    def test_reduce_and_group_are_refused(self):
        for query, reason in (("reduce=true", "Reduce is invalid for map-only views."),
                              ("group=true", "Invalid use of grouping on a map view."),
                              ("group_level=2", "Invalid use of grouping on a map view."),
                              ("group=false&group_level=1",
                               "Can't specify group=false and group_level>0 at the same time")):
            for listing in ("_all_docs", "_design_docs", "_local_docs"):
                self.assertError(self.node.get(f"/ls/{listing}?{query}"), 400, "query_parse_error", reason)
        self.assertEqual(self.node.get("/ls/_all_docs?reduce=false&group_level=0").status, 200)

    def test_design_docs(self):
        n = self.node
        r = n.get("/ls/_design_docs")
        self.assertEqual(self.ids(r), ["_design/x", "_design/y"])
        # total_rows counts design documents; offset counts every document before the first row
        # (couch_db:fold_design_docs over the id tree), here A1.
        self.assertEqual((r.json["total_rows"], r.json["offset"]), (2, 1))
        self.assertEqual(self.ids(n.get("/ls/_design_docs?descending=true")), ["_design/y", "_design/x"])
        self.assertEqual(self.ids(n.get('/ls/_design_docs?startkey="_design/y"')), ["_design/y"])
        self.assertEqual(self.ids(n.get('/ls/_design_docs?endkey="_design/x"&inclusive_end=false')), [])
        self.assertEqual(self.ids(n.get('/ls/_design_docs?startkey="a"')), [])
        r = n.post("/ls/_design_docs", {"keys": ["_design/y", "_design/z"], "include_docs": True})
        self.assertEqual(r.json["rows"][0]["doc"]["v"], "_design/y")
        self.assertEqual(r.json["rows"][1], {"key": "_design/z", "error": "not_found"})
        # Keys of plain documents are dropped (after skip and limit), as fabric_view_all_docs.
        r = n.post("/ls/_design_docs", {"keys": ["A1", "_design/y", "nope"]})
        self.assertEqual([row["key"] for row in r.json["rows"]], ["_design/y"])
        r = n.post("/ls/_design_docs?limit=1", {"keys": ["A1", "_design/y"]})
        self.assertEqual(r.json["rows"], [])
        self.assertEqual(n.get("/ls/_design_docs?limit=1&skip=1").json["rows"][0]["id"], "_design/y")
        # offset is the rows before plus skip, at most total_rows (fabric_view_all_docs' FinalOffset).
        self.assertEqual(n.get("/ls/_design_docs?skip=1").json["offset"], 2)
        self.assertEqual(n.get("/ls/_design_docs?skip=9").json["offset"], 2)
        total = n.get("/ls/_all_docs?limit=0").json["total_rows"]
        self.assertEqual(n.get(f"/ls/_all_docs?skip={total + 5}").json["offset"], total)

    def test_local_docs(self):
        n = self.node
        r = n.get("/ls/_local_docs")
        self.assertEqual(self.ids(r), ["_local/l1", "_local/l2", "_local/l3"])
        self.assertIsNone(r.json["total_rows"])
        self.assertIsNone(r.json["offset"])
        self.assertEqual(self.ids(n.get('/ls/_local_docs?startkey="_local/l2"')), ["_local/l2", "_local/l3"])
        self.assertEqual(self.ids(n.get('/ls/_local_docs?endkey="_local/l2"&inclusive_end=false')), ["_local/l1"])
        self.assertEqual(self.ids(n.get('/ls/_local_docs?key="_local/l3"')), ["_local/l3"])
        self.assertEqual(self.ids(n.get('/ls/_local_docs?startkey="_local/l2"&descending=true')),
                         ["_local/l2", "_local/l1"])
        r = n.post("/ls/_local_docs", {"keys": ["_local/l3", "_local/zz"], "include_docs": True})
        self.assertEqual(r.json["rows"][0]["doc"], {"_id": "_local/l3", "_rev": "0-1", "v": "l3"})
        self.assertEqual(r.json["rows"][1], {"key": "_local/zz", "error": "not_found"})
        self.assertEqual(self.ids(n.get('/ls/_local_docs?keys=["_local/l1"]')), ["_local/l1"])

    def test_queries(self):
        n = self.node
        for listing, first in (("_all_docs", "A1"), ("_design_docs", "_design/x"), ("_local_docs", "_local/l1")):
            r = n.post(f"/ls/{listing}/queries?limit=1",
                       {"queries": [{}, {"descending": True}, {"limit": 5, "skip": 1}]})
            self.assertEqual(r.status, 200, r)
            results = r.json["results"]
            self.assertEqual(len(results), 3)
            self.assertEqual(results[0]["rows"][0]["id"], first)
            self.assertEqual(len(results[0]["rows"]), 1)  # the query string's limit applies to each query
            self.assertNotEqual(results[1]["rows"][0]["id"], first)
            self.assertGreaterEqual(len(results[2]["rows"]), 1)
        r = n.post("/ls/_all_docs/queries", {"queries": [{"keys": ["b"]}]})
        self.assertEqual(r.json["results"][0]["rows"][0]["id"], "b")
        self.assertIsNone(r.json["results"][0]["offset"])
        self.assertEqual(n.post("/ls/_all_docs/queries", {"queries": []}).json, {"results": []})
        self.assertError(n.post("/ls/_all_docs/queries", {}), 400, "bad_request",
                         "POST body must include `queries` parameter.")
        self.assertError(n.post("/ls/_all_docs/queries", {"queries": {}}), 400, "bad_request",
                         "`queries` member must be an array.")
        self.assertError(n.post("/ls/_all_docs/queries", {"queries": [{"reduce": True}]}), 400, "query_parse_error")
        self.assertError(n.get("/ls/_all_docs/queries"), 405, "method_not_allowed")


class LocalDocuments(NodeTest):
    """Item 3: couch_db_updater:increment_local_doc_revs never checks a local document's revision
    (the new one is the named one plus one), chttpd_db routes /db/_local/<id> and nothing longer,
    and a local document has one revision and no attachments."""

    def test_revisions_are_never_checked(self):
        n = self.node
        assert n.put("/lo").status == 201
        self.assertEqual(n.put("/lo/_local/a", {"v": 1}).json["rev"], "0-1")
        self.assertEqual(n.put("/lo/_local/a", {"v": 2}).json["rev"], "0-1")  # no rev: 0-1 again
        self.assertEqual(n.put("/lo/_local/a", {"v": 3, "_rev": "0-7"}).json["rev"], "0-8")  # a future one
        self.assertEqual(n.put("/lo/_local/a?rev=0-2", {"v": 4}).json["rev"], "0-3")  # a stale one
        r = n.post("/lo", {"_id": "_local/a", "v": 5})
        self.assertEqual((r.status, r.json["rev"]), (201, "0-1"))
        self.assertEqual(n.get("/lo/_local/a").json, {"_id": "_local/a", "_rev": "0-1", "v": 5})
        r = n.delete("/lo/_local/a")  # no rev needed
        self.assertEqual((r.status, r.json), (200, {"ok": True, "id": "_local/a", "rev": "0-0"}))
        self.assertError(n.get("/lo/_local/a"), 404, "not_found", "missing")
        self.assertError(n.delete("/lo/_local/a"), 404, "not_found", "missing")
        r = n.put("/lo/_local/b", {"_deleted": True})
        self.assertEqual((r.status, r.json["rev"]), (200, "0-0"))
        self.assertError(n.put("/lo/_local/b", {"_rev": "0-x"}), 400, "bad_request", "Invalid rev format")
        self.assertError(n.put("/lo/_local/b", {"_rev": "1-1"}), 400, "bad_request", "Invalid rev format")
        self.assertError(n.put("/lo/_local/b", {"_foo": 1}), 400, "doc_validation",
                         "Bad special document member: _foo")
        r = n.post("/lo/_bulk_docs", {"docs": [{"_id": "_local/c", "v": 1}, {"_id": "_local/c", "_rev": "0-5"}]})
        self.assertEqual([row["rev"] for row in r.json], ["0-1", "0-6"])

    def test_one_revision_no_attachments(self):
        n = self.node
        assert n.put("/lo2").status == 201
        r = n.put("/lo2/_local/d", {"v": 1, "_attachments": {"a.txt": {"content_type": "text/plain", "data": "aGk="}}})
        self.assertEqual(r.status, 201)
        self.assertEqual(r.header("ETag"), '"0-1"')
        self.assertEqual(n.get("/lo2/_local/d").json, {"_id": "_local/d", "_rev": "0-1", "v": 1})
        self.assertError(n.get("/lo2/_local/d/a.txt"), 400, "bad_request", "_local documents do not accept attachments.")
        self.assertError(n.put("/lo2/_local/d/a.txt", {}), 400, "bad_request",
                         "_local documents do not accept attachments.")
        self.assertError(n.get("/lo2/_local"), 400, "bad_request", "Invalid _local document id.")
        self.assertError(n.get("/lo2/_local/d?rev=0-1"), 404, "not_found", "missing")
        self.assertError(n.get("/lo2/_local/d?open_revs=all"), 404, "not_found", "missing")
        r = n.get("/lo2/_local/d?revs=true")
        self.assertEqual(r.json["_revisions"], {"start": 0, "ids": ["1"]})
        self.assertEqual(r.header("ETag"), '"0-1"')
        self.assertEqual(n.get("/lo2/_local/d", headers={"If-None-Match": '"0-1"'}).status, 304)
        self.assertEqual(n.get("/lo2/_local%2Fd").json["_id"], "_local/d")  # the id in one segment


class BulkGet(NodeTest):
    """Item 4: chttpd_db's bulk_get_open_doc_revs1: without `rev`, every leaf (losing and deleted
    ones; a deleted document as {"ok": {..., "_deleted": true}}); a bad entry is its own error row
    in a 200, with bulk_get_json_error's shape."""

    def test_leaves_and_bad_entries(self):
        n = self.node
        assert n.put("/bgf").status == 201
        r1 = n.put("/bgf/c", {"v": 1}).json["rev"]
        # A conflict: a second branch written with new_edits=false.
        n.post("/bgf/_bulk_docs", {"new_edits": False, "docs": [{"_id": "c", "_rev": "1-b", "v": 2}]})
        gone = n.put("/bgf/gone", {"v": 1}).json["rev"]
        n.delete(f"/bgf/gone?rev={gone}")
        r = n.post("/bgf/_bulk_get", {"docs": [
            {"id": "c"}, {"id": "gone"}, {"id": "missing"}, {"id": "c", "rev": "bad"}, {"id": "_bad"},
            {"id": 5}, {}, 7, {"id": "c", "rev": r1, "atts_since": "x"}, {"id": "c", "rev": "9-z"}]})
        self.assertEqual(r.status, 200, r)
        res = r.json["results"]
        self.assertEqual(sorted(d["ok"]["_rev"] for d in res[0]["docs"]), sorted([r1, "1-b"]))
        self.assertEqual(len(res[1]["docs"]), 1)
        self.assertTrue(res[1]["docs"][0]["ok"]["_deleted"])
        self.assertEqual(res[1]["docs"][0]["ok"]["_id"], "gone")
        self.assertEqual(res[2]["docs"], [{"error": {"id": "missing", "rev": "undefined", "error": "not_found",
                                                     "reason": "missing"}}])
        self.assertEqual(res[3]["docs"], [{"error": {"id": "c", "rev": "bad", "error": "bad_request",
                                                     "reason": "Invalid rev format"}}])
        self.assertEqual(res[4]["docs"][0]["error"]["error"], "illegal_docid")
        self.assertIsNone(res[4]["docs"][0]["error"]["rev"])
        self.assertEqual(res[5], {"id": 5, "docs": [{"error": {"id": 5, "rev": None, "error": "illegal_docid",
                                                                  "reason": "Document id must be a string"}}]})
        for k in (6, 7):
            self.assertEqual(res[k], {"id": None, "docs": [{"error": {"id": None, "rev": None, "error": "bad_request",
                                                                      "reason": "document id missed"}}]})
        self.assertEqual(res[8]["docs"][0]["error"]["error"], "bad_request")
        self.assertEqual(res[8]["docs"][0]["error"]["rev"], "x")
        self.assertEqual(res[9]["docs"], [{"error": {"id": "c", "rev": "9-z", "error": "not_found",
                                                     "reason": "missing"}}])


class EmptyRevisionHash(NodeTest):
    """Item 10: couch_doc:parse_rev("1-") is {1, <<>>}: new_edits=false stores revision "1-" (PouchDB's
    own suite sends it), an edit based on a revision no document has (generation 0, or "1-" on a
    document without it) is a 409 conflict."""

    def test_one_dash(self):
        n = self.node
        assert n.put("/eh").status == 201
        r = n.put("/eh/a?new_edits=false", {"_rev": "1-", "v": 1})
        self.assertEqual((r.status, r.json["rev"]), (201, "1-"))
        self.assertEqual(n.get("/eh/a").json, {"_id": "a", "_rev": "1-", "v": 1})
        self.assertEqual(n.get("/eh/a?revs=true").json["_revisions"], {"start": 1, "ids": [""]})
        self.assertEqual(n.post("/eh/_revs_diff", {"a": ["1-", "2-x"]}).json, {"a": {"missing": ["2-x"], "possible_ancestors": ["1-"]}})
        self.assertEqual(n.post("/eh/_bulk_get", {"docs": [{"id": "a", "rev": "1-"}]}).json["results"][0]["docs"][0]["ok"]["v"], 1)
        r = n.put("/eh/a", {"_rev": "1-", "v": 2})  # it is the document's revision: an edit of it
        self.assertEqual(r.status, 201, r)
        self.assertTrue(r.json["rev"].startswith("2-"))
        self.assertError(n.put("/eh/b", {"_rev": "1-", "v": 1}), 409, "conflict")
        self.assertError(n.put("/eh/a", {"_rev": "0-abc", "v": 1}), 409, "conflict")
        self.assertError(n.put("/eh/c", {"_rev": "0-abc"}), 409, "conflict")
        self.assertError(n.put("/eh/a", {"_rev": "x-abc"}), 400, "bad_request", "Invalid rev format")


class Pending(NodeTest):
    """Item 6: `pending` is what fabric_rpc counts, the changes no row has passed yet: with
    limit=0 every change after `since` (fabric_view_changes stores each worker's pending + 1 at its
    first change), and for descending feeds the changes still below (CouchDB 3.4, #4715)."""

    def test_pending(self):
        n = self.node
        assert n.put("/pe?q=3").status == 201
        for i in range(9):
            assert n.put(f"/pe/d{i}", {"v": i}).status == 201

        def pending(query):
            r = n.get("/pe/_changes?" + query)
            self.assertEqual(r.status, 200, r)
            return len(r.json["results"]), r.json["pending"]

        self.assertEqual(pending(""), (9, 0))
        self.assertEqual(pending("limit=0"), (0, 9))
        self.assertEqual(pending("limit=4"), (4, 5))
        self.assertEqual(pending("descending=true"), (9, 0))
        self.assertEqual(pending("descending=true&limit=2"), (2, 7))
        self.assertEqual(pending("descending=true&limit=0"), (0, 9))
        self.assertEqual(pending("since=now&limit=0"), (0, 0))
        token = n.get("/pe/_changes?limit=3").json["last_seq"]
        self.assertEqual(pending(f"since={token}&limit=0"), (0, 6))
        self.assertEqual(pending(f"since={token}"), (6, 0))
        # A filtered feed read to its end has nothing pending; one cut short by its limit has what
        # it did not look at yet.
        self.assertEqual(pending('filter=_doc_ids&doc_ids=["d1","d2"]'), (2, 0))
        rows, left = pending('filter=_doc_ids&doc_ids=["d1","d2"]&limit=1')
        self.assertEqual(rows, 1)
        self.assertLessEqual(left, 8)
        self.assertGreaterEqual(left, 1)
        r = n.get("/pe/_changes?feed=continuous&limit=0")
        self.assertEqual(r.json["pending"], 9)


class DesignDocuments(NodeTest):
    """Item 8: couch_mrview:validate on every save of a design document: the field types of
    validate_ddoc_fields, a map function for each view, built-in reduces by name."""

    def test_invalid_design_docs_are_refused(self):
        n = self.node
        assert n.put("/dd").status == 201
        self.assertError(n.put("/dd/_design/a", {"views": []}), 400, "invalid_design_doc",
                         "`views` field must have object type")
        self.assertError(n.put("/dd/_design/a", {"views": {"v": {"map": 1}}}), 400, "invalid_design_doc",
                         "`views.v.map` field must have string type")
        self.assertError(n.put("/dd/_design/a", {"views": {"v": {"map": "function(d){}", "reduce": "_median"}}}),
                         400, "invalid_design_doc", "`_median` is not a supported reduce function.")
        self.assertError(n.put("/dd/_design/a", {"views": {"v": {"reduce": "_sum"}}}), 400, "invalid_design_doc",
                         "View `v` must contain map function")
        self.assertError(n.put("/dd/_design/a", {"options": {"local_seq": 1}}), 400, "invalid_design_doc",
                         "`options.local_seq` field must have boolean type")
        self.assertError(n.put("/dd/_design/a", {"filters": {"f": 2}}), 400, "invalid_design_doc",
                         "`filters.f` field must have object or string type")
        self.assertError(n.put("/dd/_design/a", {"updates": []}), 400, "invalid_design_doc")
        self.assertError(n.put("/dd/_design/a", {"lists": {"l": None}}), 400, "invalid_design_doc")
        self.assertError(n.post("/dd", {"_id": "_design/b", "shows": 5}), 400, "invalid_design_doc")
        r = n.post("/dd/_bulk_docs", {"docs": [{"_id": "_design/c", "views": {"v": "x"}}, {"_id": "fine"}]})
        self.assertEqual(r.json[0], {"id": "_design/c", "error": "invalid_design_doc",
                                     "reason": "`views.v` field must have object type"})
        self.assertTrue(r.json[1]["ok"])
        self.assertEqual(n.get("/dd/_design/a").status, 404)  # nothing was stored
        good = {"views": {"v": {"map": "function(doc){emit(doc._id, 1)}", "reduce": "_count"}},
                "filters": {"f": "function(doc, req){return true}"}, "language": "javascript"}
        r = n.put("/dd/_design/a", good)
        self.assertEqual(r.status, 201, r)
        # A deletion carries no body to validate.
        self.assertEqual(n.delete(f"/dd/_design/a?rev={r.json['rev']}").status, 200)


class Endpoints(NodeTest):
    """Item 7: the endpoints clients call: COPY (chttpd_db and couch_httpd_db's Destination
    header), _missing_revs, /_dbs_info (chttpd_misc), and item 13's /_all_dbs?key= and a
    deletion's 200."""

    def test_copy(self):
        n = self.node
        assert n.put("/cpy").status == 201
        r1 = n.put("/cpy/src", {"v": 1, "_attachments": {"a.txt": {"content_type": "text/plain",
                                                                  "data": "aGVsbG8="}}}).json["rev"]
        n.put("/cpy/src", {"_rev": r1, "v": 2, "_attachments": {"a.txt": {"stub": True}}})
        r = n.request("COPY", "/cpy/src", headers={"Destination": "dst"})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.header("Location"), f"http://127.0.0.1:{n.port}/cpy/dst")
        self.assertEqual(r.header("ETag"), f'"{r.json["rev"]}"')
        copy = n.get("/cpy/dst?attachments=true").json
        self.assertEqual(copy["v"], 2)
        self.assertEqual(copy["_attachments"]["a.txt"]["data"], "aGVsbG8=")
        self.assertEqual(n.get("/cpy/dst/a.txt").raw, "hello")
        # The target exists: its revision must be named in Destination.
        self.assertError(n.request("COPY", "/cpy/src", headers={"Destination": "dst"}), 409, "conflict")
        dst_rev = copy["_rev"]
        r = n.request("COPY", f"/cpy/src?rev={r1}", headers={"Destination": f"dst?rev={dst_rev}"})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(n.get("/cpy/dst").json["v"], 1)  # the source's older revision
        r = n.request("COPY", "/cpy/src", headers={"Destination": "a%2Fb"})
        self.assertEqual(r.json["id"], "a/b")
        self.assertError(n.request("COPY", "/cpy/src"), 400, "bad_request", "Destination header is mandatory for COPY.")
        self.assertError(n.request("COPY", "/cpy/src", headers={"Destination": "http://h/db/x"}), 400, "bad_request",
                         "Destination URL must be relative.")
        self.assertError(n.request("COPY", "/cpy/nope", headers={"Destination": "z"}), 404, "not_found")
        self.assertError(n.request("COPY", "/cpy/src", headers={"Destination": "_bad"}), 400, "illegal_docid")
        self.assertError(n.request("COPY", "/cpy/src", headers={"Destination": "z?rev=nope"}), 400, "bad_request")
        r = n.request("PATCH", "/cpy/src")
        self.assertError(r, 405, "method_not_allowed", "Only DELETE,GET,HEAD,POST,PUT,COPY allowed")
        # _local documents on either side (issue 51 point 6), as chttpd_db's COPY of any document.
        self.assertEqual(n.put("/cpy/_local/l", {"k": 1}).status, 201)
        r = n.request("COPY", "/cpy/_local/l", headers={"Destination": "_local/l2"})
        self.assertEqual((r.status, r.json), (201, {"ok": True, "id": "_local/l2", "rev": "0-1"}))
        self.assertEqual((r.header("ETag"), r.header("Location")), ('"0-1"', f"http://127.0.0.1:{n.port}/cpy/_local%2Fl2"))
        self.assertEqual(n.get("/cpy/_local/l2").json, {"_id": "_local/l2", "_rev": "0-1", "k": 1})
        r = n.put("/cpy/_local/l3", {"k": 3})  # a _local write has a Location, as chttpd_db's PUT
        self.assertEqual(r.header("Location"), f"http://127.0.0.1:{n.port}/cpy/_local%2Fl3")
        r = n.request("COPY", "/cpy/_local/l", headers={"Destination": "from-local"})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(n.get("/cpy/from-local").json["k"], 1)
        r = n.request("COPY", "/cpy/src", headers={"Destination": "_local/to-local"})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(n.get("/cpy/_local/to-local").json["v"], 2)
        self.assertNotIn("_attachments", n.get("/cpy/_local/to-local").json)  # a local document has none
        self.assertError(n.request("COPY", "/cpy/_local/none", headers={"Destination": "_local/x"}), 404, "not_found")

    def test_etags_where_couchdb_sends_them(self):
        """Issue 51 point 7: POST /db answers without an ETag (chttpd_db's db_req POST); a read with
        meta fields has none (send_doc: only when Doc#doc.meta is empty)."""
        n = self.node
        assert n.put("/etags").status == 201
        r = n.post("/etags", {"_id": "p", "v": 1})
        self.assertEqual(r.status, 201)
        self.assertIsNone(r.header("ETag"))
        self.assertIsNotNone(n.put("/etags/q", {"v": 1}).header("ETag"))  # PUT has one
        self.assertIsNotNone(n.get("/etags/p").header("ETag"))
        self.assertIsNotNone(n.get("/etags/p?conflicts=true").header("ETag"))  # no conflicts: no meta
        for q in ("revs_info=true", "local_seq=true", "meta=true"):
            r = n.get(f"/etags/p?{q}")
            self.assertEqual(r.status, 200)
            self.assertIsNone(r.header("ETag"), q)
        etag = n.get("/etags/p").header("ETag")
        r = n.request("GET", "/etags/p?revs_info=true", headers={"If-None-Match": etag})
        self.assertEqual(r.status, 200)  # no 304 without an ETag

    def test_deletion_by_put_is_200(self):
        n = self.node
        assert n.put("/del").status == 201
        rev = n.put("/del/d", {"v": 1}).json["rev"]
        r = n.put("/del/d", {"_rev": rev, "_deleted": True})
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.json["rev"].startswith("2-"))
        self.assertEqual(n.get("/del/d").status, 404)

    def test_missing_revs(self):
        n = self.node
        assert n.put("/mr").status == 201
        rev = n.put("/mr/a", {"v": 1}).json["rev"]
        r = n.post("/mr/_missing_revs", {"a": [rev, "2-x"], "b": ["1-y"], "c": []})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json, {"missing_revs": {"a": ["2-x"], "b": ["1-y"]}})
        self.assertEqual(n.post("/mr/_missing_revs", {"a": [rev]}).json, {"missing_revs": {}})
        self.assertError(n.get("/mr/_missing_revs"), 405, "method_not_allowed")
        self.assertError(n.post("/mr/_missing_revs", {"a": "x"}), 400, "bad_request")

    def test_dbs_info(self):
        n = self.node
        for name in ("di-a", "di-b"):
            assert n.put(f"/{name}").status == 201
        n.put("/di-a/x", {"v": 1})
        r = n.post("/_dbs_info", {"keys": ["di-a", "nope", "di-b"]})
        self.assertEqual(r.status, 200, r)
        self.assertEqual([e["key"] for e in r.json], ["di-a", "nope", "di-b"])
        self.assertEqual(r.json[0]["info"]["doc_count"], 1)
        self.assertEqual(r.json[0]["info"]["db_name"], "di-a")
        self.assertEqual(r.json[1], {"key": "nope", "error": "not_found"})
        r = n.get('/_dbs_info?keys=["di-b"]')
        self.assertEqual([e["key"] for e in r.json], ["di-b"])
        r = n.get('/_dbs_info?startkey="di-a"&endkey="di-b"')
        self.assertEqual([e["key"] for e in r.json], ["di-a", "di-b"])
        self.assertError(n.post("/_dbs_info", {}), 400, "bad_request", "`keys` member must exist.")
        self.assertError(n.post("/_dbs_info", {"keys": ["x"] * 101}), 400, "bad_request", "too_many_keys")
        self.assertError(n.post("/_dbs_info", {"keys": ["di-a"]}, auth=False), 401, "unauthorized")

    def test_dbs_info_lists_every_database(self):
        """GET /_dbs_info without keys lists what _all_dbs lists, however many (the 100-key cap is for
        the names a client sends: before, a node with 101 databases answered 400 too_many_keys)."""
        n = self.node
        names = [f"dl-{i:03d}" for i in range(105)]
        for name in names:
            assert n.put(f"/{name}?q=1").status == 201
        r = n.get('/_dbs_info?startkey="dl-"&endkey="dl-~"')
        self.assertEqual(r.status, 200, r)
        self.assertEqual([e["key"] for e in r.json], names)
        self.assertTrue(all(e["info"]["db_name"] == e["key"] for e in r.json))
        self.assertEqual(len([e for e in n.get("/_dbs_info").json if e["key"].startswith("dl-")]), 105)
        self.assertError(n.get("/_dbs_info?keys=" + json.dumps(names, separators=(",", ":"))), 400, "bad_request", "too_many_keys")
        for name in names:
            assert n.delete(f"/{name}").status == 200

    def test_all_dbs_key_and_etag(self):
        n = self.node
        for name in ("ak-a", "ak-b"):
            assert n.put(f"/{name}").status == 201
        self.assertEqual(n.get('/_all_dbs?key="ak-b"').json, ["ak-b"])
        self.assertEqual(n.get('/_all_dbs?key="ak-zz"').json, [])
        r = n.get("/_all_dbs")
        etag = r.header("ETag")
        self.assertRegex(etag, r'^"[0-9a-f]{32}"$')
        self.assertEqual(n.get("/_all_dbs", headers={"If-None-Match": etag}).status, 304)
        assert n.put("/ak-c").status == 201
        self.assertNotEqual(n.get("/_all_dbs").header("ETag"), etag)


class AttachmentHeaders(NodeTest):
    """Items 11 and 12: attachments stored and served as chttpd_db and couch_att do: compressible
    types gzip-stored whatever their size (so digests match CouchDB's), never ranged then
    (`Accept-Ranges: none`, no Content-MD5 in any answer), several ranges of an identity one as
    multipart/byteranges, a 304 with `Content-Length: 0`, `Cache-Control: must-revalidate` on
    document reads."""

    def test_small_text_is_gzip_stored(self):
        n = self.node
        assert n.put("/ah").status == 201
        n.put("/ah/d", {"_attachments": {"t.txt": {"content_type": "text/plain", "data": "aGVsbG8="}}})
        e = n.get("/ah/d?att_encoding_info=true").json["_attachments"]["t.txt"]
        # The digest a CouchDB client's fixtures carry for this 5-byte text/plain attachment.
        self.assertEqual((e["digest"], e["encoding"], e["encoded_length"], e["length"]),
                         ("md5-iMaiC8wqiFlD2NjLTemvCQ==", "gzip", 25, 5))
        g = n.get("/ah/d/t.txt")
        self.assertEqual((g.status, g.raw, g.header("Accept-Ranges"), g.header("Content-MD5")),
                         (200, "hello", "none", None))
        g = n.get("/ah/d/t.txt", headers={"Range": "bytes=1-2"})
        self.assertEqual((g.status, g.raw), (200, "hello"))
        g = n.get("/ah/d/t.txt", headers={"Accept-Encoding": "gzip"})
        self.assertEqual((g.header("Content-Encoding"), g.header("Content-MD5")), ("gzip", None))
        r = n.get("/ah/d/t.txt", headers={"If-None-Match": '"iMaiC8wqiFlD2NjLTemvCQ=="'})
        self.assertEqual((r.status, r.header("Content-Length")), (304, "0"))

    def test_several_ranges(self):
        n = self.node
        assert n.put("/ah2").status == 201
        data = bytes(range(100))
        r = n.request("PUT", "/ah2/d/b.bin", raw_body=data, headers={"Content-Type": "application/octet-stream"})
        self.assertEqual(r.status, 201, r)
        g = n.get("/ah2/d/b.bin", headers={"Range": "bytes=0-1,5-6,-2"})
        self.assertEqual(g.status, 206, g)
        ctype = g.header("Content-Type")
        self.assertTrue(ctype.startswith('multipart/byteranges; boundary="'), ctype)
        boundary = ctype.split('"')[1].encode()
        parts = g.data.split(b"--" + boundary)
        self.assertEqual(parts[0], b"")
        self.assertEqual(parts[-1], b"--")
        got = []
        for part in parts[1:-1]:
            head, body = part[2:].split(b"\r\n\r\n", 1)
            headers = dict(line.split(b": ", 1) for line in head.split(b"\r\n"))
            self.assertEqual(headers[b"Content-Type"], b"application/octet-stream")
            got.append((headers[b"Content-Range"], body[:-2]))  # each body ends with CRLF
        self.assertEqual(got, [(b"bytes 0-1/100", data[0:2]), (b"bytes 5-6/100", data[5:7]),
                               (b"bytes 98-99/100", data[98:])])
        many = ",".join(f"{i}-{i}" for i in range(10))
        self.assertEqual(n.get("/ah2/d/b.bin", headers={"Range": f"bytes={many}"}).status, 200)  # 10 or more: all
        self.assertError(n.get("/ah2/d/b.bin", headers={"Range": "bytes=0-1,9-3"}), 416,
                         "requested_range_not_satisfiable")

    def test_missing_attachment_and_stub_revpos(self):
        n = self.node
        assert n.put("/ah4").status == 201
        rev = n.put("/ah4/d", {"_attachments": {"t.bin": {"content_type": "application/x-data",
                                                          "data": "aGVsbG8="}}}).json["rev"]
        self.assertError(n.delete(f"/ah4/d/nope?rev={rev}"), 404, "not_found", "Document is missing attachment")
        self.assertError(n.delete("/ah4/d/nope"), 404, "not_found", "Document is missing attachment")
        self.assertError(n.delete("/ah4/d/t.bin"), 409, "conflict")  # it exists: a rev is needed
        self.assertError(n.put("/ah4/d", {"_rev": rev, "_attachments": {"t.bin": {"stub": True, "revpos": 5}}}),
                         412, "missing_stub", "Invalid attachment stub in d for t.bin")
        self.assertError(n.put("/ah4/e", {"_attachments": {"t.bin": {"data": "!!!"}}}), 400, "bad_request",
                         "Invalid attachment data for t.bin")
        r = n.put("/ah4/d", {"_rev": rev, "_attachments": {"t.bin": {"stub": True, "revpos": 1}}})
        self.assertEqual(r.status, 201, r)

    def test_document_reads_must_revalidate(self):
        n = self.node
        assert n.put("/ah3").status == 201
        n.put("/ah3/d", {"v": 1})
        for path in ("/ah3/d", "/ah3/nope", "/ah3/_all_docs", "/ah3"):
            self.assertEqual(n.get(path).header("Cache-Control"), "must-revalidate", path)


class DocumentSize(NodeTest):
    """Item 13: a body over [couchdb] max_document_size is 413 document_too_large, the reason its id
    (couch_doc:from_json_obj_validate); a _bulk_docs holding one fails whole."""
    config = "[couchdb]\nmax_document_size = 1000\n"

    def test_document_too_large(self):
        n = self.node
        assert n.put("/big").status == 201
        self.assertEqual(n.put("/big/ok", {"v": "x" * 900}).status, 201)
        self.assertError(n.put("/big/huge", {"v": "x" * 1000}), 413, "document_too_large", "huge")
        self.assertError(n.post("/big/_bulk_docs", {"docs": [{"_id": "a"}, {"_id": "b", "v": "x" * 1000}]}),
                         413, "document_too_large", "b")
        self.assertEqual(n.get("/big/a").status, 404)  # nothing of that request was written
        # Attachments do not count.
        r = n.put("/big/withatt", {"_attachments": {"a": {"content_type": "application/x-data",
                                                          "data": "eHh4" * 600}}})
        self.assertEqual(r.status, 201, r)
        self.assertError(n.request("PATCH", "/big"), 405, "method_not_allowed", "Only DELETE,GET,HEAD,POST allowed")


if __name__ == "__main__":
    main()
