"""Mango JSON indexes in a 3-node cluster (issue 32): an index made on one node is kept by every
copy of every range (each node's copies from the moment the index is made); a range this node holds
no copy of answers from another node's copy (the node protocol's mangoRows), so every node answers
a _find with the same documents in the same order, and a bookmark made on one node pages on any
other; a write acknowledged on one node is in the next _find on any other; a node killed with -9
leaves its ranges to the other copies; DELETE /db/_index drops the rows on every node."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import main  # noqa: E402
from test_membership import ClusterTest, wait_for  # noqa: E402


def docs(count):
    return [{"_id": f"d{i:03d}", "kind": "xyz"[i % 3], "n": (i * 11) % 97} for i in range(count)]


class ClusteredIndexes(ClusterTest):
    NODES, SYNC_INTERVAL_MS = 3, 300

    def make_db(self, name, q_, n_, count=90):
        n1 = self.nodes[0]
        self.assertEqual(n1.put(f"/{name}?q={q_}&n={n_}").status, 201)
        self.assertTrue(wait_for(lambda: all(n.get(f"/{name}").status == 200 for n in self.nodes), 15))
        self.assertEqual(n1.post(f"/{name}/_bulk_docs", {"docs": docs(count)}).status, 201)
        r = n1.post(f"/{name}/_index", {"index": {"fields": ["kind", "n"]}, "ddoc": "k", "name": "kind-n"})
        self.assertEqual(r.status, 200, r)
        self.assertTrue(wait_for(lambda: all(len(n.get(f"/{name}/_index").json["indexes"]) == 2 for n in self.nodes), 15))

    def find(self, node, db, body):
        r = node.post(f"/{db}/_find", body)
        self.assertEqual(r.status, 200, r.raw)
        return r.json

    def test_every_node_answers_the_same_in_the_index_order(self):
        self.make_db("cmango", 4, 1)
        shards = self.node.get("/cmango/_shards").json["shards"]
        self.assertGreater(len({nodes[0] for nodes in shards.values()}), 1, shards)
        want = sorted((d for d in docs(90) if d["kind"] == "y" and d["n"] > 20), key=lambda d: (d["n"], d["_id"]))
        want = [{"_id": d["_id"], "n": d["n"]} for d in want]
        body = {"selector": {"kind": "y", "n": {"$gt": 20}}, "fields": ["_id", "n"], "execution_stats": True}
        for k, n in enumerate(self.nodes):
            with self.subTest(node=k):
                got = self.find(n, "cmango", dict(body, limit=100))
                self.assertEqual(got["docs"], want)
                self.assertNotIn("warning", got)
                self.assertEqual(got["execution_stats"]["total_keys_examined"], len(want))
                desc = self.find(n, "cmango", dict(body, limit=100, sort=[{"kind": "desc"}, {"n": "desc"}]))
                self.assertEqual(desc["docs"], want[::-1])
        # A bookmark made on one node goes on from another.
        page, bookmark, k = [], None, 0
        while True:
            b = dict(body, limit=4)
            if bookmark:
                b["bookmark"] = bookmark
            r = self.find(self.nodes[k % 3], "cmango", b)
            page += r["docs"]
            bookmark = r["bookmark"]
            k += 1
            if len(r["docs"]) < 4:
                break
        self.assertEqual(page, want)

    def test_a_write_on_one_node_is_in_the_next_find_on_any_other(self):
        self.make_db("cmfresh", 4, 1, count=10)
        for k, n in enumerate(self.nodes):
            for j, writer in enumerate(self.nodes):
                doc = f"w{k}{j}"
                self.assertIn(writer.put(f"/cmfresh/{doc}", {"kind": "fresh", "n": 10 * k + j}).status, (201, 202))
                got = self.find(n, "cmfresh", {"selector": {"kind": "fresh", "n": {"$gte": 0}}, "limit": 100})
                self.assertIn(doc, [d["_id"] for d in got["docs"]], (k, j))

    def test_a_node_killed_leaves_its_ranges_to_the_other_copies(self):
        self.make_db("cmkill", 2, 2)
        n1, n2, n3 = self.nodes
        body = {"selector": {"kind": "x", "n": {"$gte": 0}}, "fields": ["_id"], "limit": 100}
        before = self.find(n1, "cmkill", body)["docs"]
        self.assertEqual(len(before), 30)
        n3.kill()
        try:
            for n in (n1, n2):
                self.assertTrue(wait_for(lambda n=n: n.post("/cmkill/_find", body).status == 200, 15))
                self.assertEqual(self.find(n, "cmkill", body)["docs"], before)
        finally:
            n3.start()
        self.cluster.wait_connected()
        self.assertTrue(wait_for(lambda: n3.post("/cmkill/_find", body).status == 200, 15))
        self.assertEqual(self.find(n3, "cmkill", body)["docs"], before)

    def test_deleting_the_index_drops_its_rows_everywhere(self):
        self.make_db("cmdrop", 2, 3, count=30)
        n1, n2, _ = self.nodes
        self.assertEqual(n2.delete("/cmdrop/_index/k/json/kind-n").json, {"ok": True})
        got = self.find(n1, "cmdrop", {"selector": {"kind": "x", "n": {"$gte": 0}}, "limit": 100})
        self.assertEqual(len(got["docs"]), 10)
        self.assertIn("No matching index found", got["warning"])
        # Made again, it is built again on every copy and answers as before.
        self.assertEqual(n1.post("/cmdrop/_index", {"index": {"fields": ["kind", "n"]}, "ddoc": "k", "name": "kind-n"})
                         .json["result"], "created")
        for n in self.nodes:
            got = self.find(n, "cmdrop", {"selector": {"kind": "x", "n": {"$gte": 0}}, "limit": 100, "fields": ["_id"]})
            self.assertEqual(len(got["docs"]), 10)
            self.assertNotIn("warning", got)


if __name__ == "__main__":
    main()
