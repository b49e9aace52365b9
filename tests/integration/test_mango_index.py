"""Mango JSON indexes (issue 32): POST/GET /db/_index, DELETE /db/_index/ddoc/json/name and
_bulk_delete as CouchDB answers them (design documents with language "query"); _find on an index
answers exactly what a scan of the database answers (the same database without indexes, side by
side) for many selectors, in the index's order, page by page through bookmarks; an index is never
stale (a write's 201, then _find sees it); a new index on a database is built in the background and
answers from a scan meanwhile, also after a kill -9 in the middle of its build; the planner's
choices through _explain."""
import json

from harness import Node, NodeTest, OwnNodesTest, main, wait_until


def people(count, start=0):
    return [{"_id": f"p{i:04d}", "age": (i * 7) % 60, "name": f"n{i % 13}", "city": ["Oslo", "Lima", "oslo", "Kyiv"][i % 4],
             "score": (i * 37) % 1000 / 10, "tags": ["t%d" % (i % 3)], "nested": {"rank": i % 5}} for i in range(start, start + count)]


class Indexes(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        n = cls.node
        for db in ("ix", "plain"):  # the same documents, with indexes and without
            assert n.put(f"/{db}?q=4").status == 201
            assert n.post(f"/{db}/_bulk_docs", {"docs": people(400)}).status == 201
        for body in ({"index": {"fields": ["age"]}, "ddoc": "by-age", "name": "age"},
                     {"index": {"fields": ["city", "age"]}, "ddoc": "by-city", "name": "city-age"},
                     {"index": {"fields": [{"score": "desc"}]}, "ddoc": "by-score", "name": "score"},
                     {"index": {"fields": ["nested.rank"]}, "ddoc": "by-rank", "name": "rank"},
                     {"index": {"fields": ["city"]}, "ddoc": "by-city-only", "name": "city"},
                     {"index": {"fields": ["name"], "partial_filter_selector": {"age": {"$gt": 30}}},
                      "ddoc": "old", "name": "old-names"}):
            r = n.post("/ix/_index", body)
            assert r.status == 200, r
            assert r.json["result"] == "created", r

    def test_generated_names_and_stored_filters_are_couchdbs(self):
        # mango_idx:gen_name: SHA-1 of term_to_binary({Def, usort(Opts)}, [{minor_version, 1}]); the
        # goldens from a real Erlang (tests/unit/replicator_test.cpp tells how).
        self.assertEqual(self.node.put("/names").status, 201)
        plain = self.node.post("/names/_index", {"index": {"fields": ["a"]}}).json
        self.assertEqual(plain, {"result": "created", "id": "_design/7095fd2321a986309496ad2ac9c3498246175757",
                                 "name": "7095fd2321a986309496ad2ac9c3498246175757"})
        named = self.node.post("/names/_index", {"index": {"fields": ["a"]}, "name": "by-a"}).json
        self.assertEqual(named, {"result": "created", "id": "_design/e5d85f2a7d925c05beaad8c0ddae690d9a965976",
                                 "name": "by-a"})  # another name, another design document
        full = self.node.post("/names/_index", {
            "index": {"fields": [{"b": "desc"}, {"c": "desc"}], "partial_filter_selector": {"x": {"$gt": 1}}},
            "ddoc": "mine", "w": 3, "partitioned": False}).json
        self.assertEqual(full["name"], "7ae474c4eb468937894334cbcbd5f6395fbf70ea")
        self.assertEqual(full["id"], "_design/mine")
        # A partial filter is stored normalized (mango_opts:validate_selector).
        self.node.post("/names/_index", {"index": {"fields": ["d"], "partial_filter_selector": {"e": 1, "f": {"g": 2}}},
                                         "ddoc": "pf", "name": "pf"})
        stored = self.node.get("/names/_design/pf").json["views"]["pf"]["map"]["partial_filter_selector"]
        self.assertEqual(stored, {"$and": [{"e": {"$eq": 1}}, {"f.g": {"$eq": 2}}]})

    def find(self, db, body, status=200):
        r = self.node.post(f"/{db}/_find", body)
        self.assertEqual(r.status, status, r.raw)
        return r.json

    def all_pages(self, db, body, page=7):
        docs, bookmark = [], None
        for _ in range(1000):
            b = dict(body, limit=page)
            if bookmark:
                b["bookmark"] = bookmark
            r = self.find(db, b)
            docs += r["docs"]
            bookmark = r["bookmark"]
            if len(r["docs"]) < page:
                return docs
        self.fail("paging did not end")

    def test_index_definitions_are_design_documents_couchdb_tools_see(self):
        d = self.node.get("/ix/_design/by-city").json
        self.assertEqual(d["language"], "query")
        self.assertEqual(d["views"]["city-age"]["map"], {"fields": {"city": "asc", "age": "asc"}, "partial_filter_selector": {}})
        self.assertEqual(d["views"]["city-age"]["reduce"], "_count")
        self.assertEqual(d["views"]["city-age"]["options"], {"def": {"fields": ["city", "age"]}})
        listed = self.node.get("/ix/_index").json
        self.assertEqual(listed["total_rows"], 7)
        self.assertEqual(listed["indexes"][0]["name"], "_all_docs")
        byname = {i["name"]: i for i in listed["indexes"]}
        self.assertEqual(byname["city-age"], {"ddoc": "_design/by-city", "name": "city-age", "type": "json",
                                              "partitioned": False, "def": {"fields": [{"city": "asc"}, {"age": "asc"}]}})
        self.assertEqual(byname["old-names"]["def"], {"fields": [{"name": "asc"}],
                                                      "partial_filter_selector": {"age": {"$gt": 30}}})
        self.assertEqual(byname["score"]["def"], {"fields": [{"score": "desc"}]})
        page = self.node.get("/ix/_index?skip=1&limit=2").json
        self.assertEqual((page["total_rows"], [i["name"] for i in page["indexes"]]), (7, ["age", "city-age"]))
        again = self.node.post("/ix/_index", {"index": {"fields": ["age"]}, "ddoc": "by-age", "name": "age"})
        self.assertEqual(again.json, {"result": "exists", "id": "_design/by-age", "name": "age"})

    def test_generated_names_are_stable(self):
        n = self.node
        self.new_db("ix-gen")
        a = n.post("/ix-gen/_index", {"index": {"fields": ["x"]}}).json
        b = n.post("/ix-gen/_index", {"index": {"fields": ["x"]}}).json
        self.assertEqual(a["result"], "created")
        self.assertEqual(b, dict(a, result="exists"))
        self.assertTrue(a["id"].startswith("_design/"))
        self.assertEqual(len(a["name"]), 40)

    def test_bad_index_requests(self):
        n = self.node
        self.new_db("ix-bad")
        cases = [
            ({}, 400, "missing_required_key", "Missing required key: index"),
            ({"index": 5}, 400, "invalid_index", "JSON indexes must be an object, not: 5"),
            ({"index": {}}, 400, "missing_required_key", "Missing required key: fields"),
            ({"index": {"fields": "a"}}, 400, "invalid_sort_json", None),
            ({"index": {"fields": [{"a": "up"}]}}, 400, "invalid_sort_dir", None),
            ({"index": {"fields": ["a", {"b": "desc"}]}}, 400, "unsupported_mixed_sort", None),
            ({"index": {"fields": ["a"], "partial_filter_selector": 3}}, 400, "invalid_selector_json", None),
            ({"index": {"fields": ["a"], "partial_filter_selector": {"a": {"$nope": 1}}}}, 400, "invalid_operator", None),
            ({"index": {"fields": ["a"], "bogus": 1}}, 400, "invalid_key", "Invalid key bogus for this request."),
            ({"index": {"fields": ["a"]}, "name": 7}, 400, "invalid_index_name", "Invalid index name: 7"),
            ({"index": {"fields": ["a"]}, "type": "text"}, 400, "invalid_index_fields_definition",
             'Text Index field definitions must be of the form\n            {"name": "non-empty fieldname", "type":\n'
             '                "boolean,number, or string"}. Def: [<<"a">>]'),
            ({"index": {"fields": ["a"]}, "type": "geo"}, 400, "invalid_index", "Invalid type for index: geo"),
            ({"index": {"fields": ["a"]}, "other": 1}, 400, "invalid_key", "Invalid key other for this request."),
        ]
        for body, status, error, reason in cases:
            r = n.post("/ix-bad/_index", body)
            self.assertError(r, status, error, reason)
        self.assertError(n.post("/ix-bad/_index", "[1]"), 400, "bad_request")
        self.assertEqual(n.put("/ix-bad/_design/js", {"views": {"v": {"map": "function(d) { emit(1, 1); }"}}}).status, 201)
        r = n.post("/ix-bad/_index", {"index": {"fields": ["a"]}, "ddoc": "js"})
        self.assertError(r, 400, "invalid_ddoc_lang")
        self.assertEqual(n.get("/ix-bad/_index").json["total_rows"], 1)

    def test_delete_and_bulk_delete(self):
        n = self.node
        self.new_db("ix-del")
        n.post("/ix-del/_bulk_docs", {"docs": people(30)})
        self.assertEqual(n.post("/ix-del/_index", {"index": {"fields": ["age"]}, "ddoc": "a", "name": "one"}).status, 200)
        self.assertEqual(n.post("/ix-del/_index", {"index": {"fields": ["name"]}, "ddoc": "a", "name": "two"}).status, 200)
        self.assertEqual(n.post("/ix-del/_index", {"index": {"fields": ["city"]}, "ddoc": "b", "name": "three"}).status, 200)
        self.assertEqual(len(n.get("/ix-del/_design/a").json["views"]), 2)
        self.assertError(n.delete("/ix-del/_index/a/json/nothere"), 404, "not_found")
        self.assertError(n.delete("/ix-del/_index/zz/json/one"), 404, "not_found")
        self.assertEqual(n.delete("/ix-del/_index/_design/a/json/one").json, {"ok": True})
        self.assertEqual(list(n.get("/ix-del/_design/a").json["views"]), ["two"])
        self.assertEqual(n.delete("/ix-del/_index/a/json/two").json, {"ok": True})
        self.assertEqual(n.get("/ix-del/_design/a").status, 404)  # its last index: the design document goes
        r = n.post("/ix-del/_index/_bulk_delete", {"docids": ["_design/b", "nope"]})
        self.assertEqual(r.json, {"success": [{"id": "_design/b", "ok": True}],
                                  "fail": [{"id": "nope", "error": "Index not found"}]})
        self.assertError(n.post("/ix-del/_index/_bulk_delete", {"docids": [None]}), 400, "invalid_bulk_docs")
        self.assertEqual(n.get("/ix-del/_index").json["total_rows"], 1)
        # Its queries fall back to a scan, with CouchDB's warning.
        r = self.find("ix-del", {"selector": {"age": 7}})
        self.assertIn("No matching index found", r["warning"])

    def test_answers_equal_a_scan_for_many_selectors(self):
        cases = [
            {"age": 14},
            {"age": {"$gt": 50}},
            {"age": {"$gte": 10, "$lt": 12}},
            {"age": {"$gt": 70}},
            {"age": {"$gt": 20, "$lt": 10}},
            {"age": {"$lte": 3}, "name": "n4"},
            {"city": "Oslo", "age": {"$gt": 40}},
            {"city": "oslo"},
            {"city": {"$gte": "L"}, "age": 21},
            {"city": "Lima", "age": 35, "tags": {"$elemMatch": {"$eq": "t2"}}},
            {"score": {"$gt": 90.5}},
            {"nested": {"rank": 3}, "age": {"$lt": 5}},
            {"nested.rank": {"$gt": 3}, "name": {"$regex": "^n1"}},
            {"$and": [{"age": {"$gt": 5}}, {"age": {"$lt": 9}}]},
            {"age": {"$exists": True}, "name": "n12"},
            {"name": "n3", "age": {"$gt": 40}},
            {"name": "n3", "age": {"$gt": 10}},
            # $in and $or as unions of ranges of one index
            {"age": {"$in": [3, 14, 14, 59, 61]}},
            {"age": {"$in": []}},
            {"age": {"$in": [2, 30, 40], "$gt": 10}},
            {"city": {"$in": ["Oslo", "Kyiv"]}, "age": {"$gt": 50}},
            {"city": "Lima", "age": {"$in": [5, 19, 33]}},
            {"$or": [{"age": 3}, {"age": {"$gt": 57}}]},
            {"$or": [{"age": {"$lt": 10}}, {"age": {"$gt": 5, "$lt": 15}}]},
            {"$or": [{"city": "Oslo", "age": 1}, {"city": "Kyiv", "age": {"$lt": 3}}], "name": {"$ne": "n1"}},
            {"$or": [{"age": 3}, {"name": "n2"}]},
            {"$or": [{"age": {"$in": [7, 8]}}, {"age": 44}], "city": {"$gt": "A"}},
            # $or across fields: a union of two indexes, each document once
            {"$or": [{"age": 3}, {"city": "Kyiv"}]},
            {"$or": [{"age": {"$lt": 4}}, {"city": "Kyiv", "age": {"$lt": 8}}, {"score": {"$gt": 99}}]},
            {"$or": [{"age": {"$lt": 4}}, {"city": "Kyiv"}], "name": "n5"},
        ]
        for sel in cases:
            with self.subTest(sel=sel):
                got = self.find("ix", {"selector": sel, "limit": 1000})
                want = self.find("plain", {"selector": sel, "limit": 1000})
                self.assertEqual(sorted(d["_id"] for d in got["docs"]), sorted(d["_id"] for d in want["docs"]))
                self.assertEqual(sorted(got["docs"], key=lambda d: d["_id"]), want["docs"])

    def test_index_order_and_sorts(self):
        got = self.find("ix", {"selector": {"age": {"$gte": 50}}, "limit": 1000, "fields": ["_id", "age"]})["docs"]
        self.assertNotIn("warning", self.find("ix", {"selector": {"age": {"$gte": 50}}}))
        self.assertEqual(got, sorted(got, key=lambda d: (d["age"], d["_id"])))
        desc = self.find("ix", {"selector": {"age": {"$gte": 50}}, "sort": [{"age": "desc"}], "limit": 1000,
                                "fields": ["_id", "age"]})["docs"]
        self.assertEqual(desc, list(reversed(got)))
        # city then age: a sort on age alone with city held to one value uses the index.
        oslo = self.find("ix", {"selector": {"city": "Oslo"}, "sort": ["age"], "limit": 1000})["docs"]
        self.assertEqual([d["age"] for d in oslo], sorted(d["age"] for d in oslo))
        self.assertEqual(len(oslo), 100)
        # Strings in ICU's order (views' collation): "oslo" < "Oslo".
        cities = self.find("ix", {"selector": {"city": {"$gt": None}}, "sort": ["city", "age"], "limit": 1000,
                                  "fields": ["city"]})["docs"]
        order = []
        for d in cities:
            if not order or order[-1] != d["city"]:
                order.append(d["city"])
        self.assertEqual(order, ["Kyiv", "Lima", "oslo", "Oslo"])
        # $in and $or read their ranges in key order: sorts on the field hold.
        for sel in ({"age": {"$in": [50, 3, 20]}}, {"$or": [{"age": 40}, {"age": {"$lt": 2}}, {"age": 7}]}):
            for direction in ("asc", "desc"):
                got = self.find("ix", {"selector": sel, "sort": [{"age": direction}], "limit": 1000,
                                       "fields": ["_id", "age"]})["docs"]
                want = sorted(self.find("plain", {"selector": sel, "limit": 1000, "fields": ["_id", "age"]})["docs"],
                              key=lambda d: (d["age"], d["_id"]), reverse=direction == "desc")
                self.assertEqual(got, want, (sel, direction))
        r = self.node.post("/ix/_find", {"selector": {"name": "n1"}, "sort": ["name"]})
        self.assertError(r, 400, "no_usable_index")  # the partial index is for age > 30 only

    def test_bookmarks_page_through_every_match_once_in_order(self):
        for sel, sort in (({"age": {"$gt": 40}}, None), ({"age": {"$gt": 40}}, [{"age": "desc"}]),
                          ({"city": "Kyiv", "age": {"$gte": 0}}, ["city", "age"]),
                          ({"$or": [{"age": 3}, {"age": {"$gt": 50}}]}, [{"age": "desc"}]),
                          ({"age": {"$in": [1, 9, 44, 58]}}, None),
                          ({"$or": [{"age": {"$lt": 9}}, {"city": "Kyiv"}]}, None)):
            body = {"selector": sel, "fields": ["_id", "age", "city"]}
            if sort:
                body["sort"] = sort
            whole = self.find("ix", dict(body, limit=1000))["docs"]
            self.assertEqual(self.all_pages("ix", body), whole)
            self.assertEqual(self.all_pages("ix", body, page=1)[:30], whole[:30])
        r = self.node.post("/ix/_find", {"selector": {"age": 5}, "bookmark": "bm90IGEgYm9va21hcms"})
        self.assertError(r, 400, "invalid_bookmark")
        # A bookmark of another index is not this one's.
        other = self.find("ix", {"selector": {"score": {"$gt": 1}}, "limit": 2})["bookmark"]
        self.assertError(self.node.post("/ix/_find", {"selector": {"age": 5}, "bookmark": other}), 400, "invalid_bookmark")

    def test_skip_and_limit(self):
        whole = self.find("ix", {"selector": {"age": {"$lt": 20}}, "limit": 1000})["docs"]
        part = self.find("ix", {"selector": {"age": {"$lt": 20}}, "skip": 13, "limit": 9})["docs"]
        self.assertEqual(part, whole[13:22])

    def test_execution_stats_count_the_index_rows_read(self):
        r = self.find("ix", {"selector": {"age": 14}, "execution_stats": True, "limit": 1000})
        matches = len(r["docs"])
        self.assertGreater(matches, 0)
        stats = r["execution_stats"]
        self.assertEqual(stats["total_keys_examined"], matches)  # the index holds exactly them
        self.assertEqual(stats["results_returned"], matches)
        scan = self.find("plain", {"selector": {"age": 14}, "execution_stats": True, "limit": 1000})
        self.assertEqual(scan["execution_stats"]["total_docs_examined"], 400)

    def test_explain_shows_the_chosen_index_and_its_keys(self):
        def explain(sel, **kw):
            r = self.node.post("/ix/_explain", dict({"selector": sel}, **kw))
            self.assertEqual(r.status, 200, r)
            return r.json

        e = explain({"age": {"$gt": 5, "$lte": 9}})
        self.assertEqual((e["index"]["name"], e["mrargs"]["start_key"], e["mrargs"]["end_key"]), ("age", [5], [9]))
        # The ranges hold exactly the matches: the copies do not evaluate the selector.
        self.assertTrue(e["settee"]["covered"])
        self.assertFalse(explain({"age": {"$gt": 5}, "name": "n1"})["settee"]["covered"])
        self.assertFalse(explain({"age": {"$gt": 5, "$ne": 7}})["settee"]["covered"])
        self.assertTrue(explain({"city": "Oslo", "age": {"$gt": 5}})["settee"]["covered"])
        self.assertFalse(explain({"city": {"$gt": "Oslo"}, "age": 5})["settee"]["covered"])
        e = explain({"city": "Oslo", "age": {"$gt": 40}})
        self.assertEqual((e["index"]["name"], e["mrargs"]["start_key"], e["mrargs"]["end_key"]),
                         ("city-age", ["Oslo", 40], ["Oslo", "<MAX>"]))
        # Both usable: the one with more leading fields held by the selector wins.
        self.assertEqual(explain({"city": "Oslo", "age": 3})["index"]["name"], "city-age")
        self.assertEqual(explain({"age": 3})["index"]["name"], "age")
        self.assertEqual(explain({"age": {"$gt": 1}}, sort=[{"age": "desc"}])["mrargs"]["direction"], "rev")
        # A partial index when the selector implies its filter, not otherwise.
        self.assertEqual(explain({"name": "n1", "age": {"$gt": 30}})["index"]["name"], "old-names")
        self.assertEqual(explain({"name": "n1"})["index"]["name"], "_all_docs")
        # use_index names one; an unusable one falls back with CouchDB's warning, or fails.
        self.assertEqual(explain({"city": "Oslo", "age": 3}, use_index="by-age")["index"]["name"], "age")
        r = self.find("ix", {"selector": {"name": "n1"}, "use_index": ["by-age", "age"]})
        self.assertIn("_design/by-age, age was not used because it is not a valid index for this query.",
                      r["warning"])
        r = self.node.post("/ix/_find", {"selector": {"name": "n1"}, "use_index": "by-age", "allow_fallback": False})
        self.assertError(r, 400, "invalid_index",
                         "_design/by-age specified by `use_index` could not be found or it is not suitable.")
        # $in and $or: one range per value or branch of the index they use.
        e = explain({"age": {"$in": [9, 1, 4]}})
        self.assertEqual((e["index"]["name"], len(e["settee"]["ranges"]), e["mrargs"]["start_key"], e["mrargs"]["end_key"]),
                         ("age", 4, [1], [["<MAX>"]]))  # the values, and every array (one may hold a value)
        e = explain({"$or": [{"age": {"$gt": 50}}, {"age": 3}]})
        self.assertEqual((e["index"]["name"], len(e["settee"]["ranges"])), ("age", 2))
        e = explain({"$or": [{"age": {"$lt": 10}}, {"age": {"$gt": 5, "$lt": 15}}]})
        self.assertEqual(len(e["settee"]["ranges"]), 1)  # overlapping ranges read once
        e = explain({"city": {"$in": ["Oslo", "Lima"]}, "age": 7})
        self.assertEqual((e["index"]["name"], len(e["settee"]["ranges"])), ("city-age", 3))  # and the arrays
        self.assertEqual(explain({"$or": [{"age": 3}, {"name": "n2"}]})["index"]["name"], "_all_docs")
        e = explain({"$or": [{"age": 3}, {"city": "Kyiv"}]})
        self.assertEqual(e["settee"]["parts"], [{"index": "_design/by-age/age", "ranges": 1},
                                                {"index": "_design/by-city-only/city", "ranges": 1}])
        # Why the other indexes could not serve it, and the rows the chosen one's ranges hold.
        e = explain({"age": 3})
        reasons = {r["index"]: r["reason"] for r in e["settee"]["rejected"]}
        self.assertIn("does not require field score", reasons["_design/by-score/score"])
        self.assertIn("partial_filter_selector", reasons["_design/old/old-names"])
        self.assertEqual(e["settee"]["estimated_rows"], len(self.find("plain", {"selector": {"age": 3}, "limit": 1000})["docs"]))
        e = explain({"city": {"$gt": "A"}, "age": 3}, sort=["age"])
        self.assertEqual(e["index"]["name"], "age")
        self.assertIn("do not start with the sort", {r["index"]: r["reason"] for r in e["settee"]["rejected"]}[
            "_design/by-city/city-age"])
        # CouchDB's analysis beside it (mango_cursor:explain): its keys in its order, every other
        # index with why it was not chosen, the selector's hints, covering for the fields asked.
        e = explain({"age": 3, "name": {"$ne": "x"}}, fields=["_id", "age"])
        self.assertEqual(list(e)[:12], ["dbname", "index", "partitioned", "selector", "opts", "limit", "skip", "fields",
                                        "index_candidates", "selector_hints", "mrargs", "covering"])
        analysis = {c["index"]["name"]: c["analysis"] for c in e["index_candidates"]}
        self.assertNotIn("age", analysis)  # the chosen one
        self.assertEqual(analysis["score"]["reasons"], [{"name": "field_mismatch"}])
        self.assertEqual(analysis["old-names"]["reasons"], [{"name": "is_partial"}])
        self.assertEqual(analysis["_all_docs"], {"usable": True, "reasons": [{"name": "unfavored_type"}], "ranking": 1,
                                                 "covering": None})
        self.assertEqual(e["selector_hints"], [{"type": "json", "indexable_fields": ["age"],
                                                "unindexable_fields": ["name"]}])
        self.assertFalse(e["covering"])  # name is read too
        e = explain({"age": 3}, fields=["_id", "age"])
        self.assertEqual((e["covering"], e["mrargs"]["include_docs"], e["fields"]), (True, False, ["_id", "age"]))
        self.assertEqual((explain({"age": 3})["fields"], explain({"age": 3})["opts"]["fields"]), ([], []))
        # Nothing can match: no range is read.
        e = explain({"age": {"$gt": 9, "$lt": 3}})
        self.assertEqual((e["index"]["name"], e["settee"]["ranges"]), ("age", []))
        self.assertEqual(self.find("ix", {"selector": {"age": {"$gt": 9, "$lt": 3}}})["docs"], [])

    def test_in_finds_arrays_holding_a_value_as_a_scan_does(self):
        n = self.node
        for db in ("ix-arr", "ix-arr-plain"):
            self.new_db(db)
            n.post(f"/{db}/_bulk_docs", {"docs": [{"_id": "s3", "v": 3}, {"_id": "a39", "v": [3, 9]}, {"_id": "a7", "v": [7]},
                                                  {"_id": "x", "v": "x"}, {"_id": "a5", "v": [5]}, {"_id": "o", "v": {"k": 3}}]})
        self.assertEqual(n.post("/ix-arr/_index", {"index": {"fields": ["v"]}}).status, 200)
        for sel in ({"v": {"$in": [3, 7]}}, {"v": {"$in": [[5], "x"]}}, {"v": 3}, {"v": {"$gt": 2}}):
            got = sorted(d["_id"] for d in n.post("/ix-arr/_find", {"selector": sel}).json["docs"])
            want = sorted(d["_id"] for d in n.post("/ix-arr-plain/_find", {"selector": sel}).json["docs"])
            self.assertEqual(got, want, sel)
        self.assertEqual(sorted(d["_id"] for d in n.post("/ix-arr/_find", {"selector": {"v": {"$in": [3, 7]}}}).json["docs"]),
                         ["a39", "a7", "s3"])

    def test_the_index_whose_ranges_hold_fewer_rows_is_chosen(self):
        n = self.node
        self.new_db("ix-cost")
        n.post("/ix-cost/_bulk_docs", {"docs": [{"_id": f"c{i:03d}", "common": i % 2, "rare": i % 100} for i in range(300)]})
        self.assertEqual(n.post("/ix-cost/_index", {"index": {"fields": ["common"]}, "ddoc": "a", "name": "common"}).status, 200)
        self.assertEqual(n.post("/ix-cost/_index", {"index": {"fields": ["rare"]}, "ddoc": "b", "name": "rare"}).status, 200)
        body = {"selector": {"common": 1, "rare": 7}, "execution_stats": True}
        # Field names alone tie (one equality each; CouchDB would take the first by name); the
        # indexes say `rare` = 7 holds 3 rows and `common` = 1 holds 150.
        # (Once both are built: until then an index's rows are not counted.)
        self.assertTrue(wait_until(lambda: all(c["estimated_rows"] is not None for c in
                                               n.post("/ix-cost/_explain", body).json["settee"]["candidates"])))
        e = n.post("/ix-cost/_explain", body).json
        self.assertEqual(e["index"]["name"], "rare")
        self.assertEqual(sorted((c["index"], c["estimated_rows"]) for c in e["settee"]["candidates"]),
                         [("_design/a/common", 150), ("_design/b/rare", 3)])
        r = n.post("/ix-cost/_find", body).json
        self.assertEqual([d["_id"] for d in r["docs"]], ["c007", "c107", "c207"])
        self.assertEqual(r["execution_stats"]["total_keys_examined"], 3)
        # use_index still decides when given.
        self.assertEqual(n.post("/ix-cost/_explain", dict(body, use_index="a")).json["index"]["name"], "common")

    def test_reads_its_writes(self):
        n = self.node
        self.new_db("ix-rw")
        self.assertEqual(n.post("/ix-rw/_index", {"index": {"fields": ["v"]}, "name": "v"}).status, 200)
        for i in range(20):
            r = n.put(f"/ix-rw/doc{i % 4}", dict({"v": i}, **({"_rev": n.get(f"/ix-rw/doc{i % 4}").json["_rev"]}
                                                          if i >= 4 else {})))
            self.assertEqual(r.status, 201, r)
            got = self.find("ix-rw", {"selector": {"v": {"$gte": 0}}, "fields": ["_id", "v"]})["docs"]
            current = {f"doc{k}": max(j for j in range(i + 1) if j % 4 == k) for k in range(min(4, i + 1))}
            self.assertEqual(got, sorted(({"_id": k, "v": v} for k, v in current.items()), key=lambda d: d["v"]))
        rev = n.get("/ix-rw/doc1").json["_rev"]
        self.assertEqual(n.delete(f"/ix-rw/doc1?rev={rev}").status, 200)
        got = self.find("ix-rw", {"selector": {"v": {"$gte": 0}}, "fields": ["_id"]})["docs"]
        self.assertEqual(sorted(d["_id"] for d in got), ["doc0", "doc2", "doc3"])
        # A document without the field is not in the index; once it has it, it is.
        self.assertEqual(n.put("/ix-rw/late", {"w": 1}).status, 201)
        self.assertEqual(len(self.find("ix-rw", {"selector": {"v": {"$gte": 0}}})["docs"]), 3)
        late = n.get("/ix-rw/late").json
        self.assertEqual(n.put("/ix-rw/late", {"_rev": late["_rev"], "v": -1}).status, 201)
        self.assertEqual(self.find("ix-rw", {"selector": {"v": {"$gte": -5}}})["docs"][0]["_id"], "late")


class IndexesThroughASplit(NodeTest):
    def test_a_bookmark_resumes_on_the_children_and_answers_stay_the_same(self):
        n = self.node
        self.assertEqual(n.put("/ixsplit?q=1").status, 201)
        self.assertEqual(n.post("/ixsplit/_bulk_docs", {"docs": people(600)}).status, 201)
        self.assertEqual(n.post("/ixsplit/_index", {"index": {"fields": ["age"]}, "name": "age"}).status, 200)
        body = {"selector": {"age": {"$gte": 10}}, "fields": ["_id", "age"], "limit": 40}
        whole = n.post("/ixsplit/_find", dict(body, limit=1000)).json["docs"]
        self.assertEqual(len(whole), 500)
        first = n.post("/ixsplit/_find", body).json
        self.assertEqual(first["docs"], whole[:40])
        r = n.post("/_reshard/jobs", {"type": "split", "db": "ixsplit"})
        self.assertEqual(r.status, 201, r.raw)
        job = r.json[0]["id"]
        while n.get(f"/_reshard/jobs/{job}").json["job_state"] not in ("completed", "failed"):
            self.assertEqual(n.post("/ixsplit/_find", dict(body, limit=1000)).json["docs"], whole)
        self.assertEqual(n.get(f"/_reshard/jobs/{job}").json["job_state"], "completed")
        self.assertEqual(len(n.get("/ixsplit/_shards").json["shards"]), 2)
        # The parent's bookmark goes on, on both children, exactly where it stopped.
        docs, bookmark = first["docs"], first["bookmark"]
        while True:
            page = n.post("/ixsplit/_find", dict(body, bookmark=bookmark)).json
            docs += page["docs"]
            bookmark = page["bookmark"]
            if len(page["docs"]) < 40:
                break
        self.assertEqual(docs, whole)
        self.assertEqual(n.post("/ixsplit/_find", dict(body, limit=1000)).json["docs"], whole)


class IndexBuilds(OwnNodesTest):
    def test_a_new_index_answers_while_it_builds_and_after_a_kill(self):
        n = Node(env={"SETTEE_FAILPOINT": "mango:build"}).start()
        self.addCleanup(n.cleanup)
        self.assertEqual(n.put("/built?q=2").status, 201)
        for start in range(0, 6000, 2000):
            self.assertEqual(n.post("/built/_bulk_docs", {"docs": people(2000, start)}).status, 201)
        try:  # the node may exit before it answers: its build starts as the index is made
            n.post("/built/_index", {"index": {"fields": ["age"]}, "name": "age"})
        except OSError:
            pass
        n.proc.wait(timeout=60)  # the build's first step is on disk, then the failpoint exits
        self.assertEqual(n.proc.returncode, 70)
        n.stop()
        n.env = {}
        n.start(port=n.port)
        sel = {"selector": {"age": {"$gte": 57}}, "limit": 10000, "execution_stats": True, "fields": ["_id", "age"]}
        want = sorted((d for d in people(6000) if d["age"] >= 57), key=lambda d: (d["age"], d["_id"]))
        want = [{"_id": d["_id"], "age": d["age"]} for d in want]
        first = n.post("/built/_find", sel).json  # part built: answered from a scan, in the index's order
        self.assertEqual(first["docs"], want)
        # Writes go on during the build and are in the index once it is done.
        self.assertEqual(n.post("/built/_bulk_docs", {"docs": people(100, 6000)}).status, 201)
        want2 = sorted((d for d in people(6100) if d["age"] >= 57), key=lambda d: (d["age"], d["_id"]))
        want2 = [{"_id": d["_id"], "age": d["age"]} for d in want2]

        def built():
            r = n.post("/built/_find", sel).json
            return r["execution_stats"]["total_keys_examined"] == len(want2) and r["docs"] == want2
        self.assertTrue(wait_until(built, 60))
        self.assertEqual(n.post("/built/_find", sel).json["docs"], want2)


if __name__ == "__main__":
    main()
