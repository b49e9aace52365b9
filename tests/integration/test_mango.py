"""Mango (issue 32): POST /db/_find, /db/_explain and GET /db/_index on a database without indexes
of its own (JSON indexes: test_mango_index.py), as CouchDB answers them then: every query on the special _all_docs
index (documents in id order across the ranges), CouchDB's warning, bookmarks that page through
every match once, execution_stats, fields, skip/limit, a sort on _id, the selector operators with
strings in ICU's order, and mango's errors for bad bodies."""
import json

from harness import NodeTest, main

WARNING = "No matching index found, create an index to optimize query time."
SCANNED = ("The number of documents examined is high in proportion to the number of results returned. "
           "Consider adding a more specific index to improve this.")


class Find(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        n = cls.node
        assert n.put("/mango?q=4").status == 201
        docs = [{"_id": f"d{i:03d}", "n": i, "type": "xyz"[i % 3], "tags": ["t%d" % (i % 4), "all"],
                 "owner": {"name": "user%d" % (i % 5), "age": 20 + i % 7}} for i in range(120)]
        docs += [{"_id": "s-a", "name": "a"}, {"_id": "s-A", "name": "A"}, {"_id": "s-b", "name": "b"},
                 {"_id": "s-B", "name": "B"}, {"_id": "m1", "meta": {"color": 1, "size": 2}}]
        assert n.post("/mango/_bulk_docs", {"docs": docs}).status == 201
        gone = n.put("/mango/gone", {"n": 5})
        assert n.delete(f"/mango/gone?rev={gone.json['rev']}").status == 200

    def find(self, body, status=200, db="mango"):
        r = self.node.post(f"/{db}/_find", body)
        self.assertEqual(r.status, status, r.raw)
        return r.json

    def ids(self, body, db="mango"):
        return [d["_id"] for d in self.find(body, db=db)["docs"]]

    def test_matches_in_id_order_with_the_warning(self):
        r = self.find({"selector": {"n": {"$gte": 10, "$lt": 15}}})
        self.assertEqual([d["_id"] for d in r["docs"]], [f"d{i:03d}" for i in range(10, 15)])
        self.assertEqual(r["docs"][0]["owner"], {"name": "user0", "age": 23})
        # 125 documents examined for 5 results: mango_cursor's second line (ratio over 10).
        self.assertEqual(r["warning"], WARNING + "\n" + SCANNED)
        self.assertIn("_rev", r["docs"][0])
        few = self.find({"selector": {"n": {"$gte": 0}}})  # 25 examined for 25 returned: one line
        self.assertEqual(few["warning"], WARNING)
        self.assertEqual(set(r), {"docs", "bookmark", "warning"})

    def test_operators(self):
        cases = [
            ({"type": "x", "n": {"$lt": 9}}, ["d000", "d003", "d006"]),
            ({"n": {"$in": [1, 2, 300]}}, ["d001", "d002"]),
            ({"n": {"$gt": 116}}, ["d117", "d118", "d119"]),
            ({"owner.name": "user1", "n": {"$lt": 20}}, ["d001", "d006", "d011", "d016"]),
            ({"tags": {"$all": ["t3", "all"]}, "n": {"$lt": 12}}, ["d003", "d007", "d011"]),
            ({"tags": {"$elemMatch": {"$eq": "t2"}}, "n": {"$lt": 12}}, ["d002", "d006", "d010"]),
            ({"tags": {"$size": 2}, "n": {"$lt": 2}}, ["d000", "d001"]),
            ({"$or": [{"n": 3}, {"n": 4}]}, ["d003", "d004"]),
            ({"$nor": [{"type": "x"}, {"type": "y"}], "n": {"$lt": 9}}, ["d002", "d005", "d008"]),
            ({"n": {"$not": {"$gt": 1}}}, ["d000", "d001"]),
            ({"n": {"$mod": [50, 1]}}, ["d001", "d051", "d101"]),
            ({"_id": {"$regex": "^d00[12]$"}}, ["d001", "d002"]),
            ({"_id": {"$beginsWith": "s-"}}, ["s-A", "s-B", "s-a", "s-b"]),
            ({"meta": {"$keyMapMatch": {"$eq": "size"}}}, ["m1"]),
            ({"name": {"$exists": True}}, ["s-A", "s-B", "s-a", "s-b"]),
            # _id by its bytes (mango_json:cmp_raw): only "s-A" < "s-B"; other fields by ICU (below).
            ({"name": {"$type": "string"}, "_id": {"$lt": "s-B"}}, ["s-A"]),
            ({"_id": {"$gt": "s-B", "$lt": "s-c"}}, ["s-a", "s-b"]),  # ICU: none
            ({"owner": {"$exists": False}, "meta": {"$exists": True}}, ["m1"]),
        ]
        for selector, want in cases:
            with self.subTest(selector=selector):
                self.assertEqual(self.ids({"selector": selector, "limit": 200}), want)

    def test_strings_compare_in_icus_order_as_views_do(self):
        # ICU: a < A < b < B (by code point "B" < "a", and "B" would be out).
        self.assertEqual(sorted(self.ids({"selector": {"name": {"$gt": "a"}}})), ["s-A", "s-B", "s-b"])
        self.assertEqual(sorted(self.ids({"selector": {"name": {"$lte": "A"}}})), ["s-A", "s-a"])

    def test_design_documents_are_not_found_and_selector_errors_are_couchdbs(self):
        n = self.node
        self.assertEqual(n.put("/mango-dd").status, 201)
        self.assertEqual(n.put("/mango-dd/_design/x", {"n": 5}).status, 201)
        self.assertEqual(n.put("/mango-dd/plain", {"n": 5, "$foobar": 1}).status, 201)
        self.assertEqual(self.ids({"selector": {"n": 5}}, db="mango-dd"), ["plain"])  # as mango_cursor_view's all_docs
        self.assertEqual(self.ids({"selector": {"\\$foobar": 1}}, db="mango-dd"), ["plain"])  # unescaped
        r = n.post("/mango-dd/_find", {"selector": {"$gt": 1}})
        self.assertEqual((r.status, r.json), (400, {"error": "invalid_selector",
                                                    "reason": "One or more conditions is missing a field name."}))
        r = n.post("/mango-dd/_find", {"selector": {"a..b": 1}})
        self.assertEqual((r.status, r.json), (400, {"error": "invalid_field_name", "reason": "Invalid field name: a..b"}))

    def test_deleted_documents_are_not_found(self):
        self.assertEqual(self.ids({"selector": {"n": 5}}), ["d005"])

    def test_fields_skip_limit_and_sort_by_id(self):
        r = self.find({"selector": {"type": "y"}, "fields": ["_id", "owner.age", "nope"], "skip": 2, "limit": 3})
        self.assertEqual(r["docs"], [{"_id": "d007", "owner": {"age": 20}}, {"_id": "d010", "owner": {"age": 23}},
                                     {"_id": "d013", "owner": {"age": 26}}])
        self.assertEqual(self.ids({"selector": {"n": {"$lt": 4}}, "sort": [{"_id": "desc"}]}),
                         ["d003", "d002", "d001", "d000"])
        self.assertEqual(self.ids({"selector": {"n": {"$lt": 3}}, "sort": ["_id"]}), ["d000", "d001", "d002"])
        self.assertEqual(self.find({"selector": {"n": 1}, "limit": 0})["docs"], [])

    def test_bookmarks_page_through_every_match_once(self):
        for direction in ("asc", "desc"):
            with self.subTest(direction=direction):
                seen, bookmark, pages = [], None, 0
                while True:
                    body = {"selector": {"type": "z"}, "limit": 7, "sort": [{"_id": direction}]}
                    if bookmark:
                        body["bookmark"] = bookmark
                    r = self.find(body)
                    pages += 1
                    seen += [d["_id"] for d in r["docs"]]
                    if not r["docs"]:
                        self.assertEqual(r["bookmark"], bookmark)
                        break
                    bookmark = r["bookmark"]
                want = [f"d{i:03d}" for i in range(2, 120, 3)]
                self.assertEqual(seen, want if direction == "asc" else want[::-1])
                self.assertEqual(pages, 40 // 7 + 2)
        self.assertEqual(self.find({"selector": {"n": -1}})["bookmark"], "nil")

    def test_execution_stats(self):
        r = self.find({"selector": {"n": {"$lt": 5}}, "execution_stats": True, "limit": 3})
        stats = r["execution_stats"]
        self.assertEqual(stats["results_returned"], 3)
        self.assertEqual(stats["total_docs_examined"], 3)  # d000..d002: the first three in id order
        self.assertEqual(stats["total_quorum_docs_examined"], 0)
        self.assertGreaterEqual(stats["execution_time_ms"], 0)
        whole = self.find({"selector": {"n": {"$lt": 5}}, "execution_stats": True})["execution_stats"]
        self.assertEqual(whole["total_docs_examined"], 125)  # every live document
        self.assertEqual(whole["results_returned"], 5)

    def test_use_index_that_is_not_there_falls_back_with_a_warning(self):
        r = self.find({"selector": {"n": 1}, "use_index": "nope"})
        self.assertEqual(r["warning"], "_design/nope was not used because it does not contain a valid index for "
                                       "this query.\n" + WARNING + "\n" + SCANNED)
        self.assertEqual([d["_id"] for d in r["docs"]], ["d001"])

    def test_errors_as_mango_gives_them(self):
        # Values quoted as mango_error's io_lib:format prints them: ~w writes a binary as its bytes
        # (<<"x">> is <<120>>), ~p (the sort's texts) as text.
        n = self.node
        cases = [
            ({}, "missing_required_key", "Missing required key: selector"),
            ({"selector": [1, 2]}, "invalid_selector_json", "Selector must be a JSON object, not: [1,2]"),
            ({"selector": {}, "limit": -1}, "invalid_non_neg_integer",
             "-1 is not an integer greater than or equal to zero"),
            ({"selector": {}, "skip": "x"}, "invalid_non_neg_integer",
             "<<120>> is not an integer greater than or equal to zero"),
            ({"selector": {}, "r": 0}, "invalid_pos_integer", "0 is not an integer greater than zero"),
            ({"selector": {}, "conflicts": "yes"}, "invalid_boolean", "Invalid boolean value: <<121,101,115>>"),
            ({"selector": {}, "fields": "a"}, "invalid_fields", "Fields must be an array of strings, not: <<97>>"),
            ({"selector": {}, "fields": [1]}, "invalid_field", "Invalid JSON for field spec: 1"),
            ({"selector": {}, "sort": {"a": "asc"}}, "invalid_sort_json",
             "Sort must be an array of sort specs, not: {[{<<\"a\">>,<<\"asc\">>}]}"),
            ({"selector": {}, "sort": [{"a": "up"}]}, "invalid_sort_dir", "Invalid sort direction: <<117,112>>"),
            ({"selector": {}, "sort": [{"_id": "asc"}, {"n": "desc"}]}, "unsupported_mixed_sort",
             "Sorts currently only support a single direction for all fields."),
            ({"selector": {}, "sort": ["n"]}, "no_usable_index",
             "No index exists for this sort, try indexing by the sort fields."),
            ({"selector": {}, "use_index": 5}, "invalid_index_name", "Invalid index name: 5"),
            ({"selector": {}, "bookmark": 5}, "invalid_bookmark", "Invalid bookmark value: 5"),
            ({"selector": {}, "bookmark": "bm9wZQ"}, "invalid_bookmark", "Invalid bookmark value: \"bm9wZQ\""),
            ({"selector": {}, "colour": 1}, "invalid_key", "Invalid key colour for this request."),
        ]
        for body, error, reason in cases:
            with self.subTest(body=body):
                self.assertError(n.post("/mango/_find", body), 400, error, reason)
        self.assertError(n.post("/mango/_find", {"selector": {"n": {"$bogus": 1}}}), 400, "invalid_operator",
                         "Invalid operator: $bogus")
        self.assertError(n.post("/mango/_find", {"selector": {"n": {"$in": 5}}}), 400, "bad_arg",
                         "Bad argument for operator $in: 5")
        self.assertEqual(n.get("/mango/_find").status, 405)
        self.assertError(n.request("POST", "/mango/_find", raw_body='{"selector":{}}'), 415, "bad_content_type")
        self.assertError(n.post("/nodb/_find", {"selector": {}}), 404, "not_found")

    def test_explain_shows_the_all_docs_plan(self):
        r = self.node.post("/mango/_explain", {"selector": {"n": {"$gt": 3}}, "fields": ["n"], "limit": 2})
        self.assertEqual(r.status, 200, r.raw)
        e = r.json
        self.assertEqual(e["dbname"], "mango")
        self.assertEqual(e["index"], {"ddoc": None, "name": "_all_docs", "type": "special",
                                      "def": {"fields": [{"_id": "asc"}]}})
        self.assertEqual(e["selector"], {"n": {"$gt": 3}})
        # Shown normalized, as CouchDB shows it.
        n = self.node.post("/mango/_explain", {"selector": {"owner": {"age": 3}, "$not": {"n": {"$lt": 2}}}}).json
        self.assertEqual(n["selector"], {"$and": [{"owner.age": {"$eq": 3}}, {"n": {"$gte": 2}}]})
        self.assertEqual((e["limit"], e["skip"], e["fields"]), (2, 0, ["n"]))
        self.assertEqual(e["opts"]["bookmark"], "nil")
        self.assertEqual(e["mrargs"]["direction"], "fwd")
        self.assertError(self.node.post("/mango/_explain", {"selector": {}, "sort": ["n"]}), 400, "no_usable_index")
        self.assertEqual(self.node.get("/mango/_explain").status, 405)

    def test_index_lists_the_special_index(self):
        n = self.node
        r = n.get("/mango/_index")
        self.assertEqual((r.status, r.json), (200, {"total_rows": 1, "indexes": [
            {"ddoc": None, "name": "_all_docs", "type": "special", "def": {"fields": [{"_id": "asc"}]}}]}))
        self.assertEqual(n.get("/mango/_index?skip=1").json["indexes"], [])
        self.assertError(n.get("/mango/_index?limit=0"), 400, "invalid_list_index_params")  # CouchDB: 500
        self.assertEqual(n.request("PUT", "/mango/_index", raw_body="{}").status, 405)


if __name__ == "__main__":
    main()
