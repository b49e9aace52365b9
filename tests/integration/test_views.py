"""Map views (issue 31, the map-only slice): GET|POST /db/_design/d/_view/v over a node's copies,
rows in CouchDB's collation order across ranges, the range and paging parameters, include_docs,
update=false, documents edited and deleted, the built-in reduces with group and group_level, the
index surviving kill -9, and the errors of what is not built yet (JavaScript reduces, keys)."""
import http.client
import json
import os
import threading
import time
import urllib.parse
import urllib.request

from harness import Node, NodeTest, SlowBuildTest, main

# CouchDB's collation specification (docs "Views Collation", view_collation.js), in order.
COLLATION = [None, False, True, 1, 2, 3.0, 4, "a", "A", "aa", "b", "B", "ba", "bb",
             ["a"], ["b"], ["b", "c"], ["b", "c", "a"], ["b", "d"], ["b", "d", "e"],
             {"a": 1}, {"a": 2}, {"b": 1}, {"b": 2}, {"b": 2, "a": 1}, {"b": 2, "c": 2}]


def wait_until(predicate, seconds=15):
    deadline = time.time() + seconds
    while not predicate():
        if time.time() > deadline:
            return False
        time.sleep(0.02)
    return True


def qs(**params):
    return "?" + urllib.parse.urlencode({k: json.dumps(v) if k.endswith("key") or k == "key" else v
                                         for k, v in params.items()})


class MapViews(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        n = cls.node
        for db, q in (("views4", 4), ("views1", 1)):
            assert n.put(f"/{db}?q={q}").status == 201
            docs = [{"_id": f"c{i:02d}", "key": k} for i, k in enumerate(COLLATION)]
            docs += [{"_id": f"n{i:02d}", "type": "xyz"[i % 3], "n": i} for i in range(30)]
            assert n.post(f"/{db}/_bulk_docs", {"docs": docs}).status == 201
            ddoc = {"views": {"collate": {"map": "function(doc) { if ('key' in doc) emit(doc.key, doc._id); }"},
                              "by_type": {"map": "function(doc) { if (doc.type) emit(doc.type, doc.n); }"},
                              "linked": {"map": "function(doc) { if (doc.n === 4) emit('link', {_id: 'n05'}); }"},
                              "counted": {"map": "function(doc) { if (doc.n) emit(doc.n, 1); }", "reduce": "_count"},
                              "sums": {"map": "function(doc) { if (doc.type) emit([doc.type, doc.n % 2], doc.n); }",
                                       "reduce": "_sum"},
                              "stats": {"map": "function(doc) { if (doc.type) emit(doc.type, doc.n); }",
                                        "reduce": "_stats"},
                              "js": {"map": "function(doc) { emit(1, 1); }",
                                     "reduce": "function(k, v) { return sum(v); }"},
                              "js_sums": {"map": "function(doc) { if (doc.type) emit([doc.type, doc.n % 2], doc.n); }",
                                          "reduce": "function(k, v, rereduce) { return sum(v); }"},
                              "grows": {"map": "function(doc) { emit(doc._id, 'abcdefghij'.repeat(10)); }",
                                        "reduce": "function(k, v) { return v; }"}}}
            assert n.put(f"/{db}/_design/app", ddoc).status == 201

    def view(self, db, name, query="", ddoc="app", **kw):
        r = self.node.get(f"/{db}/_design/{ddoc}/_view/{name}{query}", **kw)
        self.assertEqual(r.status, 200, r.raw)
        return r.json

    def test_rows_in_couchdbs_collation_order_across_ranges(self):
        for db in ("views4", "views1"):
            with self.subTest(db=db):
                got = self.view(db, "collate")
                self.assertEqual([row["key"] for row in got["rows"]], COLLATION)
                self.assertEqual(got["total_rows"], len(COLLATION))
                self.assertEqual(got["offset"], 0)
                back = self.view(db, "collate", "?descending=true")
                self.assertEqual([row["key"] for row in back["rows"]], COLLATION[::-1])

    def test_key_ranges_docids_skip_limit_descending(self):
        ids = lambda j: [row["id"] for row in j["rows"]]  # noqa: E731
        for db in ("views4", "views1"):
            with self.subTest(db=db):
                y = self.view(db, "by_type", qs(key="y"))
                self.assertEqual(ids(y), [f"n{i:02d}" for i in range(1, 30, 3)])
                self.assertEqual(y["offset"], 10)
                r = self.view(db, "by_type", qs(startkey="y", startkey_docid="n10", endkey="z", endkey_docid="n05"))
                self.assertEqual(ids(r), ["n10", "n13", "n16", "n19", "n22", "n25", "n28", "n02", "n05"])
                r = self.view(db, "by_type", qs(startkey="x", endkey="y", inclusive_end="false", skip=2, limit=3))
                self.assertEqual(ids(r), ["n06", "n09", "n12"])
                self.assertEqual(r["offset"], 2)
                r = self.view(db, "by_type", qs(startkey="y", endkey="x", descending="true", limit=4))
                self.assertEqual(ids(r), ["n28", "n25", "n22", "n19"])
                self.assertEqual(r["offset"], 10)
                # POST with the options in the body, as CouchDB's.
                r = self.node.post(f"/{db}/_design/app/_view/by_type", {"key": "z", "limit": 2})
                self.assertEqual(ids(r.json), ["n02", "n05"])

    def test_include_docs_follows_an_id_in_the_value(self):
        r = self.view("views4", "linked", "?include_docs=true")
        self.assertEqual(len(r["rows"]), 1)
        self.assertEqual(r["rows"][0]["id"], "n04")
        self.assertEqual(r["rows"][0]["doc"]["_id"], "n05")  # the linked document, as CouchDB's
        r = self.view("views4", "by_type", qs(key="x", limit=1, include_docs="true"))
        self.assertEqual(r["rows"][0]["doc"]["n"], 0)

    def test_edits_and_deletions_reach_the_rows_and_update_false_waits(self):
        n = self.node
        self.assertEqual(n.put("/views-edit").status, 201)
        self.assertEqual(n.put("/views-edit/_design/app", {"views": {"v": {"map": "function(d) { emit(d.k, null); }"}}}).status, 201)
        revs = {}
        for k in ("a", "b", "c"):
            revs[k] = n.put(f"/views-edit/{k}", {"k": k}).json["rev"]
        self.assertEqual([r["key"] for r in self.view("views-edit", "v")["rows"]], ["a", "b", "c"])
        n.put("/views-edit/a", {"_rev": revs["a"], "k": "z"})
        n.delete(f"/views-edit/b?rev={revs['b']}")
        # update=false answers from the index as it is, and the next query brings it up to date.
        stale = self.view("views-edit", "v", "?update=false")
        self.assertEqual([r["id"] for r in stale["rows"]], ["a", "b", "c"])
        fresh = self.view("views-edit", "v")
        self.assertEqual([(r["id"], r["key"]) for r in fresh["rows"]], [("c", "c"), ("a", "z")])
        self.assertEqual(fresh["total_rows"], 2)
        # update=lazy (and stale=update_after) answers as it is, then updates after the answer.
        # Each on its own index: a lazy update still running could take the next write in too.
        self.assertEqual(n.put("/views-edit/_design/two", {"views": {"v": {"map": "function(d) { emit(d.k, 1); }"}}}).status,
                         201)
        self.assertEqual(len(self.view("views-edit", "v", ddoc="two")["rows"]), 2)
        for query, k, ddoc in (("?update=lazy", "d", "app"), ("?stale=update_after", "e", "two")):
            n.put(f"/views-edit/{k}", {"k": k})
            self.assertNotIn(k, [r["id"] for r in self.view("views-edit", "v", query, ddoc=ddoc)["rows"]])
            self.assertTrue(wait_until(lambda k=k, ddoc=ddoc: k in [r["id"] for r in self.view(
                "views-edit", "v", "?update=false", ddoc=ddoc)["rows"]]), query)

    def test_builtin_reduces_group_and_group_level(self):
        for db in ("views4", "views1"):
            with self.subTest(db=db):
                self.assertEqual(self.view(db, "counted"), {"rows": [{"key": None, "value": 29}]})
                self.assertEqual(self.view(db, "counted", qs(startkey=10, endkey=19)), {"rows": [{"key": None, "value": 10}]})
                # _count without grouping counts by the index's blocks: the same edges as rows.
                self.assertEqual(self.view(db, "counted", qs(startkey=10, endkey=19, inclusive_end="false")),
                                 {"rows": [{"key": None, "value": 9}]})
                self.assertEqual(self.view(db, "counted", qs(startkey=19, endkey=10, descending="true")),
                                 {"rows": [{"key": None, "value": 10}]})
                self.assertEqual(self.view(db, "counted", qs(startkey=10, startkey_docid="n11", endkey=12)),
                                 {"rows": [{"key": None, "value": 2}]})
                self.assertEqual(self.view(db, "counted", qs(startkey=1000)), {"rows": []})
                self.assertEqual(self.view(db, "counted", "?skip=1"), {"rows": []})
                self.assertEqual(self.view(db, "counted", "?limit=0"), {"rows": []})
                rows = self.view(db, "sums", "?group_level=1")["rows"]
                self.assertEqual(rows, [{"key": ["x"], "value": sum(range(0, 30, 3))},
                                        {"key": ["y"], "value": sum(range(1, 30, 3))},
                                        {"key": ["z"], "value": sum(range(2, 30, 3))}])
                rows = self.view(db, "sums", "?group=true&skip=1&limit=2&descending=true")["rows"]
                self.assertEqual(rows, [{"key": ["z", 0], "value": sum(i for i in range(2, 30, 3) if i % 2 == 0)},
                                        {"key": ["y", 1], "value": sum(i for i in range(1, 30, 3) if i % 2 == 1)}])
                x = [i for i in range(0, 30, 3)]
                self.assertEqual(self.view(db, "stats", qs(key="x", group="true"))["rows"],
                                 [{"key": "x", "value": {"sum": sum(x), "count": len(x), "min": 0, "max": 27,
                                                         "sumsqr": sum(i * i for i in x)}}])

    def test_queries_run_several(self):
        n = self.node
        r = n.post("/views4/_design/app/_view/by_type/queries?limit=2",
                   {"queries": [{"key": "x"}, {"keys": ["z"], "limit": 1}, {"reduce": False, "descending": True}]})
        self.assertEqual(r.status, 200, r.raw)
        results = r.json["results"]
        self.assertEqual([row["id"] for row in results[0]["rows"]], ["n00", "n03"])  # the query string's limit
        self.assertEqual([row["id"] for row in results[1]["rows"]], ["n02"])
        self.assertEqual(len(results[2]["rows"]), 2)
        r = n.post("/views4/_design/app/_view/counted/queries", {"queries": [{}, {"group": True, "limit": 2}]})
        self.assertEqual(r.json["results"], [{"rows": [{"key": None, "value": 29}]},
                                             {"rows": [{"key": 1, "value": 1}, {"key": 2, "value": 1}]}])
        self.assertError(n.post("/views4/_design/app/_view/by_type/queries", {"q": []}), 400, "bad_request",
                         "POST body must include `queries` parameter.")
        self.assertEqual(n.get("/views4/_design/app/_view/by_type/queries").status, 405)

    def test_view_cleanup_removes_the_indexes_no_view_names(self):
        n = self.node
        self.assertEqual(n.put("/views-clean?q=2").status, 201)
        self.assertEqual(n.put("/views-clean/d", {"k": 1}).status, 201)
        rev = n.put("/views-clean/_design/c", {"views": {"v": {"map": "function(d) { emit(d.k, 1); }"}}}).json["rev"]
        self.assertEqual(len(self.view("views-clean", "v", ddoc="c")["rows"]), 1)
        n.put("/views-clean/_design/c", {"_rev": rev, "views": {"v": {"map": "function(d) { emit(d.k, 2); }"}}})
        self.assertEqual(self.view("views-clean", "v", ddoc="c")["rows"][0]["value"], 2)

        def index_files():
            out = []
            for root, _, files in os.walk(os.path.join(n.data_dir, ".shard_views")):
                out += [f for f in files if f.endswith(".view") and "views-clean" in root]
            return out

        self.assertEqual(len(index_files()), 4)  # two signatures, two ranges
        r = n.request("POST", "/views-clean/_view_cleanup", {})
        self.assertEqual(r.status, 202)
        self.assertEqual(len(index_files()), 2)  # the current signature's, on each range
        self.assertEqual(self.view("views-clean", "v", ddoc="c")["rows"][0]["value"], 2)

    def test_more_indexes_than_stay_open(self):
        # view_reader keeps 64 index files open: the 70 design documents' indexes are opened,
        # the least recently used closed, and reopened where they were.
        n = self.node
        self.assertEqual(n.put("/views-many").status, 201)
        self.assertEqual(n.post("/views-many/_bulk_docs", {"docs": [{"_id": f"d{i}", "i": i} for i in range(5)]}).status, 201)
        docs = [{"_id": f"_design/d{k}", "views": {"v": {"map": f"function(doc) {{ emit(doc.i * {k + 1}, null); }}"}}}
                for k in range(70)]
        self.assertEqual(n.post("/views-many/_bulk_docs", {"docs": docs}).status, 201)
        for k in list(range(70)) + [0, 1, 69]:
            rows = self.view("views-many", "v", ddoc=f"d{k}")["rows"]
            self.assertEqual([r["key"] for r in rows], [i * (k + 1) for i in range(5)], k)

    def test_errors(self):
        n = self.node
        self.assertError(n.get("/views4/_design/app/_view/nope"), 404, "not_found", "missing_named_view")
        self.assertError(n.get("/views4/_design/none/_view/v"), 404, "not_found", "missing")
        self.assertError(n.get("/views4/_design/app/_view/by_type?group=true"), 400, "query_parse_error",
                         "Invalid use of grouping on a map view.")
        self.assertError(n.get("/views4/_design/app/_view/by_type?limit=-1"), 400, "query_parse_error")
        self.assertError(n.get("/views4/_design/app/_view/js?include_docs=true"), 400, "query_parse_error",
                         "`include_docs` is invalid for reduce")
        self.assertError(n.get("/views4/_design/app/_view/counted?include_docs=true"), 400, "query_parse_error",
                         "`include_docs` is invalid for reduce")
        self.assertError(n.get("/views4/_design/app/_view/counted?group=false&group_level=1"), 400,
                         "query_parse_error", "Can't specify group=false and group_level>0 at the same time")
        r = n.get("/views4/_design/app/_view/counted?reduce=false&limit=2")
        self.assertEqual([row["key"] for row in r.json["rows"]], [1, 2])
        self.assertError(n.post("/views4/_design/app/_view/counted", {"keys": [1]}), 400, "query_parse_error",
                         "Multi-key fetchs for reduce views must use `group=true`")
        self.assertError(n.post("/views4/_design/app/_view/by_type", {"keys": ["x"], "startkey": "a"}), 400,
                         "query_parse_error", "`keys` is incompatible with `key`, `start_key` and `end_key`")

    def test_javascript_reduce(self):
        for db in ("views4", "views1"):
            with self.subTest(db=db):
                self.assertEqual(self.view(db, "js"), {"rows": [{"key": None, "value": len(COLLATION) + 30}]})
                self.assertEqual(self.view(db, "js", "?group=true"), {"rows": [{"key": 1, "value": len(COLLATION) + 30}]})
                # The same answers as the built-in _sum, grouped every way.
                for query in ("", "?group=true", "?group_level=1", "?group=true&descending=true&skip=1&limit=3",
                              qs(startkey=["y"], endkey=["y", {}], group="true")):
                    self.assertEqual(self.view(db, "js_sums", query), self.view(db, "sums", query), query)
                r = self.node.post(f"/{db}/_design/app/_view/js_sums?group=true", {"keys": [["z", 1], ["x", 0]]})
                self.assertEqual(r.json, {"rows": [{"key": ["z", 1], "value": sum(i for i in range(30) if i % 3 == 2 and i % 2)},
                                                   {"key": ["x", 0], "value": sum(i for i in range(0, 30, 6))}]})
                # A reduce that does not reduce: CouchDB's reduce_limit makes the value an error (200).
                grows = self.view(db, "grows")["rows"][0]["value"]
                self.assertTrue(grows["reduce_overflow_error"].startswith("Reduce output must shrink more rapidly"),
                                grows)
                self.assertEqual(len(self.view(db, "grows", "?group=true&limit=2")["rows"][1]["value"]), 1)
        # reduce_limit changed while the node runs (issue 52): the same query gets the values.
        cfg = "/_node/_local/_config/query_server_config/reduce_limit"
        self.assertEqual(self.node.put(cfg, "false").status, 200)
        try:
            grows = self.view("views1", "grows")["rows"][0]["value"]
            self.assertIsInstance(grows, list, grows)
        finally:
            self.node.delete(cfg)
        self.assertIn("reduce_overflow_error", self.view("views1", "grows")["rows"][0]["value"])

    def test_design_info(self):
        n = self.node
        self.assertEqual(n.put("/views-info?q=2").status, 201)
        self.assertEqual(n.put("/views-info/_design/app", {"views": {"v": {"map": "function(d) { emit(d.i, 1); }"}}}).status,
                         201)
        self.assertEqual(n.post("/views-info/_bulk_docs", {"docs": [{"i": i} for i in range(10)]}).status, 201)
        before = n.get("/views-info/_design/app/_info").json
        self.assertEqual(before["name"], "app")
        index = before["view_index"]
        self.assertEqual((index["language"], index["update_seq"], index["updater_running"]), ("javascript", 0, False))
        self.assertEqual(index["updates_pending"]["total"], 11)  # ten documents and the design document
        self.assertEqual(len(index["signature"]), 32)  # as CouchDB's MD5 hex (issue 51 point 6)
        self.assertEqual(len(self.view("views-info", "v")["rows"]), 10)
        index = n.get("/views-info/_design/app/_info").json["view_index"]
        self.assertEqual((index["update_seq"], index["updates_pending"]["total"]), (11, 0))
        self.assertGreater(index["sizes"]["file"], 0)
        self.assertGreater(index["sizes"]["active"], 0)
        # An edit that keeps the views keeps the signature (and the index).
        rev = n.get("/views-info/_design/app").json["_rev"]
        self.assertEqual(n.put("/views-info/_design/app", {"_rev": rev, "views": {"v": {"map": "function(d) { emit(d.i, 1); }"}},
                                                           "filters": {"f": "function() { return true; }"}}).status, 201)
        self.assertEqual(n.get("/views-info/_design/app/_info").json["view_index"]["signature"], index["signature"])
        self.assertError(n.get("/views-info/_design/none/_info"), 404, "not_found", "missing")
        self.assertEqual(n.post("/views-info/_design/app/_info", {}).status, 405)

    def test_update_seq_is_a_changes_token_of_the_indexes(self):
        n = self.node
        self.assertEqual(n.put("/views-seq?q=2").status, 201)
        self.assertEqual(n.put("/views-seq/_design/app", {"views": {"v": {"map": "function(d) { emit(d.i, 1); }",
                                                                          "reduce": "_count"}}}).status, 201)
        self.assertEqual(n.post("/views-seq/_bulk_docs", {"docs": [{"_id": f"d{i}", "i": i} for i in range(6)]}).status, 201)
        r = self.view("views-seq", "v", "?update_seq=true&reduce=false")
        self.assertEqual(list(r), ["total_rows", "offset", "update_seq", "rows"])  # couch_mrview_http's order
        # The token names what the indexes hold: _changes since it has nothing more.
        self.assertEqual(n.get("/views-seq/_changes?since=" + urllib.parse.quote(r["update_seq"])).json["results"], [])
        self.assertEqual(r["update_seq"].split("-")[0], "7")
        reduced = self.view("views-seq", "v", "?update_seq=true")
        self.assertEqual(reduced, {"update_seq": r["update_seq"], "rows": [{"key": None, "value": 6}]})
        n.put("/views-seq/late", {"i": 9})
        stale = self.view("views-seq", "v", "?update_seq=true&update=false&reduce=false")
        self.assertEqual(stale["update_seq"], r["update_seq"])
        self.assertEqual([c["id"] for c in n.get("/views-seq/_changes?since=" + urllib.parse.quote(stale["update_seq"])).json["results"]],
                         ["late"])
        self.assertNotIn("update_seq", self.view("views-seq", "v", "?reduce=false"))

    def test_map_sees_conflicts_and_local_seq(self):
        """Issue 51 point 0: the "find my conflicts" view of CouchDB's docs, and options.local_seq."""
        n = self.node
        self.assertEqual(n.put("/views-conf?q=2").status, 201)
        self.assertEqual(n.post("/views-conf/_bulk_docs", {"new_edits": False, "docs": [
            {"_id": "c", "_rev": "1-aaa", "v": 1}, {"_id": "c", "_rev": "1-bbb", "v": 2},
            {"_id": "plain", "_rev": "1-ccc", "v": 3}]}).status, 201)
        ddoc = {"views": {"conflicts": {"map": "function(doc) { if (doc._conflicts) emit(doc._conflicts, null); }"},
                          "seq": {"map": "function(doc) { emit(doc._id, typeof doc._local_seq); }"}},
                "options": {"local_seq": True}}
        self.assertEqual(n.put("/views-conf/_design/c", ddoc).status, 201)
        rows = n.get("/views-conf/_design/c/_view/conflicts").json["rows"]
        self.assertEqual([(r["id"], r["key"]) for r in rows], [("c", ["1-aaa"])])  # the loser, of the winner bbb
        rows = n.get("/views-conf/_design/c/_view/seq").json["rows"]
        self.assertEqual([r["value"] for r in rows], ["number", "number"])
        # Without options.local_seq, no _local_seq (CouchDB's default).
        self.assertEqual(n.put("/views-conf/_design/plain", {"views": {"seq": ddoc["views"]["seq"]}}).status, 201)
        rows = n.get("/views-conf/_design/plain/_view/seq").json["rows"]
        self.assertEqual([r["value"] for r in rows], ["undefined", "undefined"])

    def test_rows_one_document_emits_under_one_key_come_by_value(self):
        """Issue 51 point 0: couch_mrview_updater sorts a document's rows (lists:sort, Erlang's term
        order of the values: numbers, then null, then strings), not in emit order."""
        n = self.node
        self.assertEqual(n.put("/views-dups").status, 201)
        self.assertEqual(n.put("/views-dups/d", {"x": 1}).status, 201)
        m = "function(doc) { emit('k', 'b'); emit('k', 3); emit('j', 0); emit('k', null); emit('k', 1); emit('k', 'a'); }"
        self.assertEqual(n.put("/views-dups/_design/d", {"views": {"v": {"map": m}}}).status, 201)
        rows = n.get("/views-dups/_design/d/_view/v").json["rows"]
        self.assertEqual([(r["key"], r["value"]) for r in rows],
                         [("j", 0), ("k", 1), ("k", 3), ("k", None), ("k", "a"), ("k", "b")])
        rows = n.get("/views-dups/_design/d/_view/v?descending=true").json["rows"]
        self.assertEqual([r["value"] for r in rows], ["b", "a", None, 3, 1, 0])

    def test_included_documents_carry_their_attachments_inline(self):
        """Issue 51 point 0: include_docs=true&attachments=true inlines, as _all_docs does."""
        n = self.node
        self.assertEqual(n.put("/views-atts?q=2").status, 201)
        rev = n.put("/views-atts/a", {"x": 1}).json["rev"]
        r = n.request("PUT", f"/views-atts/a/f.txt?rev={rev}", raw_body=b"hello", headers={"Content-Type": "text/plain"})
        self.assertEqual(r.status, 201)
        self.assertEqual(n.put("/views-atts/_design/d", {"views": {"v": {"map": "function(d) { emit(d._id, null); }"}}}).status, 201)
        row = n.get("/views-atts/_design/d/_view/v?include_docs=true&attachments=true").json["rows"][0]
        self.assertEqual(row["doc"]["_attachments"]["f.txt"]["data"], "aGVsbG8=")
        stub = n.get("/views-atts/_design/d/_view/v?include_docs=true").json["rows"][0]["doc"]["_attachments"]["f.txt"]
        self.assertTrue(stub["stub"])
        self.assertNotIn("data", stub)

    def test_keys_in_request_order(self):
        ids = lambda j: [row["id"] for row in j["rows"]]  # noqa: E731
        x = [f"n{i:02d}" for i in range(0, 30, 3)]
        z = [f"n{i:02d}" for i in range(2, 30, 3)]
        for db in ("views4", "views1"):
            with self.subTest(db=db):
                r = self.node.post(f"/{db}/_design/app/_view/by_type", {"keys": ["z", "x", "nope", "x"]}).json
                self.assertEqual(ids(r), z + x + x)
                # CouchDB's offset (couch_mrview:map_fold summed by fabric_view_map): per range the rows before
                # the first key with rows there: 20 before "z" (10 "x", 10 "y" on every q here).
                self.assertEqual(r["offset"], 20)
                self.assertEqual(r["total_rows"], 30)
                r = self.view(db, "by_type", "?keys=" + urllib.parse.quote('["z","x"]') + "&descending=true&skip=8&limit=4")
                # Descending: the keys reversed, each key's rows by id from the last.
                self.assertEqual(ids(r), (x[::-1] + z[::-1])[8:12])
                self.assertEqual(r["offset"], 20 + 8)  # descending: keys reversed, the "z" and "y" rows before "x"; skip
                r = self.node.post(f"/{db}/_design/app/_view/counted?group=true", {"keys": [3, 100, 1]}).json
                self.assertEqual(r, {"rows": [{"key": 3, "value": 1}, {"key": 1, "value": 1}]})
                # Without keys: rows before, plus skip, at most total_rows (fabric_view_map's FinalOffset).
                r = self.view(db, "by_type", '?startkey="y"&skip=25')
                self.assertEqual((r["rows"], r["offset"]), ([], 30))
                self.assertEqual(self.view(db, "by_type", '?startkey="y"&skip=5')["offset"], 15)
                # No keys: no rows, and the view's row count all the same (issue 51, as CouchDB).
                r = self.node.post(f"/{db}/_design/app/_view/by_type", {"keys": []}).json
                self.assertEqual(r, {"total_rows": 30, "offset": 0, "rows": []})
                r = self.node.post(f"/{db}/_design/app/_view/counted?group=true", {"keys": []}).json
                self.assertEqual(r, {"rows": []})


class RangeReducesByBlocks(NodeTest):
    def test_sum_stats_and_count_over_ranges_of_many_blocks(self):
        """Enough rows for many counting blocks per copy: a group=false reduce combines the blocks'
        stored partials with the rows at the range's ends, and must equal the rows' reduction."""
        n = self.node
        self.assertEqual(n.put("/vblocks?q=2").status, 201)
        values = {f"d{i:05d}": (i * 7919) % 3001 - 1500 for i in range(4000)}
        docs = [{"_id": k, "v": v} for k, v in values.items()]
        for b in range(0, len(docs), 1000):
            self.assertEqual(n.post("/vblocks/_bulk_docs", {"docs": docs[b:b + 1000]}).status, 201)
        ddoc = {"views": {"s": {"map": "function(d) { emit(d.v, d.v); }", "reduce": "_sum"},
                          "t": {"map": "function(d) { emit(d.v, d.v); }", "reduce": "_stats"},
                          "c": {"map": "function(d) { emit(d.v, null); }", "reduce": "_count"}}}
        self.assertEqual(n.put("/vblocks/_design/app", ddoc).status, 201)

        def expect(lo, hi):
            got = [v for v in values.values() if lo <= v <= hi]
            return got

        def check(lo, hi):
            got = expect(lo, hi)
            q = qs(startkey=lo, endkey=hi)
            want_rows = lambda value: [{"key": None, "value": value}] if got else []  # noqa: E731
            self.assertEqual(n.get(f"/vblocks/_design/app/_view/s{q}").json["rows"], want_rows(sum(got)), (lo, hi))
            self.assertEqual(n.get(f"/vblocks/_design/app/_view/c{q}").json["rows"], want_rows(len(got)), (lo, hi))
            stats = n.get(f"/vblocks/_design/app/_view/t{q}").json["rows"]
            if got:
                self.assertEqual(stats[0]["value"], {"sum": sum(got), "count": len(got), "min": min(got), "max": max(got),
                                                     "sumsqr": sum(v * v for v in got)}, (lo, hi))
            else:
                self.assertEqual(stats, [])

        for lo, hi in ((-1500, 1500), (-1000, 1000), (-3, 3), (7, 7), (1400, 1600), (-2000, -1499), (2000, 3000),
                       (-77, 1234)):
            check(lo, hi)
        # Edits and deletions change the blocks; the next query's reduce sees them.
        for i in range(0, 4000, 13):
            doc_id = f"d{i:05d}"
            rev = n.get(f"/vblocks/{doc_id}").json["_rev"]
            if i % 2:
                self.assertEqual(n.request("DELETE", f"/vblocks/{doc_id}?rev={rev}").status, 200)
                del values[doc_id]
            else:
                values[doc_id] = 5
                self.assertEqual(n.put(f"/vblocks/{doc_id}", {"_rev": rev, "v": 5}).status, 201)
        for lo, hi in ((-1500, 1500), (-300, 700), (5, 5), (4, 6)):
            check(lo, hi)


    def test_grouped_reduces_over_many_blocks(self):
        """group=true and group_level over thousands of rows per group: each copy takes the blocks
        wholly inside a group by their counts or stored partials and reads the rows at the groups'
        edges; every answer must equal the rows' own grouping and reduction, also after edits."""
        n = self.node
        self.assertEqual(n.put("/vgroups?q=2").status, 201)
        docs = {f"d{i:05d}": {"k": [f"a{i % 3}", (i * 31) % 20], "v": (i * 7919) % 1001 - 500} for i in range(6000)}
        for i in range(0, 6000, 97):
            docs[f"d{i:05d}"]["k"] = f"a{i % 3}"  # a bare string among the arrays (its own group)
        body = [{"_id": k, **d} for k, d in docs.items()]
        for b in range(0, len(body), 1500):
            self.assertEqual(n.post("/vgroups/_bulk_docs", {"docs": body[b:b + 1500]}).status, 201)
        ddoc = {"views": {"s": {"map": "function(d) { emit(d.k, d.v); }", "reduce": "_sum"},
                          "t": {"map": "function(d) { emit(d.k, d.v); }", "reduce": "_stats"},
                          "c": {"map": "function(d) { emit(d.k, null); }", "reduce": "_count"},
                          "j": {"map": "function(d) { emit(d.k, d.v); }",
                                "reduce": "function(k, v, re) { return sum(v); }"}}}
        self.assertEqual(n.put("/vgroups/_design/app", ddoc).status, 201)

        def order(key):  # the collation of these keys: strings before arrays, a prefix first
            return (0, key) if isinstance(key, str) else (1, *key)

        def expect(level, lo, hi, descending):
            groups = {}
            for d in docs.values():
                key = d["k"]
                if lo is not None and not (order(lo) <= order(key) <= order(hi)):
                    continue
                g = key if level is None or not isinstance(key, list) else key[:level]
                groups.setdefault(json.dumps(g), []).append(d["v"])
            keys = sorted(groups, key=lambda g: order(json.loads(g)))
            return [(json.loads(g), groups[g]) for g in (reversed(keys) if descending else keys)]

        def check(level, lo=None, hi=None, descending=False, skip=0, limit=None):
            params = {"group": "true"} if level is None else {"group_level": level}
            if lo is not None:
                params.update(startkey=hi if descending else lo, endkey=lo if descending else hi)
            if descending:
                params["descending"] = "true"
            if skip:
                params["skip"] = skip
            if limit is not None:
                params["limit"] = limit
            want = expect(level, lo, hi, descending)[skip:]
            want = want[:limit] if limit is not None else want
            what = (level, lo, hi, descending, skip, limit)
            got = {v: n.get(f"/vgroups/_design/app/_view/{v}{qs(**params)}").json["rows"] for v in "stcj"}
            self.assertEqual([(r["key"], r["value"]) for r in got["s"]], [(k, sum(vs)) for k, vs in want], what)
            self.assertEqual([(r["key"], r["value"]) for r in got["j"]], [(k, sum(vs)) for k, vs in want], what)
            self.assertEqual([(r["key"], r["value"]) for r in got["c"]], [(k, len(vs)) for k, vs in want], what)
            self.assertEqual([(r["key"], r["value"]) for r in got["t"]],
                             [(k, {"sum": sum(vs), "count": len(vs), "min": min(vs), "max": max(vs),
                                   "sumsqr": sum(v * v for v in vs)}) for k, vs in want], what)

        def check_all():
            for level in (None, 1, 2, 3):
                check(level)
                check(level, descending=True)
            check(1, ["a0", 7], ["a2", 3])
            check(None, ["a0", 7], ["a2", 3], descending=True)
            check(2, ["a1", 0], ["a1", 19], skip=3, limit=5)
            check(1, limit=2)
            check(None, skip=10, limit=4, descending=True)

        check_all()
        # Edits and deletions change blocks inside groups and at their edges.
        for i in range(0, 6000, 11):
            doc_id = f"d{i:05d}"
            rev = n.get(f"/vgroups/{doc_id}").json["_rev"]
            if i % 2:
                self.assertEqual(n.request("DELETE", f"/vgroups/{doc_id}?rev={rev}").status, 200)
                del docs[doc_id]
            else:
                docs[doc_id] = {"k": ["a1", 4], "v": 3}
                self.assertEqual(n.put(f"/vgroups/{doc_id}", {"_rev": rev, **docs[doc_id]}).status, 201)
        check_all()


class BuildsInActiveTasks(NodeTest):
    def test_an_update_shows_as_an_indexer_task(self):
        n = self.node
        self.assertEqual(n.put("/vtasks?q=2").status, 201)
        self.assertEqual(n.post("/vtasks/_bulk_docs", {"docs": [{"i": i} for i in range(1200)]}).status, 201)
        # About a millisecond of work per document: the build lasts long enough to be seen.
        slow = "function(d) { var t = Date.now(); while (Date.now() - t < 1) {} emit(d.i, 1); }"
        self.assertEqual(n.put("/vtasks/_design/slow", {"views": {"v": {"map": slow}}}).status, 201)
        answer = {}

        def query():
            req = urllib.request.Request(f"http://127.0.0.1:{n.port}/vtasks/_design/slow/_view/v?limit=1",
                                         headers=n.auth_header())
            with urllib.request.urlopen(req, timeout=120) as r:
                answer["body"] = json.loads(r.read())

        t = threading.Thread(target=query)
        t.start()
        try:
            rows = []
            self.assertTrue(wait_until(lambda: rows.extend(
                r for r in n.get("/_active_tasks").json if r["type"] == "indexer") or rows, 60))
            row = rows[0]
            self.assertEqual(row["design_document"], "_design/slow")
            self.assertRegex(row["database"], r"^shards/[0-9a-f]{8}-[0-9a-f]{8}/vtasks\.")  # as CouchDB's
            self.assertGreater(row["total_changes"], 0)
            self.assertLessEqual(row["changes_done"], row["total_changes"])
            self.assertTrue(0 <= row["progress"] <= 100)
            for field in ("node", "pid", "started_on", "updated_on"):
                self.assertIn(field, row)
        finally:
            t.join(120)
        self.assertEqual(answer["body"]["total_rows"], 1200)
        self.assertEqual([r for r in n.get("/_active_tasks").json if r["type"] == "indexer"], [])


    def test_a_databases_ranges_build_at_once(self):
        # One build job for the database: its ranges' indexes update side by side (as many at once
        # as the node has cores), each its own indexer row, and a second query joins the build.
        n = self.node
        self.assertEqual(n.put("/vpar?q=4").status, 201)
        self.assertEqual(n.post("/vpar/_bulk_docs", {"docs": [{"i": i} for i in range(1600)]}).status, 201)
        slow = "function(d) { var t = Date.now(); while (Date.now() - t < 1) {} emit(d.i, 1); }"
        self.assertEqual(n.put("/vpar/_design/slow", {"views": {"v": {"map": slow, "reduce": "_count"}}}).status, 201)
        answers = []

        def query():
            req = urllib.request.Request(f"http://127.0.0.1:{n.port}/vpar/_design/slow/_view/v",
                                         headers=n.auth_header())
            with urllib.request.urlopen(req, timeout=120) as r:
                answers.append(json.loads(r.read()))

        threads = [threading.Thread(target=query) for _ in range(2)]
        for t in threads:
            t.start()
        try:
            at_once = set()
            self.assertTrue(wait_until(lambda: at_once.update(
                [frozenset(r["database"] for r in n.get("/_active_tasks").json if r["type"] == "indexer")]) or
                max(map(len, at_once)) >= min(2, os.cpu_count()), 60), at_once)
        finally:
            for t in threads:
                t.join(120)
        self.assertEqual(answers, [{"rows": [{"key": None, "value": 1600}]}] * 2)


class BuildsLongerThanARequest(SlowBuildTest):
    """A query waits for its index build as CouchDB's does (up to [fabric] view_permsg_timeout, an
    hour), not request_timeout_ms: the first query of a big view is answered, not a 500."""
    design = {"views": {"v": {"map": "function(d) { var t = Date.now(); while (Date.now() - t < 2) {} emit(d.i, 1); }",
                              "reduce": "_count"}}}

    def test_a_build_longer_than_the_request_timeout_is_waited_for(self):
        n = self.node
        self.slow_db(n, "vlong")
        r = self.get_outlasting_a_request("/vlong/_design/slow/_view/v?reduce=false&limit=2")
        self.assertEqual(r.json["total_rows"], 600)
        self.assertEqual([row["key"] for row in r.json["rows"]], [0, 1])
        more = n.post("/vlong/_bulk_docs", {"docs": [{"i": 600 + i} for i in range(300)]})
        self.assertEqual(more.status, 201)
        self.assertEqual(n.get("/vlong/_design/slow/_view/v").json["rows"], [{"key": None, "value": 900}])

    def test_view_permsg_timeout_bounds_the_wait_and_the_build_goes_on(self):
        self.assertEqual(self.timed_out_then_built("vbound", "/vbound/_design/slow/_view/v")["rows"],
                         [{"key": None, "value": 600}])


class IndexFilesFollowTheirCopies(NodeTest):
    def index_dirs(self, db):
        root = os.path.join(self.node.data_dir, ".shard_views", "shards")
        if not os.path.isdir(root):
            return []
        return [os.path.join(root, r, d) for r in os.listdir(root) for d in os.listdir(os.path.join(root, r))
                if d.startswith(db + ".")]

    def test_deleting_a_database_deletes_its_indexes(self):
        n = self.node
        for db in ("vgone", "vstays"):
            self.assertEqual(n.put(f"/{db}?q=2").status, 201)
            self.assertEqual(n.put(f"/{db}/_design/app", {"views": {"v": {"map": "function(d) { emit(d.i, 1); }"}}}).status,
                             201)
            self.assertEqual(n.post(f"/{db}/_bulk_docs", {"docs": [{"i": i} for i in range(20)]}).status, 201)
            self.assertEqual(len(n.get(f"/{db}/_design/app/_view/v").json["rows"]), 20)
            self.assertEqual(len(self.index_dirs(db)), 2)
        self.assertEqual(n.delete("/vgone").status, 200)
        self.assertEqual(self.index_dirs("vgone"), [])
        self.assertEqual(len(self.index_dirs("vstays")), 2)
        # Made again under the same name: a new database, with nothing of the old one's rows.
        self.assertEqual(n.put("/vgone").status, 201)
        self.assertEqual(n.put("/vgone/_design/app", {"views": {"v": {"map": "function(d) { emit(d.i, 1); }"}}}).status,
                         201)
        self.assertEqual(n.get("/vgone/_design/app/_view/v").json["rows"], [])
        self.assertEqual(len(n.get("/vstays/_design/app/_view/v").json["rows"]), 20)


class ViewsThroughASplit(NodeTest):
    def test_rows_stay_the_same_through_a_split_and_a_kill(self):
        n = self.node
        self.assertEqual(n.put("/vsplit?q=1").status, 201)
        self.assertEqual(n.post("/vsplit/_bulk_docs", {"docs": [{"_id": f"d{i:03d}", "k": i % 7} for i in range(300)]}).status,
                         201)
        ddoc = {"views": {"v": {"map": "function(d) { emit(d.k, d._id); }"},
                          "c": {"map": "function(d) { emit(d.k, 1); }", "reduce": "_count"}}}
        self.assertEqual(n.put("/vsplit/_design/app", ddoc).status, 201)
        before = self.view_rows()
        self.assertEqual(len(before), 300)
        r = n.post("/_reshard/jobs", {"type": "split", "db": "vsplit"})
        self.assertEqual(r.status, 201, r.raw)
        job = r.json[0]["id"]
        # Queries while the job runs answer the same rows, from the parent or from the children.
        while n.get(f"/_reshard/jobs/{job}").json["job_state"] not in ("completed", "failed"):
            self.assertEqual(self.view_rows(), before)
        self.assertEqual(n.get(f"/_reshard/jobs/{job}").json["job_state"], "completed")
        self.assertEqual(self.view_rows(), before)
        self.assertEqual(n.get("/vsplit/_design/app/_view/c?group=true").json["rows"],
                         [{"key": k, "value": len(range(k, 300, 7))} for k in range(7)])
        # The children's indexes answer; the parent's files went with the parent.
        root = os.path.join(n.data_dir, ".shard_views", "shards")
        self.assertTrue(wait_until(lambda: sorted(r for r in os.listdir(root) if any(
            d.startswith("vsplit.") for d in os.listdir(os.path.join(root, r)))) == ["00000000-7fffffff", "80000000-ffffffff"]))
        self.assertEqual(n.put("/vsplit/late", {"k": 0}).status, 201)
        n.kill()
        n.start(port=n.port)
        after = self.view_rows()
        self.assertEqual(len(after), 301)
        self.assertEqual([r for r in after if r["id"] != "late"], before)

    def test_queries_during_a_split_under_writes_see_every_acknowledged_write_once(self):
        n = self.node
        self.assertEqual(n.put("/vsw?q=1").status, 201)
        self.assertEqual(n.post("/vsw/_bulk_docs", {"docs": [{"_id": f"p{i:04d}", "k": i % 5} for i in range(2000)]}).status,
                         201)
        self.assertEqual(n.put("/vsw/_design/app", {"views": {"v": {"map": "function(d) { emit(d.k, null); }"}}}).status, 201)
        acked, stop = [], threading.Event()

        def writer():
            c = http.client.HTTPConnection("127.0.0.1", n.port, timeout=60)
            for i in range(3000):
                if stop.is_set():
                    break
                c.request("PUT", f"/vsw/w{i:05d}", body=json.dumps({"k": i % 5}),
                          headers={**n.auth_header(), "Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
                if r.status in (201, 202):
                    acked.append(f"w{i:05d}")
            c.close()

        t = threading.Thread(target=writer)
        t.start()
        try:
            r = n.post("/_reshard/jobs", {"type": "split", "db": "vsw"})
            self.assertEqual(r.status, 201, r.raw)
            job = r.json[0]["id"]
            while True:
                done = n.get(f"/_reshard/jobs/{job}").json["job_state"] in ("completed", "failed")
                before = set(acked)  # acknowledged before the query started
                rows = n.get("/vsw/_design/app/_view/v").json["rows"]
                ids = [row["id"] for row in rows]
                self.assertEqual(len(ids), len(set(ids)), "a row twice")
                self.assertFalse(before - set(ids), "an acknowledged write is missing")
                if done:
                    break
        finally:
            stop.set()
            t.join(60)
        self.assertEqual(n.get(f"/_reshard/jobs/{job}").json["job_state"], "completed")
        ids = [row["id"] for row in n.get("/vsw/_design/app/_view/v").json["rows"]]
        self.assertEqual(sorted(ids), sorted([f"p{i:04d}" for i in range(2000)] + acked))

    def view_rows(self):
        r = self.node.get("/vsplit/_design/app/_view/v")
        self.assertEqual(r.status, 200, r.raw)
        return r.json["rows"]


class ViewsKilledMidBuild(NodeTest):
    def test_a_build_cut_by_kill_9_resumes_and_answers_right(self):
        n = self.node
        self.assertEqual(n.put("/vmid?q=2").status, 201)
        self.assertEqual(n.post("/vmid/_bulk_docs", {"docs": [{"_id": f"d{i:04d}", "i": i} for i in range(1500)]}).status, 201)
        slow = "function(d) { var t = Date.now(); while (Date.now() - t < 2) {} emit(d.i % 10, d.i); }"
        self.assertEqual(n.put("/vmid/_design/app", {"views": {"v": {"map": slow, "reduce": "_sum"}}}).status, 201)

        def query():
            try:
                req = urllib.request.Request(f"http://127.0.0.1:{n.port}/vmid/_design/app/_view/v?limit=1",
                                             headers=n.auth_header())
                urllib.request.urlopen(req, timeout=60).read()
            except OSError:
                pass  # the node is killed under it

        t = threading.Thread(target=query)
        t.start()
        # Killed once some batches are on disk and the build is not done.
        self.assertTrue(wait_until(lambda: any(r["type"] == "indexer" and r["changes_done"] > 0
                                               for r in n.get("/_active_tasks").json), 60))
        n.kill()
        t.join(60)
        n.start(port=n.port)
        info = n.get("/vmid/_design/app/_info").json["view_index"]
        self.assertGreater(info["update_seq"], 0)  # resumed from the batches it had fsynced
        rows = n.get("/vmid/_design/app/_view/v?reduce=false").json["rows"]
        self.assertEqual(len(rows), 1500)
        self.assertEqual(sorted(r["value"] for r in rows), list(range(1500)))
        self.assertEqual(n.get("/vmid/_design/app/_view/v?group=true").json["rows"],
                         [{"key": k, "value": sum(range(k, 1500, 10))} for k in range(10)])


class ViewCompaction(NodeTest):
    """POST /db/_compact/ddoc replaces each copy's index file with a compacted copy: the rows stay
    the same, the file shrinks to what is in use, queries and writes go on around it, and a kill -9
    between the copy and the swap leaves the index whole."""

    def churned(self, n, db):
        """A view whose file is mostly free pages: 3000 rows written, then 2700 of them deleted."""
        self.assertEqual(n.put(f"/{db}?q=2").status, 201)
        self.assertEqual(n.put(f"/{db}/_design/app", {"views": {"v": {"map": "function(d) { emit(d.i, d.pad); }"}}}).status,
                         201)
        docs = [{"_id": f"d{i:04d}", "i": i, "pad": "x" * 300} for i in range(3000)]
        r = n.post(f"/{db}/_bulk_docs", {"docs": docs})
        self.assertEqual(r.status, 201)
        self.assertEqual(n.get(f"/{db}/_design/app/_view/v?limit=0").json["total_rows"], 3000)
        gone = [{"_id": row["id"], "_rev": row["rev"], "_deleted": True} for row in r.json if int(row["id"][1:]) % 10]
        self.assertEqual(n.post(f"/{db}/_bulk_docs", {"docs": gone}).status, 201)
        rows = n.get(f"/{db}/_design/app/_view/v").json["rows"]
        self.assertEqual([row["key"] for row in rows], list(range(0, 3000, 10)))
        return rows

    def info(self, n, db):
        return n.get(f"/{db}/_design/app/_info").json["view_index"]

    def test_compaction_shrinks_the_file_and_keeps_the_rows(self):
        n = self.node
        rows = self.churned(n, "vcompact")
        before = self.info(n, "vcompact")
        self.assertFalse(before["compact_running"])
        self.assertLess(before["sizes"]["active"] * 2, before["sizes"]["file"])
        # Writes and queries beside the compaction: each write acknowledged is in the next query.
        done, seen, errors = threading.Event(), [], []

        def beside():
            i = 0
            while not done.is_set() and i < 200:
                doc = f"w{i:03d}"
                if n.call("PUT", f"/vcompact/{doc}", {"i": 5000 + i, "pad": "y"})[0] != 201:
                    errors.append(doc)
                status, body = n.call("GET", "/vcompact/_design/app/_view/v?startkey=5000")
                if status != 200 or [r["id"] for r in body["rows"]][-1:] != [doc]:
                    errors.append((doc, status))
                seen.append(doc)
                i += 1

        t = threading.Thread(target=beside)
        t.start()
        try:
            r = n.post("/vcompact/_compact/app", {})
            self.assertEqual((r.status, r.json), (202, {"ok": True}))
            self.assertTrue(wait_until(lambda: not self.info(n, "vcompact")["compact_running"] and
                                       self.info(n, "vcompact")["sizes"]["file"] < before["sizes"]["file"] / 2, 60),
                            self.info(n, "vcompact"))
        finally:
            done.set()
            t.join(60)
        self.assertEqual(errors, [])
        after = self.info(n, "vcompact")
        self.assertLessEqual(after["sizes"]["active"], after["sizes"]["file"])
        self.assertEqual(after["signature"], before["signature"])
        got = n.get("/vcompact/_design/app/_view/v").json["rows"]
        self.assertEqual(got[:len(rows)], rows)
        self.assertEqual([r["id"] for r in got[len(rows):]], seen)

    def test_bad_compaction_requests(self):
        n = self.node
        self.assertEqual(n.put("/vcompact-bad").status, 201)
        self.assertError(n.post("/vcompact-bad/_compact/none", {}), 404, "not_found", "missing")
        self.assertEqual(n.get("/vcompact-bad/_compact/none").status, 405)
        r = n.request("POST", "/vcompact-bad/_compact/app", raw_body="{}")
        self.assertError(r, 415, "bad_content_type")
        # A design document without views, or views never queried: nothing to compact, still 202.
        self.assertEqual(n.put("/vcompact-bad/_design/noviews", {"filters": {}}).status, 201)
        self.assertEqual(n.post("/vcompact-bad/_compact/noviews", {}).status, 202)
        self.assertEqual(n.put("/vcompact-bad/_design/app", {"views": {"v": {"map": "function(d) { emit(1, 1); }"}}}).status,
                         201)
        self.assertEqual(n.post("/vcompact-bad/_compact/app", {}).status, 202)
        self.assertFalse(self.info(n, "vcompact-bad")["compact_running"])

    def test_kill_between_the_copy_and_the_swap_leaves_the_index_whole(self):
        n = Node(env={"SETTEE_FAILPOINT": "view_compaction:copied"}).start()
        self.addCleanup(n.cleanup)
        rows = self.churned(n, "vcut")
        before = self.info(n, "vcut")
        self.assertEqual(n.post("/vcut/_compact/app", {}).status, 202)
        n.proc.wait(timeout=60)
        self.assertEqual(n.proc.returncode, 70)
        n.stop()
        n.env = {}
        n.start(port=n.port)
        after = self.info(n, "vcut")  # answered from the file as it is: no rebuild
        self.assertEqual((after["update_seq"], after["updates_pending"]["total"]), (before["update_seq"], 0))
        self.assertEqual(n.get("/vcut/_design/app/_view/v?update=false").json["rows"], rows)
        leftovers = [f for _, _, files in os.walk(os.path.join(n.data_dir, ".shard_views")) for f in files
                     if f.endswith(".compact")]
        self.assertEqual(leftovers, [])
        self.assertEqual(n.post("/vcut/_compact/app", {}).status, 202)
        self.assertTrue(wait_until(lambda: self.info(n, "vcut")["sizes"]["file"] < before["sizes"]["file"] / 2, 60))
        self.assertEqual(n.get("/vcut/_design/app/_view/v").json["rows"], rows)


class ViewsAfterKill(NodeTest):
    def test_the_index_is_right_after_kill_9(self):
        n = self.node
        self.assertEqual(n.put("/vk?q=2").status, 201)
        self.assertEqual(n.put("/vk/_design/app", {"views": {"v": {"map": "function(d) { emit(d.i, null); }"}}}).status, 201)
        self.assertEqual(n.post("/vk/_bulk_docs", {"docs": [{"_id": f"d{i}", "i": i} for i in range(50)]}).status, 201)
        self.assertEqual(len(n.get("/vk/_design/app/_view/v").json["rows"]), 50)
        self.assertEqual(n.post("/vk/_bulk_docs", {"docs": [{"_id": f"e{i}", "i": 100 + i} for i in range(10)]}).status, 201)
        n.kill()
        n.start(port=n.port)
        rows = n.get("/vk/_design/app/_view/v").json["rows"]
        self.assertEqual([r["key"] for r in rows], list(range(50)) + list(range(100, 110)))


if __name__ == "__main__":
    main()
