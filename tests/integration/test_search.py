"""Full-text search inside the node (issue 54): Nouveau's API (GET|POST /db/_design/d/_nouveau/idx,
_nouveau_info, _nouveau_cleanup, /_nouveau_analyze) over an index per shard copy. The same query
answers the same hits, scores and bookmark pages whatever q the database has; a write is found
by the next query (never stale), update=false answers from the index as it is; every parameter and
its errors; an index function that throws; an index build in _active_tasks and through kill -9."""
import http.client
import json
import os
import signal
import threading
import urllib.parse

from harness import NodeTest, SlowBuildTest, main, wait_until

WORDS = ("apple banana cherry date elder fig grape hazel iris juniper kiwi lemon mango nectar olive "
         "peach quince rose sage thyme").split()

INDEX = """function(doc) {
  if (doc.title) { index('text', 'default', doc.title); index('text', 'title', doc.title, {store: true}); }
  if (doc.body) index('text', 'body', doc.body);
  if (doc.genre) index('string', 'genre', doc.genre, {store: true});
  if (typeof doc.year == 'number') index('double', 'year', doc.year, {store: true});
  if (doc.boom) throw new Error('boom');
}"""


def book(i):
    title = " ".join(WORDS[(i * k + 3) % len(WORDS)] for k in range(1, 2 + i % 4))
    body = " ".join(WORDS[(i + k * 7) % len(WORDS)] for k in range(i % 9 + 1))
    return {"_id": f"b{i:03d}", "title": title, "body": body, "genre": ("essay", "fable", "poem")[i % 3],
            "year": 1900 + (i * 37) % 120}


def q(**params):
    return "?" + urllib.parse.urlencode({k: v if isinstance(v, str) else json.dumps(v) for k, v in params.items()})


class Nouveau(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        n = cls.node
        docs = [book(i) for i in range(240)]
        for db, shards in (("books1", 1), ("books8", 8)):
            assert n.put(f"/{db}?q={shards}").status == 201
            assert n.post(f"/{db}/_bulk_docs", {"docs": docs}).status == 201
            r = n.put(f"/{db}/_design/lib", {"nouveau": {"books": {"index": INDEX}}})
            assert r.status == 201, r

    def search(self, db, expect=200, **params):
        r = self.node.get(f"/{db}/_design/lib/_nouveau/books" + q(**params))
        self.assertEqual(r.status, expect, r)
        return r.json

    def test_same_answers_whatever_q(self):
        # Term, phrase, boolean, field, wildcard, fuzzy, boosted and numeric queries: the same hits
        # in the same order with the very same scores over 1 range and over 8, page by page.
        queries = ["apple", "body:\"banana iris\"", "fig AND NOT grape", "title:lemon OR body:mango^3",
                   "ki*", "nectr~", "year:[1950 TO 1990]", "genre:fable AND sage", "*:*"]
        for query in queries:
            with self.subTest(query=query):
                one = self.search("books1", q=query, limit=300)
                eight = self.search("books8", q=query, limit=300)
                self.assertGreater(one["total_hits"], 0)
                self.assertEqual(one["total_hits"], eight["total_hits"])
                self.assertEqual([(h["id"], h["order"]) for h in one["hits"]],
                                 [(h["id"], h["order"]) for h in eight["hits"]])
                # Paged by bookmark, 7 at a time: the same pages, and together the whole answer.
                pages = {}
                for db in ("books1", "books8"):
                    seen, bookmark = [], None
                    for _ in range(60):
                        params = {"q": query, "limit": 7}
                        if bookmark:
                            params["bookmark"] = bookmark
                        page = self.search(db, **params)
                        if not page["hits"]:
                            self.assertEqual(page["bookmark"], bookmark)  # the same, at the end
                            break
                        seen += [h["id"] for h in page["hits"]]
                        bookmark = page["bookmark"]
                    pages[db] = seen
                self.assertEqual(pages["books1"], [h["id"] for h in one["hits"]])
                self.assertEqual(pages["books8"], pages["books1"])

    def test_hits_fields_sort_facets_and_docs(self):
        r = self.search("books8", q="genre:poem", sort="-year", limit=5, include_docs="true",
                        counts=["genre"], ranges={"year": [{"label": "old", "max": 1950, "max_inclusive": False},
                                                           {"label": "new", "min": 1950}]})
        poems = [book(i) for i in range(240) if i % 3 == 2]
        self.assertEqual(r["total_hits"], len(poems))
        self.assertEqual(r["total_hits_relation"], "EQUAL_TO")
        by_year = sorted(poems, key=lambda b: (-b["year"], b["_id"]))[:5]
        self.assertEqual([h["id"] for h in r["hits"]], [b["_id"] for b in by_year])
        first = r["hits"][0]
        self.assertEqual(first["order"][0], {"@type": "double", "value": float(by_year[0]["year"])})
        self.assertEqual(first["order"][-1], {"@type": "string", "value": by_year[0]["_id"]})
        self.assertEqual(first["fields"], {"title": by_year[0]["title"], "genre": "poem",
                                           "year": float(by_year[0]["year"])})
        self.assertEqual(first["doc"]["_id"], by_year[0]["_id"])
        self.assertEqual(first["doc"]["body"], by_year[0]["body"])
        self.assertEqual(r["counts"], {"genre": {"poem": len(poems)}})
        self.assertEqual(r["ranges"]["year"]["old"], sum(1 for b in poems if b["year"] < 1950))
        self.assertEqual(r["ranges"]["year"]["old"] + r["ranges"]["year"]["new"], len(poems))
        self.assertIsInstance(r["update_latency"], int)
        # A string field's order, two keys; the same query by POST answers the same.
        two = self.search("books8", q="*:*", sort=["genre", "-year"], limit=300)
        expect = sorted((book(i) for i in range(240)), key=lambda b: (b["genre"], -b["year"], b["_id"]))
        self.assertEqual([h["id"] for h in two["hits"]], [b["_id"] for b in expect])
        posted = self.node.post("/books8/_design/lib/_nouveau/books",
                                {"q": "*:*", "sort": ["genre", "-year"], "limit": 300})
        self.assertEqual(posted.status, 200, posted)
        self.assertEqual(posted.json["hits"], two["hits"])
        # Facets: the most frequent top_n values.
        top = self.search("books8", q="*:*", counts=["genre"], top_n=2, limit=1)
        self.assertEqual(top["counts"], {"genre": {"essay": 80, "fable": 80}})

    def test_never_stale_and_update_false(self):
        n = self.node
        db = self.new_db("fresh", q=4)
        self.assertEqual(n.put(f"/{db}/_design/lib", {"nouveau": {"books": {"index": INDEX}}}).status, 201)
        # Nothing built yet: update=false answers from the empty index at once.
        self.assertEqual(n.post(f"/{db}/_bulk_docs", {"docs": [book(i) for i in range(20)]}).status, 201)
        self.assertEqual(self.search(db, q="*:*", update="false")["total_hits"], 0)
        self.assertEqual(self.search(db, q="*:*")["total_hits"], 20)
        # Each write is found by the very next query; an edit replaces, a delete removes.
        for i in range(5):
            r = n.put(f"/{db}/new{i}", {"title": f"zebra{i} unique"})
            self.assertEqual(r.status, 201, r)
            self.assertEqual([h["id"] for h in self.search(db, q=f"zebra{i}")["hits"]], [f"new{i}"])
        rev = n.get(f"/{db}/new0").json["_rev"]
        self.assertEqual(n.put(f"/{db}/new0", {"_rev": rev, "title": "okapi"}).status, 201)
        self.assertEqual(self.search(db, q="zebra0")["total_hits"], 0)
        self.assertEqual(self.search(db, q="okapi")["total_hits"], 1)
        rev = n.get(f"/{db}/new1").json["_rev"]
        self.assertEqual(n.delete(f"/{db}/new1?rev={rev}").status, 200)
        self.assertEqual(self.search(db, q="zebra1")["total_hits"], 0)
        # update=false after more writes: what was indexed, not the new ones.
        self.assertEqual(n.put(f"/{db}/late", {"title": "walrus"}).status, 201)
        self.assertEqual(self.search(db, q="walrus", update="false")["total_hits"], 0)
        self.assertEqual(self.search(db, q="walrus")["total_hits"], 1)
        info = n.get(f"/{db}/_design/lib/_nouveau_info/books")
        self.assertEqual(info.status, 200, info)
        self.assertEqual(info.json["name"], "_design/lib/books")
        idx = info.json["search_index"]
        self.assertEqual(idx["num_docs"], 20 + 4 + 1)
        self.assertEqual(set(idx), {"update_seq", "purge_seq", "num_docs", "disk_size", "signature"})
        self.assertGreater(idx["disk_size"], 0)

    def test_purged_and_deleted_databases(self):
        n = self.node
        db = self.new_db("purged", q=2)
        self.assertEqual(n.put(f"/{db}/_design/lib", {"nouveau": {"books": {"index": INDEX}}}).status, 201)
        self.assertEqual(n.post(f"/{db}/_bulk_docs", {"docs": [book(i) for i in range(30)]}).status, 201)
        self.assertEqual(self.search(db, q="*:*")["total_hits"], 30)
        rev = n.get(f"/{db}/b007").json["_rev"]
        r = n.post(f"/{db}/_purge", {"b007": [rev]})
        self.assertEqual(r.status, 201, r)
        got = self.search(db, q="*:*", limit=100)
        self.assertEqual(got["total_hits"], 29)
        self.assertNotIn("b007", [h["id"] for h in got["hits"]])
        self.assertEqual(n.get(f"/{db}/_design/lib/_nouveau_info/books").json["search_index"]["purge_seq"], 1)
        # A deleted database's indexes go with its copies.
        dirs = lambda: [d for root, ds, _ in os.walk(n.data_dir) for d in ds if d.endswith(".search")
                        and f"/{db}." in root + "/"]
        self.assertEqual(len(dirs()), 2)
        self.assertEqual(n.delete(f"/{db}").status, 200)
        self.assertTrue(wait_until(lambda: not dirs(), 10), dirs())

    def test_index_function_errors_index_nothing_for_that_document(self):
        n = self.node
        db = self.new_db("throws", q=2)
        fn = "function(doc) { if (doc.bad) index('text', 'x', 12); if (doc.boom) throw new Error('boom'); " \
             "index('text', 'default', doc.t); }"
        self.assertEqual(n.put(f"/{db}/_design/lib", {"nouveau": {"books": {"index": fn}}}).status, 201)
        docs = [{"_id": "ok1", "t": "alpha"}, {"_id": "bad", "t": "alpha", "bad": True},
                {"_id": "boom", "t": "alpha", "boom": True}, {"_id": "ok2", "t": "alpha beta"}]
        self.assertEqual(n.post(f"/{db}/_bulk_docs", {"docs": docs}).status, 201)
        r = self.search(db, q="alpha")
        self.assertEqual(sorted(h["id"] for h in r["hits"]), ["ok1", "ok2"])

    def test_bad_requests(self):
        n = self.node
        base = "/books8/_design/lib/_nouveau/books"
        cases = [
            (base, 400, "query_parse_error", "q parameter is mandatory"),
            (base + "?q=x&limit=abc", 400, "query_parse_error", "limit parameter must be an integer"),
            (base + "?q=x&limit=0", 400, "query_parse_error", "limit parameter must be greater than zero"),
            (base + "?q=x&update=maybe", 400, "query_parse_error", None),
            (base + "?q=x&bookmark=notabookmark", 400, "bad_request", "Invalid bookmark"),
            (base + "?q=x&sort=%22title%22", 400, "bad_request", "can't sort on field title"),
            (base + "?q=x&sort=%22a%20b%22", 400, "bad_request", "a b is not a valid sort parameter"),
            (base + "?q=x&top_n=5000", 400, "bad_request", "topN must be less than or equal to 1000"),
            (base + "?q=" + urllib.parse.quote("title:(unclosed"), 400, "bad_request", None),
            (base + "?q=" + urllib.parse.quote("year:[abc TO 3]"), 400, "bad_request", None),
            ("/books8/_design/lib/_nouveau/nothere?q=x", 404, "not_found", "nothere not found."),
            ("/books8/_design/none/_nouveau/books?q=x", 404, "not_found", "missing"),
            ("/nodb/_design/lib/_nouveau/books?q=x", 404, "not_found", None),
        ]
        for path, status, error, reason in cases:
            with self.subTest(path=path):
                self.assertError(n.get(path), status, error, reason)
        self.assertError(n.request("PUT", base + "?q=x"), 405, "method_not_allowed")
        r = n.request("POST", base, raw_body=b'{"q":"x"}', headers={"Content-Type": "text/plain"})
        self.assertError(r, 415, "bad_content_type")
        self.assertError(n.post(base, {"q": 12}), 400, "query_parse_error", "Invalid value for query: 12")
        self.assertEqual(n.put("/books8/_design/broken", {"nouveau": {"b": {"nofunction": 1}}}).status, 201)
        self.assertError(n.get("/books8/_design/broken/_nouveau/b?q=x"), 400, "invalid_design_doc",
                         "index `b` must have parameter `index`")
        # Still answering after all of them.
        self.assertGreater(self.search("books8", q="apple")["total_hits"], 0)

    def test_analyze_and_cleanup(self):
        n = self.node
        r = n.post("/_nouveau_analyze", {"analyzer": "english", "text": "The running dogs"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json, {"tokens": ["run", "dog"]})
        self.assertEqual(n.post("/_nouveau_analyze", {"analyzer": "keyword", "text": "A b"}).json, {"tokens": ["A b"]})
        self.assertError(n.post("/_nouveau_analyze", {"analyzer": "klingon", "text": "x"}), 400, "bad_request",
                         "klingon not a valid analyzer")
        self.assertError(n.post("/_nouveau_analyze", {"analyzer": "standard"}), 400, "bad_request",
                         "'text' and 'analyzer' fields must be non-empty strings")
        self.assertError(n.get("/_nouveau_analyze"), 405, "method_not_allowed")
        # A design document's index changed: the old one's directories go with _nouveau_cleanup.
        db = self.new_db("cleaned", q=2)
        self.assertEqual(n.put(f"/{db}/d1", {"title": "alpha"}).status, 201)
        r = n.put(f"/{db}/_design/lib", {"nouveau": {"books": {"index": INDEX}}})
        self.assertEqual(self.search(db, q="alpha")["total_hits"], 1)
        dirs = lambda: sorted(f for root, ds, _ in os.walk(n.data_dir) for f in ds if f.endswith(".search")
                              and db in root)
        old = dirs()
        self.assertEqual(len(old), 2)  # one per copy
        changed = {"_rev": r.json["rev"], "nouveau": {"books": {"index": INDEX, "default_analyzer": "english"}}}
        self.assertEqual(n.put(f"/{db}/_design/lib", changed).status, 201)
        self.assertEqual(self.search(db, q="alpha")["total_hits"], 1)
        self.assertEqual(len(dirs()), 4)
        self.assertEqual(n.post(f"/{db}/_nouveau_cleanup", {}).status, 202)
        self.assertEqual(len(dirs()), 2)
        self.assertFalse(set(dirs()) & set(old))
        self.assertEqual(self.search(db, q="alpha")["total_hits"], 1)


CLOUSEAU = """function(doc) {
  if (doc.name) { index('default', doc.name); index('name', doc.name, {store: true}); }
  if (doc.cat) index('cat', doc.cat, {index: 'not_analyzed', store: true, facet: true});
  if (typeof doc.price == 'number') index('price', doc.price, {store: true, facet: true});
  if (doc.sale) index('sale', true, {store: true});
}"""


def item(i):
    return {"_id": f"i{i:03d}", "name": f"red {WORDS[i % 20]} shoe model {i} for walking",
            "cat": ("boots", "shoes", "socks")[i % 3], "price": (i * 7) % 100, "sale": i % 4 == 0}


class Clouseau(NodeTest):
    """Cloudant's _search API (dreyfus_httpd) on the same engine."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        n = cls.node
        for db, shards in (("shop1", 1), ("shop8", 8)):
            assert n.put(f"/{db}?q={shards}").status == 201
            assert n.post(f"/{db}/_bulk_docs", {"docs": [item(i) for i in range(90)]}).status == 201
            assert n.put(f"/{db}/_design/s", {"indexes": {"items": {"index": CLOUSEAU}}}).status == 201

    def search(self, db, expect=200, **params):
        r = self.node.get(f"/{db}/_design/s/_search/items" + q(**params))
        self.assertEqual(r.status, expect, r)
        return r.json

    def test_rows_bookmarks_and_the_same_answers_whatever_q(self):
        for query in ("shoe", "name:apple OR name:fig^2", "price:[10 TO 40]", "cat:boots AND walking", "mod*"):
            with self.subTest(query=query):
                one = self.search("shop1", q=query, limit=200)
                eight = self.search("shop8", q=query, limit=200)
                self.assertEqual(set(one), {"total_rows", "bookmark", "rows"})
                self.assertGreater(one["total_rows"], 0)
                self.assertEqual(one["total_rows"], eight["total_rows"])
                self.assertEqual(one["rows"], eight["rows"])
                seen, bookmark = [], None
                for _ in range(40):
                    params = {"q": query, "limit": 11}
                    if bookmark:
                        params["bookmark"] = bookmark
                    page = self.search("shop8", **params)
                    if not page["rows"]:
                        break
                    seen += [r["id"] for r in page["rows"]]
                    bookmark = page["bookmark"]
                self.assertEqual(seen, [r["id"] for r in one["rows"]])
        row = self.search("shop8", query="name:apple", limit=1)["rows"][0]
        self.assertEqual(set(row), {"id", "order", "fields"})
        self.assertEqual(row["fields"], {"name": item(int(row["id"][1:]))["name"], "cat": item(int(row["id"][1:]))["cat"],
                                         "price": float(item(int(row["id"][1:]))["price"]),
                                         "sale": "true" if item(int(row["id"][1:]))["sale"] else "false"})

    def test_sort_facets_drilldown_highlights_fields_docs(self):
        r = self.search("shop8", q="shoe", sort="-price<number>", limit=5, include_docs="true",
                        include_fields=["price"], counts=["cat"],
                        ranges={"price": {"cheap": "[0 TO 50}", "dear": "[50 TO Infinity]"}})
        want = sorted((item(i) for i in range(90)), key=lambda d: (-d["price"], d["_id"]))[:5]
        self.assertEqual([x["id"] for x in r["rows"]], [d["_id"] for d in want])
        self.assertEqual(r["rows"][0]["fields"], {"price": float(want[0]["price"])})
        self.assertEqual(r["rows"][0]["doc"]["name"], want[0]["name"])
        self.assertEqual(r["counts"], {"cat": {"boots": 30, "shoes": 30, "socks": 30}})
        cheap = sum(1 for i in range(90) if item(i)["price"] < 50)
        self.assertEqual(r["ranges"], {"price": {"cheap": cheap, "dear": 90 - cheap}})
        # drilldown keeps one value of a facet (or any of several).
        self.assertEqual(self.search("shop8", q="shoe", drilldown=["cat", "socks"])["total_rows"], 30)
        self.assertEqual(self.search("shop8", q="shoe", drilldown=["cat", "socks", "boots"])["total_rows"], 60)
        both = self.node.get("/shop8/_design/s/_search/items?q=shoe&drilldown=%5B%22cat%22%2C%22socks%22%5D"
                             "&drilldown=%5B%22sale%22%2C%22true%22%5D")
        self.assertEqual(both.json["total_rows"], sum(1 for i in range(90) if i % 3 == 2 and i % 4 == 0))
        # Highlights of a stored field, with the tags asked for.
        h = self.search("shop8", q="apple", highlight_fields=["name"], highlight_pre_tag=json.dumps("<b>"),
                        highlight_post_tag=json.dumps("</b>"), limit=1)
        self.assertIn("<b>apple</b>", h["rows"][0]["highlights"]["name"][0])
        # POST answers as GET.
        posted = self.node.post("/shop8/_design/s/_search/items", {"query": "shoe", "sort": "-price<number>", "limit": 5,
                                                                 "include_fields": ["price"]})
        self.assertEqual([x["id"] for x in posted.json["rows"]], [d["_id"] for d in want])

    def test_grouped(self):
        r = self.search("shop8", q="shoe", group_field="cat", group_limit=2, sort="-price<number>")
        self.assertEqual(r["total_rows"], 90)
        self.assertEqual([g["by"] for g in r["groups"]], ["boots", "shoes", "socks"])  # equal scores: by value
        for g in r["groups"]:
            members = sorted((item(i) for i in range(90) if item(i)["cat"] == g["by"]),
                             key=lambda d: (-d["price"], d["_id"]))
            self.assertEqual(g["total_rows"], 30)
            self.assertEqual([x["id"] for x in g["rows"]], [d["_id"] for d in members[:2]])
        old = self.search("shop8", q="shoe", group_by="cat", limit=1)
        self.assertEqual(set(old), {"total_hits", "total_grouped_hits", "groups"})
        self.assertEqual(set(old["groups"][0]), {"by", "total_hits", "hits"})
        self.assertEqual(len(old["groups"]), 1)

    def test_info_analyze_and_errors(self):
        n = self.node
        info = n.get("/shop8/_design/s/_search_info/items")
        self.assertEqual(info.status, 200, info)
        self.assertEqual(info.json["name"], "_design/s/items")
        self.assertEqual(info.json["search_index"]["doc_count"], 90)
        self.assertEqual(n.get("/shop8/_design/s/_search_disk_size/items").json["search_index"],
                         {"disk_size": info.json["search_index"]["disk_size"]})
        self.assertEqual(n.get("/_search_analyze?analyzer=standard&text=The%20Quick%20fox").json,
                         {"tokens": ["quick", "fox"]})  # Clouseau's standard drops English stop words
        self.assertEqual(n.post("/_search_analyze", {"analyzer": {"name": "keyword"}, "text": "A b"}).json,
                         {"tokens": ["A b"]})
        self.assertError(n.get("/_search_analyze?text=x"), 400, "bad_request", "analyzer parameter is mandatory")
        self.assertError(n.get("/_search_analyze?analyzer=standard"), 400, "bad_request", "text parameter is mandatory")
        base = "/shop8/_design/s/_search/items"
        for path, status, error, reason in [
            (base, 400, "query_parse_error", "Query must include a 'q' or 'query' argument"),
            (base + "?q=x&limit=201", 400, "query_parse_error", "Value for limit is too large, must not exceed 200"),
            (base + "?q=x&limit=-1", 400, "query_parse_error", "limit must be greater than or equal to zero"),
            (base + "?q=x&stale=no", 400, "query_parse_error", "stale only available as stale=ok"),
            (base + "?q=x&include_docs=yes", 400, "query_parse_error", 'Invalid value for include_docs: "yes"'),
            (base + "?q=x&highlight_number=0", 400, "query_parse_error", "highlight_number must be greater than zero"),
            (base + "?q=x&group_field=cat&group_limit=500", 400, "query_parse_error",
             "Value for group_limit is too large, must not exceed 200"),
            (base + "?q=x&counts=%5B1", 400, "bad_request", "invalid UTF-8 JSON"),
            (base + "?q=" + urllib.parse.quote("name:(x"), 400, "bad_request", None),
            ("/shop8/_design/s/_search/none?q=x", 404, "not_found", "none not found."),
        ]:
            with self.subTest(path=path):
                self.assertError(n.get(path), status, error, reason)
        self.assertError(n.request("DELETE", base + "?q=x"), 405, "method_not_allowed")
        self.assertEqual(n.post("/shop8/_search_cleanup", {}).status, 202)
        self.assertEqual(self.search("shop8", q="shoe", stale="ok", limit=0)["total_rows"], 90)


class Hostile(NodeTest):
    """Index functions that loop, index a 5 MB field, 100,000 distinct terms or 300,000 fields: the documents they fail on index nothing (logged), the others are found,
    and the node answers throughout."""
    # A document's function gets 3 s (CouchDB's default is 5): the looping one costs two of them
    # (its batch, then itself alone); each hostile one stays far below it on a loaded machine.
    config = "[couchdb]\nos_process_timeout = 3000\n"

    def test_hostile_index_functions(self):
        n = self.node
        db = self.new_db("hostile", q=2)
        fn = """function(doc) {
          if (doc.loop) while (true) {}
          if (doc.huge) { index('text', 'default', 'huge ' + 'word '.repeat(1000000)); return; }
          if (doc.terms) { var s = []; for (var i = 0; i < 100000; i++) s.push('t' + i); index('text', 'default', 'terms ' + s.join(' ')); return; }
          if (doc.calls) { for (var i = 0; i < 300000; i++) index('string', 'f' + (i % 10), 'v' + i); return; }
          if (doc.long) { index('string', 'key', 'x'.repeat(100000)); index('text', 'default', 'longkey'); return; }
          index('text', 'default', doc.t);
        }"""
        self.assertEqual(n.put(f"/{db}/_design/lib", {"nouveau": {"idx": {"index": fn}}}).status, 201)
        docs = [{"_id": "loop", "loop": True, "t": "alpha"}, {"_id": "huge", "huge": True},
                {"_id": "terms", "terms": True}, {"_id": "calls", "calls": True}, {"_id": "long", "long": True}]
        docs += [{"_id": f"ok{i}", "t": "alpha common"} for i in range(20)]
        self.assertEqual(n.post(f"/{db}/_bulk_docs", {"docs": docs}).status, 201)
        r = n.get(f"/{db}/_design/lib/_nouveau/idx?q=alpha&limit=100")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(sorted(h["id"] for h in r.json["hits"]), sorted(f"ok{i}" for i in range(20)))
        self.assertEqual(n.get(f"/{db}/_design/lib/_nouveau/idx?q=huge").json["total_hits"], 1)
        self.assertEqual(n.get(f"/{db}/_design/lib/_nouveau/idx?q=t99999").json["total_hits"], 1)
        self.assertEqual(n.get(f"/{db}/_design/lib/_nouveau/idx?q=longkey").json["total_hits"], 1)
        # Queries that match everything or expand to very many terms answer, or refuse with Lucene's
        # reason, and never take the node down.
        everything = n.get(f"/{db}/_design/lib/_nouveau/idx?q=*:*&limit=100").json
        self.assertNotIn("loop", [h["id"] for h in everything["hits"]])
        self.assertEqual(everything["total_hits"], 24)  # all but the one that never ends
        self.assertEqual(n.get(f"/{db}/_design/lib/_nouveau/idx?q=f3:v299993").json["total_hits"], 1)
        wide = n.get(f"/{db}/_design/lib/_nouveau/idx?q=t1*")
        self.assertIn(wide.status, (200, 400), wide)
        fuzzy = n.get(f"/{db}/_design/lib/_nouveau/idx?q=t12345~0.5")
        self.assertIn(fuzzy.status, (200, 400), fuzzy)
        if fuzzy.status == 400:
            self.assertEqual(fuzzy.json["error"], "bad_request")
        self.assertEqual(n.get("/").status, 200)


class Partitioned(NodeTest):
    """A partitioned database's search indexes know each document's partition: a query under
    /db/_partition/<p>/... (or partition=) keeps to it, answered by its range alone and scored from
    the whole database's statistics; dreyfus' rules and messages for what does not fit."""

    def test_partitioned_search(self):
        n = self.node
        for name, shards in (("parts1", 1), ("parts8", 8)):
            self.assertEqual(n.put(f"/{name}?q={shards}&partitioned=true").status, 201)
            docs = [dict(book(i), _id=f"{'pqr'[i % 3]}:{book(i)['_id']}") for i in range(90)]
            self.assertEqual(n.post(f"/{name}/_bulk_docs", {"docs": docs}).status, 201)
            clouseau = "function(doc) { index('default', doc.title); index('genre', doc.genre, {index: 'not_analyzed'}); }"
            self.assertEqual(n.put(f"/{name}/_design/lib", {"nouveau": {"books": {"index": INDEX}},
                                                            "indexes": {"items": {"index": clouseau}}}).status, 201)
        for query in ("apple", "*:*", "fig OR kiwi"):
            one = n.get(f"/parts1/_partition/q/_design/lib/_nouveau/books" + q(q=query, limit=100)).json
            eight = n.get(f"/parts8/_partition/q/_design/lib/_nouveau/books" + q(q=query, limit=100)).json
            self.assertTrue(all(h["id"].startswith("q:") for h in one["hits"]), one)
            self.assertEqual([(h["id"], h["order"]) for h in one["hits"]], [(h["id"], h["order"]) for h in eight["hits"]])
            if query == "*:*":
                self.assertEqual(one["total_hits"], 30)
        by_param = n.get("/parts8/_design/lib/_nouveau/books" + q(q="*:*", partition="r", limit=100)).json
        self.assertEqual(by_param["total_hits"], 30)
        self.assertTrue(all(h["id"].startswith("r:") for h in by_param["hits"]))
        # Nouveau answers over every partition without one; Clouseau wants one.
        self.assertEqual(n.get("/parts8/_design/lib/_nouveau/books?q=*:*").json["total_hits"], 90)
        self.assertError(n.get("/parts8/_design/lib/_search/items?q=*:*"), 400, "bad_request",
                         "`partition` parameter is mandatory for queries to this index.")
        self.assertEqual(n.get("/parts8/_partition/p/_design/lib/_search/items?q=*:*").json["total_rows"], 30)
        self.assertError(n.get("/parts8/_partition/p/_design/lib/_search/items?q=*:*&drilldown=%5B%22genre%22%2C%22x%22%5D"),
                         400, "bad_request")
        self.assertError(n.get("/parts8/_partition/p/_design/lib/_nouveau/books?q=x&partition=r"), 400, "bad_request",
                         "Conflicting value for `partition` in query string")
        self.assertEqual(n.put("/flat").status, 201)
        self.assertEqual(n.put("/flat/_design/lib", {"nouveau": {"books": {"index": INDEX}}}).status, 201)
        self.assertError(n.get("/flat/_design/lib/_nouveau/books?q=x&partition=p"), 400, "bad_request",
                         "`partition` not supported on this index")
        # _view_cleanup keeps a partitioned database's indexes (views' too).
        self.assertEqual(n.post("/parts8/_view_cleanup", {}).status, 202)
        self.assertEqual(n.get("/parts8/_partition/q/_design/lib/_nouveau/books?q=*:*&update=false").json["total_hits"], 30)


class BuildsLongerThanARequest(SlowBuildTest):
    """A search waits for its index build as a view query does (up to [fabric] view_permsg_timeout),
    not request_timeout_ms; past view_permsg_timeout it is a 500 timeout and the build goes on.
    With every range on this node the copies are held and searched as one (one phase): a timed-out
    hold is the answer, not a cause to wait again through the two phases."""
    design = {"nouveau": {"s": {"index": "function(d) { var t = Date.now(); while (Date.now() - t < 2) {} "
                                          "index('text', 'default', 'word'); }"}}}

    def test_a_build_longer_than_the_request_timeout_is_waited_for(self):
        self.slow_db(self.node, "slong")
        r = self.get_outlasting_a_request("/slong/_design/slow/_nouveau/s?q=word&limit=2")
        self.assertEqual(r.json["total_hits"], 600)
        self.assertEqual(len(r.json["hits"]), 2)

    def test_view_permsg_timeout_bounds_the_wait_and_the_build_goes_on(self):
        answer = self.timed_out_then_built("sbound", "/sbound/_design/slow/_nouveau/s?q=word")
        self.assertEqual(answer["total_hits"], 600)


class Build(NodeTest):
    def test_build_in_active_tasks_and_through_kill_9(self):
        n = self.node
        db = self.new_db("slow", q=2)
        docs = [{"_id": f"d{i:04d}", "t": f"word{i % 50} common"} for i in range(1500)]
        self.assertEqual(n.post(f"/{db}/_bulk_docs", {"docs": docs}).status, 201)
        slow = "function(doc) { var end = Date.now() + 2; while (Date.now() < end) {} index('text', 'default', doc.t); }"
        self.assertEqual(n.put(f"/{db}/_design/lib", {"nouveau": {"books": {"index": slow}}}).status, 201)
        # A query starts the build; while it runs, _active_tasks lists it.
        def ask():
            try:  # a connection of its own: the test's is used beside it
                c = http.client.HTTPConnection("127.0.0.1", n.port, timeout=60)
                c.request("GET", f"/{db}/_design/lib/_nouveau/books?q=common", headers=n.auth_header())
                c.getresponse().read()
            except (http.client.HTTPException, OSError):  # the node is killed under it
                pass

        t = threading.Thread(target=ask)
        t.start()
        rows = []
        self.assertTrue(wait_until(lambda: rows.extend(
            x for x in n.get("/_active_tasks").json if x.get("type") == "search_indexer") or rows, 30))
        self.assertEqual(rows[0]["design_document"], "_design/lib")
        self.assertEqual(rows[0]["index"], "books")
        self.assertIn(db, rows[0]["database"])
        # Killed mid-build: restarted, the index goes on from its last commit and answers everything.
        os.kill(n.proc.pid, signal.SIGKILL)
        n.proc.wait()
        t.join()
        n.start(port=n.port)
        r = n.get(f"/{db}/_design/lib/_nouveau/books?q=common&limit=1")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["total_hits"], 1500)
        self.assertEqual(n.get(f"/{db}/_design/lib/_nouveau/books?q=word7").json["total_hits"], 30)


if __name__ == "__main__":
    main()
