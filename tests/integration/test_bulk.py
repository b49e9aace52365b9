"""_bulk_docs, _bulk_get, _revs_diff and _all_docs."""
import hashlib

from harness import NodeTest, main


class BulkDocs(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        assert cls.node.put("/bulk?q=3").status == 201

    def test_new_edits_true(self):
        r = self.node.post("/bulk/_bulk_docs", {"docs": [{"_id": "b1", "v": 1}, {"_id": "b2"}, {"v": "auto"}]})
        self.assertEqual(r.status, 201)
        self.assertEqual(len(r.json), 3)
        self.assertTrue(all(row["ok"] for row in r.json))
        self.assertEqual([row["id"] for row in r.json][:2], ["b1", "b2"])
        self.assertEqual(len(r.json[2]["id"]), 32)
        rev_b1 = r.json[0]["rev"]
        r = self.node.post("/bulk/_bulk_docs", {"docs": [{"_id": "b1", "v": 2}, {"_id": "b1", "_rev": rev_b1, "v": 3},
                                                         {"_id": "b2", "_deleted": True, "_rev": "1-nothere"}]})
        self.assertEqual(r.status, 201)
        self.assertEqual(r.json[0], {"id": "b1", "error": "conflict", "reason": "Document update conflict."})
        self.assertTrue(r.json[1]["ok"])
        self.assertEqual(r.json[2]["error"], "conflict")
        self.assertEqual(self.node.get("/bulk/b1").json["v"], 3)

    def test_same_doc_twice_in_one_request(self):
        r = self.node.post("/bulk/_bulk_docs", {"docs": [{"_id": "twice", "v": 1}, {"_id": "twice", "v": 2}]}).json
        self.assertTrue(r[0]["ok"])
        self.assertEqual(r[1]["error"], "conflict")

    def test_new_edits_false(self):
        docs = [{"_id": "r1", "_rev": "2-b", "_revisions": {"start": 2, "ids": ["b", "a"]}, "v": 1},
                {"_id": "r1", "_rev": "2-c", "_revisions": {"start": 2, "ids": ["c", "a"]}, "v": 2},
                {"_id": "r2", "_rev": "1-z", "v": 3}]
        r = self.node.post("/bulk/_bulk_docs", {"docs": docs, "new_edits": False})
        self.assertEqual((r.status, r.json), (201, []))
        doc = self.node.get("/bulk/r1?conflicts=true").json
        self.assertEqual((doc["_rev"], doc["_conflicts"]), ("2-c", ["2-b"]))
        r = self.node.post("/bulk/_bulk_docs", {"docs": docs, "new_edits": False})
        self.assertEqual(r.json, [])  # replaying is harmless
        self.assertEqual(self.node.get("/bulk").json["doc_count"] >= 2, True)

    def test_bodies_written_as_couchdb_writes_them(self):
        # PUT and _bulk_docs write a document's body straight from the parsed text (node/json's
        # split_doc). The stored bytes must be CouchDB's (Erlang's floats, the last of a repeated
        # name in the first one's place, specials dropped or kept), since a revision's hash covers
        # them: each revision is recomputed here from the body CouchDB would store.
        cases = [('{"a":1,"b":"x"}', '{"a":1,"b":"x"}'),
                 ('{"n":1e5,"f":1.0,"g":-0.0,"h":0.1,"e":1E2,"big":18446744073709551615,"neg":-7}',
                  '{"n":1.0e5,"f":1.0,"g":-0.0,"h":0.1,"e":100.0,"big":18446744073709551615,"neg":-7}'),
                 (r'{"s":"caf\u00e9 \ud83d\ude00 \n\t\"q\" \/ \u0001"}', '{"s":"caf\u00e9 \U0001F600 \\n\\t\\"q\\" / \\u0001"}'),
                 ('{"k":1,"k":2,"m":{"x":1,"x":[3]}}', '{"k":2,"m":{"x":[3]}}'),
                 ('{"_replication_state":"done","v":[1,{"w":null}],"_conflicts":["1-a"],"_local_seq":3}',
                  '{"_replication_state":"done","v":[1,{"w":null}]}'),
                 ('{}', '{}'), ('{"d":{"a":{"b":[[[true,false,null]]]}}}', '{"d":{"a":{"b":[[[true,false,null]]]}}}'),
                 ('{"large":123456789012345678901234567890}', '{"large":1.2345678901234568e29}')]
        for i, (text, stored) in enumerate(cases):
            with self.subTest(text=text):
                want = "1-" + hashlib.sha256(b"0\x00\x00" + stored.encode()).hexdigest()[:32]
                json_type = {"Content-Type": "application/json"}
                put = self.node.request("PUT", f"/bulk/put-{i}", raw_body=text, headers=json_type)
                self.assertEqual((put.status, put.json["rev"]), (201, want), put.raw)
                inner = text[1:-1]
                bulk = self.node.request("POST", "/bulk/_bulk_docs", headers=json_type,
                                         raw_body='{"docs":[{"_id":"bulk-%d"%s%s}]}' % (i, "," if inner else "", inner))
                self.assertEqual((bulk.status, bulk.json[0]["rev"]), (201, want), bulk.raw)
                a, b = self.node.get(f"/bulk/put-{i}"), self.node.get(f"/bulk/bulk-{i}")
                self.assertEqual(a.raw.replace("put-", "bulk-"), b.raw)
        # Special members still refused or kept as before, one document each.
        r = self.node.request("POST", "/bulk/_bulk_docs", headers={"Content-Type": "application/json"},
                              raw_body='{"docs":[{"_id":"sp1","_bogus":1},{"_id":"sp2","_attachments":{},"a":1}]}')
        self.assertEqual(r.status, 400, r.raw)
        self.assertEqual(r.json["reason"], "Bad special document member: _bogus")
        r = self.node.post("/bulk/_bulk_docs", {"docs": [{"_id": "sp2", "_attachments": {}, "a": 1}]})
        self.assertEqual(r.status, 201, r.raw)
        # An empty `_attachments` is no attachments, and CouchDB shows none (couch_doc:to_json_obj).
        self.assertEqual(self.node.get("/bulk/sp2").json, {"_id": "sp2", "_rev": r.json[0]["rev"], "a": 1})

    def test_local_docs_in_bulk(self):
        r = self.node.post("/bulk/_bulk_docs", {"docs": [{"_id": "_local/x", "a": 1}, {"_id": "plain"}]}).json
        self.assertEqual(r[0], {"ok": True, "id": "_local/x", "rev": "0-1"})
        self.assertTrue(r[1]["ok"])
        self.assertEqual(self.node.get("/bulk/_local/x").json["a"], 1)

    def test_bad_requests_write_nothing(self):
        before = self.node.get("/bulk").json["update_seq"]
        cases = [
            ({"nodocs": []}, "POST body must include `docs` parameter."),
            ({"docs": {}}, "`docs` parameter must be an array."),
            ({"docs": [], "new_edits": "no"}, "`new_edits` parameter must be a boolean."),
            ({"docs": [{"_id": "ok1"}, 5]}, "Document must be a JSON object"),
            ({"docs": [{"_id": "ok2"}, {"_id": "_bad"}]}, "Only reserved document ids may start with underscore."),
            ({"docs": [{"_id": "ok3"}, {"_id": "x", "_rev": "zz"}]}, "Invalid rev format"),
            ({"docs": [{"_id": "ok4", "_rev": "1-a"}, {"_id": "n"}], "new_edits": False}, None),
        ]
        for body, reason in cases:
            r = self.node.post("/bulk/_bulk_docs", body)
            self.assertEqual(r.status, 400, (body, r))
            if reason:
                self.assertEqual(r.json["reason"], reason)
        self.assertError(self.node.post("/bulk/_bulk_docs", raw_body="[",
                                        headers={"Content-Type": "application/json"}), 400, "bad_request")
        self.assertError(self.node.post("/bulk/_bulk_docs", [1]), 400, "bad_request")
        self.assertError(self.node.get("/bulk/_bulk_docs"), 405, "method_not_allowed", "Only POST allowed")
        self.assertEqual(self.node.get("/bulk").json["update_seq"], before)
        for doc_id in ["ok1", "ok2", "ok3", "ok4"]:
            self.assertEqual(self.node.get(f"/bulk/{doc_id}").status, 404)


class BulkGetAndRevsDiff(NodeTest):
    def test_bulk_get(self):
        self.new_db("bg")
        rev = self.node.put("/bg/a", {"v": 1}).json["rev"]
        rev2 = self.node.put("/bg/a", {"_rev": rev, "v": 2}).json["rev"]
        self.node.put("/bg/gone", {"v": 1})
        grev = self.node.get("/bg/gone").json["_rev"]
        self.node.delete(f"/bg/gone?rev={grev}")
        r = self.node.post("/bg/_bulk_get?revs=true", {"docs": [{"id": "a"}, {"id": "a", "rev": rev},
                                                                 {"id": "nope"}, {"id": "gone"}]})
        self.assertEqual(r.status, 200)
        res = r.json["results"]
        self.assertEqual(res[0]["docs"][0]["ok"]["_rev"], rev2)
        self.assertEqual(res[0]["docs"][0]["ok"]["_revisions"]["start"], 2)
        self.assertEqual(res[1]["docs"][0]["ok"]["v"], 1)  # the older revision, until compaction
        self.assertEqual(res[2], {"id": "nope", "docs": [{"error": {"id": "nope", "rev": "undefined",
                                                                    "error": "not_found", "reason": "missing"}}]})
        # Without a rev, every leaf, a deleted one too (chttpd_db opens revs `all`).
        self.assertTrue(res[3]["docs"][0]["ok"]["_deleted"])
        r = self.node.post("/bg/_bulk_get?latest=true", {"docs": [{"id": "a", "rev": rev}]}).json
        self.assertEqual(r["results"][0]["docs"][0]["ok"]["_rev"], rev2)
        self.assertError(self.node.post("/bg/_bulk_get", {"no": 1}), 400, "bad_request", "Missing JSON list of 'docs'.")
        r = self.node.post("/bg/_bulk_get", {"docs": [5]})  # a bad entry is that entry's error row
        self.assertEqual(r.json["results"][0]["docs"][0]["error"]["error"], "bad_request")
        self.assertError(self.node.get("/bg/_bulk_get"), 405, "method_not_allowed", "Only POST allowed")

    def test_revs_diff(self):
        self.new_db("rd")
        rev = self.node.put("/rd/a", {"v": 1}).json["rev"]
        r = self.node.post("/rd/_revs_diff", {"a": [rev, "2-x", "3-y"], "b": ["1-z"], "c": []})
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json, {"a": {"missing": ["2-x", "3-y"], "possible_ancestors": [rev]},
                                  "b": {"missing": ["1-z"]}})
        # Ids no write could store (empty, longer than LMDB's 511-byte keys) are simply missing.
        r = self.node.post("/rd/_revs_diff", {"": ["1-x"], "k" * 600: ["1-y"]})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json, {"": {"missing": ["1-x"]}, "k" * 600: {"missing": ["1-y"]}})
        self.assertEqual(self.node.post("/rd/_revs_diff", {"a": [rev]}).json, {})
        self.assertError(self.node.post("/rd/_revs_diff", {"a": "1-x"}), 400, "bad_request")
        self.assertError(self.node.post("/rd/_revs_diff", {"a": ["nonsense"]}), 400, "bad_request",
                         "Invalid rev format")


class AllDocs(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        assert cls.node.put("/ad?q=4").status == 201
        docs = [{"_id": f"d{i:02d}", "i": i} for i in range(20)]
        assert cls.node.post("/ad/_bulk_docs", {"docs": docs}).status == 201
        rev = cls.node.get("/ad/d05").json["_rev"]
        cls.node.delete(f"/ad/d05?rev={rev}")

    def ids(self, query, method="GET", body=None):
        r = self.node.request(method, "/ad/_all_docs" + query, body)
        self.assertEqual(r.status, 200, r)
        return [row.get("id", row.get("key")) for row in r.json["rows"]]

    def test_order_and_counts(self):
        r = self.node.get("/ad/_all_docs")
        self.assertEqual(r.json["total_rows"], 19)
        self.assertEqual(r.json["offset"], 0)
        ids = [row["id"] for row in r.json["rows"]]
        self.assertEqual(ids, sorted(f"d{i:02d}" for i in range(20) if i != 5))
        row = r.json["rows"][0]
        self.assertEqual(list(row), ["id", "key", "value"])
        self.assertEqual(row["value"], {"rev": self.node.get("/ad/d00").json["_rev"]})
        self.assertTrue(r.raw.startswith('{"total_rows":19,"offset":0,"rows":[\r\n{"id":"d00"'))
        self.assertTrue(r.raw.endswith("\r\n]}\n"))

    def test_ranges_limit_skip_descending(self):
        self.assertEqual(self.ids('?startkey="d10"&endkey="d12"'), ["d10", "d11", "d12"])
        self.assertEqual(self.ids('?start_key="d10"&end_key="d12"&inclusive_end=false'), ["d10", "d11"])
        self.assertEqual(self.ids('?startkey="d12"&endkey="d10"&descending=true'), ["d12", "d11", "d10"])
        self.assertEqual(self.ids("?limit=3&skip=2"), ["d02", "d03", "d04"])
        self.assertEqual(self.ids("?descending=true&limit=2"), ["d19", "d18"])
        self.assertEqual(self.ids('?key="d07"'), ["d07"])
        self.assertEqual(self.ids('?key="d05"'), [])
        self.assertEqual(self.ids("?limit=0"), [])
        r = self.node.get('/ad/_all_docs?startkey="d10"&limit=1').json
        self.assertEqual(r["offset"], 9)  # d00..d09 without the deleted d05

    def test_deep_pages_have_exact_offsets(self):
        # The usual paging pattern (startkey = the last id seen, limit) over 6,000 documents in 3
        # ranges, 1,000 of them deleted, in both directions. The offset comes from each shard's rank
        # table (storage/doc_rank.hpp), not from scanning every earlier row.
        self.assertEqual(self.node.put("/pages?q=3").status, 201)
        ids = [f"p{(i * 7919) % 6000:05d}" for i in range(6000)]
        for start in range(0, 6000, 1000):
            r = self.node.post("/pages/_bulk_docs", {"docs": [{"_id": i} for i in ids[start:start + 1000]]})
            self.assertEqual(r.status, 201)
        gone = sorted(ids)[::6]
        revs = {row["id"]: row["value"]["rev"] for row in self.node.post("/pages/_all_docs", {"keys": gone}).json["rows"]}
        r = self.node.post("/pages/_bulk_docs", {"docs": [{"_id": i, "_rev": revs[i], "_deleted": True} for i in gone]})
        self.assertEqual(r.status, 201)
        live = sorted(set(ids) - set(gone))
        for descending in (False, True):
            order = live[::-1] if descending else live
            seen, start = [], None
            while True:
                q = f"?limit=701&descending={'true' if descending else 'false'}"
                if start:
                    q += f'&startkey="{start}"'
                page = self.node.get("/pages/_all_docs" + q).json
                self.assertEqual(page["total_rows"], len(live))
                rows = [row["id"] for row in page["rows"]]
                first = order.index(rows[0]) if rows else len(order)
                self.assertEqual(page["offset"], first, (descending, start))
                seen += rows if not seen else rows[1:]
                if len(rows) < 701:
                    break
                start = rows[-1]
            self.assertEqual(seen, order)
        # A start key between ids, one that was deleted, and keys of other JSON types.
        self.assertEqual(self.node.get('/pages/_all_docs?startkey="p00100x"&limit=1').json["offset"],
                         sum(1 for i in live if i < "p00100x"))
        self.assertEqual(self.node.get(f'/pages/_all_docs?startkey="{gone[10]}"&limit=1').json["offset"],
                         sum(1 for i in live if i < gone[10]))
        self.assertEqual(self.node.get(f'/pages/_all_docs?startkey="{gone[10]}"&descending=true&limit=1').json["offset"],
                         sum(1 for i in live if i > gone[10]))
        self.assertEqual(self.node.get("/pages/_all_docs?startkey=5&limit=1").json["offset"], 0)
        self.assertEqual(self.node.get("/pages/_all_docs?startkey=[1]&limit=1").json,
                         {"total_rows": len(live), "offset": len(live), "rows": []})
        self.assertEqual(self.node.get("/pages/_all_docs?startkey=5&descending=true").json["rows"], [])
        self.assertEqual(self.node.get("/pages/_all_docs?startkey={}&descending=true&limit=1").json["offset"], 0)

    def test_keys(self):
        r = self.node.post("/ad/_all_docs", {"keys": ["d03", "zz", "d05", 7]}).json
        self.assertEqual(r["rows"][0]["id"], "d03")
        self.assertEqual(r["rows"][1], {"key": "zz", "error": "not_found"})
        self.assertEqual(r["rows"][2]["value"]["deleted"], True)
        self.assertEqual(r["rows"][3], {"key": 7, "error": "not_found"})
        self.assertEqual(self.ids('?keys=["d01","d02"]'), ["d01", "d02"])
        r = self.node.post("/ad/_all_docs?include_docs=true", {"keys": ["d05"]}).json
        self.assertIsNone(r["rows"][0]["doc"])

    def test_include_docs(self):
        rows = self.node.get('/ad/_all_docs?include_docs=true&startkey="d01"&limit=1').json["rows"]
        self.assertEqual(rows[0]["doc"]["i"], 1)
        self.assertEqual(rows[0]["doc"]["_id"], "d01")

    def test_update_seq(self):
        r = self.node.get("/ad/_all_docs?update_seq=true&limit=0").json
        self.assertEqual(r["update_seq"], self.node.get("/ad").json["update_seq"])

    def test_errors(self):
        self.assertError(self.node.get("/ad/_all_docs?limit=x"), 400, "query_parse_error",
                         'Invalid value for integer: "x"')
        self.assertError(self.node.get("/ad/_all_docs?limit=-1"), 400, "query_parse_error",
                         'Invalid value for positive integer: "-1"')
        self.assertError(self.node.get("/ad/_all_docs?skip=-1"), 400, "query_parse_error",
                         'Invalid value for positive integer: "-1"')
        self.assertError(self.node.get("/ad/_all_docs?descending=1"), 400, "query_parse_error",
                         'Invalid boolean parameter: "1"')
        self.assertError(self.node.get('/ad/_all_docs?keys=["a"]&key="b"'), 400, "query_parse_error",
                         "`keys` is incompatible with `key`, `start_key` and `end_key`")
        self.assertError(self.node.get("/ad/_all_docs?startkey=nojson"), 400, "query_parse_error")
        self.assertError(self.node.post("/ad/_all_docs", {"keys": "nope"}), 400, "bad_request")
        self.assertError(self.node.delete("/ad/_all_docs"), 405, "method_not_allowed", "Only GET,HEAD,POST allowed")


if __name__ == "__main__":
    main()
