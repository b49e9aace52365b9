"""Mango text indexes (issue 54): POST /db/_index with "type": "text" on the node's full-text
engine, as CouchDB's mango_idx_text and mango_cursor_text answer them. $text searches every string
of a document; other conditions become a Lucene query over "<field>:<type>" fields and what it finds
is matched against the selector again; sort, skip, limit and bookmark pages; the same documents
whatever q; _explain shows the Lucene query; GET and DELETE /db/_index list and remove them; bad
definitions and bad queries answer CouchDB's errors."""
import os
import urllib.parse

from harness import NodeTest, main

NAMES = ["Alice", "bob", "Carol", "dave", "Eve", "frank", "Grace", "heidi", "Ivan", "judy"]
WORDS = "the quick brown fox jumps over a lazy dog while seven wizards hum".split()


def person(i):
    doc = {"_id": f"p{i:03d}", "name": NAMES[i % len(NAMES)] + str(i), "age": 18 + (i * 7) % 60,
           "bio": " ".join(WORDS[(i + k * 3) % len(WORDS)] for k in range(1 + i % 5)),
           "tags": [WORDS[i % 13], WORDS[(i + 5) % 13]], "active": i % 3 == 0}
    if i % 10 == 0:
        doc["address"] = {"city": ("Paris", "Lyon")[i % 20 // 10], "zip": 75000 + i}
    return doc


class MangoText(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        n = cls.node
        cls.docs = [person(i) for i in range(150)]
        for db, shards in (("people1", 1), ("people8", 8)):
            assert n.put(f"/{db}?q={shards}").status == 201
            assert n.post(f"/{db}/_bulk_docs", {"docs": cls.docs}).status == 201
            r = n.post(f"/{db}/_index", {"index": {}, "type": "text", "name": "all", "ddoc": "text"})
            assert r.status == 200 and r.json["result"] == "created", r

    def find(self, db, body, expect=200):
        r = self.node.post(f"/{db}/_find", body)
        self.assertEqual(r.status, expect, r)
        return r.json

    def ids(self, db, body):
        return [d["_id"] for d in self.find(db, body)["docs"]]

    def expected(self, keep, limit=25):
        return sorted(d["_id"] for d in self.docs if keep(d))[:limit]

    def test_text_and_fields_find_what_the_selector_says(self):
        for db in ("people1", "people8"):
            with self.subTest(db=db):
                # $text: a phrase over every string (standard analyzer: case does not matter), never
                # across two of them (bio "dog ... lazy" and tag "dog" are not "lazy dog").
                got = self.ids(db, {"selector": {"$text": "Lazy Dog"}, "limit": 200})
                self.assertEqual(sorted(got), self.expected(lambda d: "lazy dog" in d["bio"], 200))
                got = self.ids(db, {"selector": {"$text": "Quick Jumps"}, "limit": 200})
                want = self.expected(lambda d: "quick jumps" in d["bio"], 200)
                self.assertTrue(want)
                self.assertEqual(sorted(got), want)
                got = self.ids(db, {"selector": {"$text": "brown"}, "limit": 200})
                self.assertEqual(sorted(got), self.expected(lambda d: "brown" in d["bio"].split() + d["tags"], 200))
                # Field conditions answered by the index, then matched again.
                sel = {"age": {"$gte": 30, "$lt": 40}, "active": True}
                got = self.ids(db, {"selector": sel, "limit": 200})
                self.assertEqual(sorted(got), self.expected(lambda d: 30 <= d["age"] < 40 and d["active"], 200))
                got = self.ids(db, {"selector": {"tags": {"$elemMatch": {"$eq": "fox"}}}, "limit": 200})
                self.assertEqual(sorted(got), self.expected(lambda d: "fox" in d["tags"], 200))
                got = self.ids(db, {"selector": {"address.city": "Lyon"}, "limit": 200})
                self.assertEqual(sorted(got), self.expected(lambda d: d.get("address", {}).get("city") == "Lyon", 200))
                got = self.ids(db, {"selector": {"address": {"$exists": False}, "age": {"$gt": 70}}, "limit": 200})
                self.assertEqual(sorted(got), self.expected(lambda d: "address" not in d and d["age"] > 70, 200))
                # Keyword fields keep their case: a prefix and a string range as written.
                got = self.ids(db, {"selector": {"name": {"$beginsWith": "Gr"}}, "limit": 200})
                self.assertEqual(sorted(got), self.expected(lambda d: d["name"].startswith("Gr"), 200))
                got = self.ids(db, {"selector": {"name": {"$gt": "frank"}}, "limit": 200})
                self.assertEqual(sorted(got), self.expected(lambda d: d["name"] > "frank", 200))
                got = self.ids(db, {"selector": {"$text": "wizards", "age": {"$in": [25, 32, 39]}}, "limit": 200})
                self.assertEqual(sorted(got), self.expected(
                    lambda d: "wizards" in d["bio"].split() + d["tags"] and d["age"] in (25, 32, 39), 200))

    def test_sort_pages_and_bookmarks_are_the_same_whatever_q(self):
        body = {"selector": {"age": {"$gt": 20}}, "sort": [{"age": "desc"}], "limit": 7,
                "fields": ["_id", "age"]}
        want = sorted((d for d in self.docs if d["age"] > 20), key=lambda d: (-d["age"], d["_id"]))
        pages = {}
        for db in ("people1", "people8"):
            got, bookmark = [], None
            for _ in range(40):
                b = dict(body, **({"bookmark": bookmark} if bookmark else {}))
                r = self.find(db, b)
                if not r["docs"]:
                    break
                self.assertTrue(all(set(d) == {"_id", "age"} for d in r["docs"]), r["docs"][:2])
                got += r["docs"]
                bookmark = r["bookmark"]
            pages[db] = got
            self.assertEqual([d["age"] for d in got], [d["age"] for d in want])
        self.assertEqual(pages["people1"], pages["people8"])
        # skip, and sort by a string field.
        r = self.find("people8", {"selector": {"name": {"$gt": ""}}, "sort": ["name"], "skip": 3, "limit": 4})
        names = sorted(d["name"] for d in self.docs)
        self.assertEqual([d["name"] for d in r["docs"]], names[3:7])

    def test_explain_index_list_and_delete(self):
        r = self.node.post("/people8/_explain", {"selector": {"$text": "fox", "age": {"$lt": 30}}, "sort": ["age"]})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["index"]["type"], "text")
        self.assertEqual(r.json["index"]["name"], "all")
        self.assertEqual(r.json["query"], '(($default:"fox") AND (age_3anumber:{* TO 30}))')
        self.assertEqual(r.json["sort"], ["age_3anumber"])
        listed = self.node.get("/people8/_index").json["indexes"]
        text = [i for i in listed if i["type"] == "text"]
        self.assertEqual(len(text), 1, listed)
        self.assertEqual(text[0]["ddoc"], "_design/text")
        self.assertEqual(text[0]["def"]["default_analyzer"], "keyword")
        self.assertEqual(text[0]["def"]["fields"], [])
        # The same definition again: exists. A second one of some fields, then deleted.
        r = self.node.post("/people8/_index", {"index": {}, "type": "text", "name": "all", "ddoc": "text"})
        self.assertEqual(r.json["result"], "exists")
        r = self.node.post("/people8/_index", {"index": {"fields": [{"name": "name", "type": "string"}]},
                                               "type": "text", "name": "names", "ddoc": "names"})
        self.assertEqual(r.json["result"], "created", r)
        # Two usable text indexes: CouchDB's error, unless use_index names one.
        self.find("people8", {"selector": {"name": "bob1"}}, 400)
        r = self.find("people8", {"selector": {"name": "bob1"}, "use_index": "names"})
        self.assertEqual([d["_id"] for d in r["docs"]], ["p001"])
        self.assertEqual(self.node.delete("/people8/_index/_design/names/json/names").status, 404)
        self.assertEqual(self.node.delete("/people8/_index/_design/names/text/names").status, 200)
        self.assertEqual(self.node.get("/people8/_design/names").status, 404)  # its last index went
        self.assertEqual(self.ids("people8", {"selector": {"name": "bob1"}}), ["p001"])

    def test_never_stale(self):
        self.assertEqual(self.node.put("/people1/late", {"name": "Zed", "bio": "a sudden zebra"}).status, 201)
        self.assertEqual(self.ids("people1", {"selector": {"$text": "zebra"}}), ["late"])
        self.assertEqual(self.node.delete("/people1/late?rev=" + self.node.get("/people1/late").json["_rev"]).status,
                         200)
        self.assertEqual(self.ids("people1", {"selector": {"$text": "zebra"}}), [])

    def test_json_index_still_wins_where_it_serves(self):
        self.assertEqual(self.node.put("/people1?q=1".replace("people1", "mixed")).status, 201)
        self.node.post("/mixed/_bulk_docs", {"docs": self.docs[:30]})
        self.node.post("/mixed/_index", {"index": {"fields": ["age"]}, "name": "by-age"})
        self.node.post("/mixed/_index", {"index": {}, "type": "text", "name": "t"})
        r = self.node.post("/mixed/_explain", {"selector": {"age": {"$gt": 30}}})
        self.assertEqual(r.json["index"]["type"], "json")
        r = self.node.post("/mixed/_explain", {"selector": {"name": "bob1"}})
        self.assertEqual(r.json["index"]["type"], "text")

    def test_partitions_and_search_api(self):
        n = self.node
        self.assertEqual(n.put("/parts?partitioned=true&q=4").status, 201)
        docs = [{"_id": f"p{i % 3}:d{i}", "word": ("red fox", "blue whale", "red panda")[i % 3] + f" {i}"}
                for i in range(30)]
        self.assertEqual(n.post("/parts/_bulk_docs", {"docs": docs}).status, 201)
        self.assertEqual(n.post("/parts/_index", {"index": {}, "type": "text", "name": "t", "ddoc": "t"}).status, 200)
        r = n.post("/parts/_partition/p0/_find", {"selector": {"$text": "red"}, "limit": 100})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(sorted(d["_id"] for d in r.json["docs"]),
                         sorted(d["_id"] for d in docs if d["_id"].startswith("p0:")))
        r = n.post("/parts/_partition/p1/_find", {"selector": {"$text": "red"}})
        self.assertEqual(r.json["docs"], [])
        # The index answers Clouseau's _search too (CouchDB's dreyfus index behind it).
        r = n.get("/people1/_design/text/_search/all?limit=200&q=" + urllib.parse.quote('$default:"seven wizards"'))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(sorted(row["id"] for row in r.json["rows"]),
                         self.expected(lambda d: "seven wizards" in d["bio"], 200))

    def test_cleanup_keeps_text_indexes_and_drops_deleted_ones(self):
        n = self.node
        self.assertEqual(n.put("/tidy?q=2").status, 201)
        self.assertEqual(n.put("/tidy/a", {"w": "alpha"}).status, 201)
        dirs = lambda: sorted(os.path.join(root, f) for root, ds, _ in os.walk(n.data_dir)  # noqa: E731
                              for f in ds if f.endswith(".search") and "tidy" in root)
        # Two definitions (one alike would share the other's files, as views of one signature do).
        for name, index in (("one", {}), ("two", {"index_array_lengths": False})):
            self.assertEqual(n.post("/tidy/_index", {"index": index, "type": "text", "name": name, "ddoc": name}).status,
                             200)
            r = n.post("/tidy/_find", {"selector": {"$text": "alpha"}, "use_index": name})
            self.assertEqual([d["_id"] for d in r.json["docs"]], ["a"])
        self.assertEqual(len(dirs()), 4)  # two indexes, a directory per copy
        self.assertEqual(n.post("/tidy/_view_cleanup", {}).status, 202)
        self.assertEqual(len(dirs()), 4)
        self.assertEqual(n.delete("/tidy/_index/_design/two/text/two").status, 200)  # cleans up after itself
        self.assertEqual(len(dirs()), 2)
        r = n.post("/tidy/_find", {"selector": {"$text": "alpha"}})
        self.assertEqual([d["_id"] for d in r.json["docs"]], ["a"])

    def test_hostile_documents(self):
        # A 5 MB string (one keyword term far past Lucene's term limit, and 5 MB of $default
        # text), 50,000 fields, 100 levels of nesting: each is indexed as far as Lucene takes it,
        # and the node answers the next queries.
        n = self.node
        self.assertEqual(n.put("/hostile").status, 201)
        deep = "bottom"
        for _ in range(100):
            deep = {"d": deep}
        docs = [{"_id": "big", "big": "giant " * 800000 + "needle"},
                {"_id": "wide", "wide": {f"k{i}": i for i in range(50000)}},
                {"_id": "deep", "deep": deep},
                {"_id": "plain", "word": "needle"}]
        for d in docs:
            self.assertEqual(n.put(f"/hostile/{d['_id']}", d).status, 201)
        self.assertEqual(n.post("/hostile/_index", {"index": {}, "type": "text", "name": "t"}).status, 200)
        r = n.post("/hostile/_find", {"selector": {"$text": "needle"}})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(sorted(d["_id"] for d in r.json["docs"]), ["big", "plain"])
        r = n.post("/hostile/_find", {"selector": {"wide.k49999": 49999}, "fields": ["_id"]})
        self.assertEqual(r.json["docs"], [{"_id": "wide"}])
        r = n.post("/hostile/_find", {"selector": {"deep." + ".".join(["d"] * 100): "bottom"}, "fields": ["_id"]})
        self.assertEqual(r.json["docs"], [{"_id": "deep"}])

    def test_bad_definitions_and_queries(self):
        n = self.node
        cases = [
            ({"index": "x", "type": "text"}, "invalid_index"),
            ({"index": {"fields": [{"name": "", "type": "string"}]}, "type": "text"},
             "invalid_index_fields_definition"),
            ({"index": {"fields": [{"name": "a", "type": "date"}]}, "type": "text"},
             "invalid_index_fields_definition"),
            ({"index": {"nope": 1}, "type": "text"}, "invalid_key"),
            ({"index": {"default_analyzer": "klingon"}, "type": "text"}, "bad_request"),
            ({"index": {"selector": {"a": {"$nope": 1}}}, "type": "text"}, "invalid_operator"),
        ]
        for body, error in cases:
            with self.subTest(body=body):
                r = n.post("/people1/_index", body)
                self.assertEqual((r.status, r.json["error"]), (400, error), r)
        self.assertEqual(self.find("people1", {"selector": {"a": {"$text": "x"}}}, 400)["error"], "bad_field")
        self.assertEqual(self.find("people1", {"selector": {"$text": ["x"]}}, 400)["error"], "bad_arg")
        r = self.find("people1", {"selector": {"age": {"$gt": 1}}, "sort": ["nosuch"]}, 400)
        self.assertEqual(r["error"], "text_sort_error")
        r = self.find("people1", {"selector": {"$text": "fox"}, "bookmark": "garbage"}, 400)
        self.assertEqual(r["error"], "invalid_bookmark")
        # $text with no text index: settee refuses (CouchDB would match every document).
        self.assertEqual(n.put("/plain").status, 201)
        self.assertEqual(self.find("plain", {"selector": {"$text": "x"}}, 400)["error"], "no_usable_index")


if __name__ == "__main__":
    main()
