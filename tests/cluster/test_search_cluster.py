"""Full-text search in a 3-node cluster (issue 54): a range this node holds no copy of is searched
on another node's copy (the node protocol's searchCopy), scored from every copy's statistics, so
every node answers the same hits, scores and pages as a q=1 database; a write acknowledged on one
node is found by the next query on any other; a node killed with -9 leaves its ranges to the other
copies; a moved copy and a split range answer the same from their new places."""
import json
import os
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import main  # noqa: E402
from test_membership import ClusterTest, wait_for  # noqa: E402
from test_move_cluster import wait_job  # noqa: E402

WORDS = "apple banana cherry date elder fig grape hazel iris juniper kiwi lemon".split()
INDEX = """function(doc) {
  if (doc.t) { index('text', 'default', doc.t); index('string', 'kind', doc.kind, {store: true}); }
  if (typeof doc.n == 'number') index('double', 'n', doc.n);
}"""
QUERIES = ["apple", "banana AND cherry", "\"date elder\"", "fig OR kiwi^2", "gra*", "lemn~", "n:[10 TO 40]"]


def doc(i):
    return {"_id": f"d{i:03d}", "t": " ".join(WORDS[(i * k + 1) % len(WORDS)] for k in range(1, 3 + i % 3)),
            "kind": "abc"[i % 3], "n": i}


def q(**params):
    return "?" + urllib.parse.urlencode({k: v if isinstance(v, str) else json.dumps(v) for k, v in params.items()})


class ClusteredSearch(ClusterTest):
    NODES, SYNC_INTERVAL_MS = 3, 300

    def make_db(self, name, q_, n_, docs=90):
        n1 = self.nodes[0]
        self.assertEqual(n1.put(f"/{name}?q={q_}&n={n_}").status, 201)
        self.assertTrue(wait_for(lambda: all(n.get(f"/{name}").status == 200 for n in self.nodes), 15))
        self.assertEqual(n1.post(f"/{name}/_bulk_docs", {"docs": [doc(i) for i in range(docs)]}).status, 201)
        self.assertIn(n1.put(f"/{name}/_design/s", {"nouveau": {"idx": {"index": INDEX}}}).status, (201, 202))
        self.assertTrue(wait_for(lambda: all(n.get(f"/{name}/_design/s").status == 200 for n in self.nodes), 15))

    def search(self, node, db, **params):
        r = node.get(f"/{db}/_design/s/_nouveau/idx" + q(**params))
        self.assertEqual(r.status, 200, r.raw)
        return r.json

    def answers(self, node, db):
        """Every query's whole answer (hits with their orders, totals, counts)."""
        return {query: self.search(node, db, q=query, limit=200, counts=["kind"]) for query in QUERIES}

    def same(self, got, want):
        for query in QUERIES:
            self.assertEqual(got[query]["total_hits"], want[query]["total_hits"], query)
            self.assertEqual([(h["id"], h["order"]) for h in got[query]["hits"]],
                             [(h["id"], h["order"]) for h in want[query]["hits"]], query)
            self.assertEqual(got[query]["counts"], want[query]["counts"], query)

    def test_every_node_answers_as_one_range_does(self):
        self.make_db("sone", 1, 1)
        self.make_db("sfour", 4, 1)
        shards = self.node.get("/sfour/_shards").json["shards"]
        self.assertGreater(len({nodes[0] for nodes in shards.values()}), 1, shards)
        want = self.answers(self.nodes[0], "sone")
        self.assertGreater(want["apple"]["total_hits"], 0)
        for k, n in enumerate(self.nodes):
            with self.subTest(node=k):
                self.same(self.answers(n, "sfour"), want)
                # Paged by bookmark on this node: the pages of the one answer.
                seen, bookmark = [], None
                for _ in range(40):
                    params = {"q": "apple OR fig", "limit": 9}
                    if bookmark:
                        params["bookmark"] = bookmark
                    page = self.search(n, "sfour", **params)
                    if not page["hits"]:
                        break
                    seen += [h["id"] for h in page["hits"]]
                    bookmark = page["bookmark"]
                whole = self.search(self.nodes[0], "sone", q="apple OR fig", limit=200)
                self.assertEqual(seen, [h["id"] for h in whole["hits"]])
        info = self.nodes[2].get("/sfour/_design/s/_nouveau_info/idx").json["search_index"]
        self.assertEqual(info["num_docs"], 90)

    def test_mango_text_index_answers_alike_on_every_node(self):
        # A Mango text index (no JavaScript) over ranges spread on three nodes: each node's _find
        # pages give what a q=1 database gives, and a write on one node is found from another.
        n1 = self.nodes[0]
        self.make_db("mone", 1, 1)
        self.make_db("mfour", 4, 1)
        body = {"index": {}, "type": "text", "name": "t", "ddoc": "t"}
        for db in ("mone", "mfour"):
            self.assertEqual(n1.post(f"/{db}/_index", body).status, 200)
            self.assertTrue(wait_for(lambda: all(n.get(f"/{db}/_design/t").status == 200 for n in self.nodes), 15))

        def pages(node, db):
            got, bookmark = [], None
            for _ in range(40):
                find = {"selector": {"$text": "apple", "n": {"$gte": 5}}, "sort": [{"n": "desc"}], "limit": 8}
                if bookmark:
                    find["bookmark"] = bookmark
                r = node.post(f"/{db}/_find", find)
                self.assertEqual(r.status, 200, r.raw)
                if not r.json["docs"]:
                    return got
                got += [d["_id"] for d in r.json["docs"]]
                bookmark = r.json["bookmark"]
            return got

        want = pages(n1, "mone")
        self.assertEqual(want, [d["_id"] for d in sorted((doc(i) for i in range(90)), key=lambda d: -d["n"])
                                if "apple" in d["t"].split() and d["n"] >= 5])
        for k, n in enumerate(self.nodes):
            with self.subTest(node=k):
                self.assertEqual(pages(n, "mfour"), want)
        self.assertIn(self.nodes[2].put("/mfour/late", {"t": "quokka", "n": 1}).status, (201, 202))
        r = self.nodes[1].post("/mfour/_find", {"selector": {"$text": "quokka"}})
        self.assertEqual([d["_id"] for d in r.json["docs"]], ["late"])

    def test_a_write_on_one_node_is_found_by_the_next_query_on_any_other(self):
        self.make_db("sfresh", 4, 1, docs=10)
        for k, n in enumerate(self.nodes):
            for j, writer in enumerate(self.nodes):
                word = f"zebra{k}{j}"
                self.assertIn(writer.put(f"/sfresh/w{k}{j}", {"t": word, "kind": "z"}).status, (201, 202))
                self.assertEqual([h["id"] for h in self.search(n, "sfresh", q=word)["hits"]], [f"w{k}{j}"])

    def test_a_node_killed_leaves_its_ranges_to_the_other_copies(self):
        self.make_db("skill", 2, 2)
        n1, n2, n3 = self.nodes
        before = self.answers(n1, "skill")
        for n in self.nodes:
            self.same(self.answers(n, "skill"), before)
        n3.kill()
        try:
            for n in (n1, n2):
                self.assertTrue(wait_for(lambda n=n: n.get("/skill/_design/s/_nouveau/idx?q=apple").status == 200, 15))
                self.same(self.answers(n, "skill"), before)
        finally:
            n3.start()
        self.cluster.wait_connected()
        self.assertTrue(wait_for(lambda: n3.get("/skill/_design/s/_nouveau/idx?q=apple").status == 200, 15))
        self.same(self.answers(n3, "skill"), before)

    def test_a_moved_copy_answers_from_its_new_node(self):
        self.make_db("smove", 1, 1)
        shards = self.node.get("/smove/_shards").json["shards"]
        [(rng, [source])] = shards.items()
        target = next(name for name in self.cluster.names if name != source)
        src = self.nodes[self.cluster.names.index(source)]
        before = self.answers(self.node, "smove")
        index_dir = os.path.join(src.data_dir, ".shard_views", "shards", rng)
        has_search = lambda: any(f.endswith(".search") for root, ds, _ in os.walk(index_dir) for f in ds
                                 if "smove." in root)
        self.assertTrue(has_search())
        [shard] = [s["id"] for s in self.node.get("/smove/_changes/_meta").json["shards"]]
        r = self.node.post("/_reshard/jobs", {"type": "move", "shard": f"shards/{rng}/smove.{shard.split('.')[1]}",
                                              "source": source, "target": target})
        self.assertEqual(r.status, 201, r.json)
        job = wait_job(self.node, r.json[0]["id"])
        self.assertEqual(job["job_state"], "completed", job)
        self.assertTrue(wait_for(lambda: all(n.get("/smove/_shards").json["shards"][rng] == [target]
                                             for n in self.nodes), 15))
        for n in self.nodes:
            self.same(self.answers(n, "smove"), before)
        self.assertTrue(wait_for(lambda: not has_search(), 15))  # the source's index went with its copy

    def test_a_split_range_answers_the_same(self):
        # Copies on every node: one job per copy, the node asked leading (test_reshard_cluster).
        self.make_db("ssplit", 1, 3)
        before = self.answers(self.node, "ssplit")
        for n in self.nodes:
            self.same(self.answers(n, "ssplit"), before)  # every copy's index built
        r = self.node.post("/_reshard/jobs", {"type": "split", "db": "ssplit"})
        self.assertEqual(r.status, 201, r.json)
        for job in r.json:
            node = self.nodes[self.cluster.names.index(job["node"])]
            self.assertEqual(wait_job(node, job["id"])["job_state"], "completed")
        self.assertTrue(wait_for(lambda: all(n.get("/ssplit").json["cluster"]["q"] == 2 for n in self.nodes), 15))
        for n in self.nodes:
            self.same(self.answers(n, "ssplit"), before)

    def test_bad_queries_fail_the_same_on_a_node_without_copies(self):
        self.make_db("sbad", 1, 1, docs=3)
        holder = next(iter(self.node.get("/sbad/_shards").json["shards"].values()))[0]
        other = next(n for n, name in zip(self.nodes, self.cluster.names) if name != holder)
        r = other.get("/sbad/_design/s/_nouveau/idx?q=" + urllib.parse.quote("t:(open"))
        self.assertEqual((r.status, r.json["error"]), (400, "bad_request"), r.raw)
        r = other.get("/sbad/_design/s/_nouveau/idx?q=x&sort=%22default%22")
        self.assertEqual((r.status, r.json["reason"]), (400, "can't sort on field default"), r.raw)
        self.assertEqual(self.search(other, "sbad", q="*:*")["total_hits"], 3)


if __name__ == "__main__":
    main()
