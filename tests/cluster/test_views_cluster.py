"""Views in a 3-node cluster (issue 31): a range this node holds no copy of is read from another
node's copy (the node protocol's viewRows), so every node answers a view query with the same rows,
offsets and reductions; a write acknowledged on one node is in the next query on any other; a node
killed with -9 leaves its ranges to the other copies, and comes back answering the same."""
import json
import os
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import main  # noqa: E402
from test_membership import ClusterTest, wait_for  # noqa: E402
from test_move_cluster import wait_job  # noqa: E402

DDOC = {"views": {"by_type": {"map": "function(doc) { if (doc.type) emit(doc.type, doc.n); }"},
                  "counts": {"map": "function(doc) { if (doc.type) emit([doc.type, doc.n % 2], doc.n); }",
                             "reduce": "_sum"},
                  "js": {"map": "function(doc) { if (doc.type) emit([doc.type, doc.n % 2], doc.n); }",
                         "reduce": "function(k, v, rereduce) { return sum(v); }"},
                  "stats": {"map": "function(doc) { if (doc.type) emit(doc.type, doc.n); }", "reduce": "_stats"}}}


def q(**params):
    return "?" + urllib.parse.urlencode({k: json.dumps(v) if k in ("key", "keys", "startkey", "endkey") else v
                                         for k, v in params.items()})


class ClusteredViews(ClusterTest):
    NODES, SYNC_INTERVAL_MS = 3, 300

    def make_db(self, name, q_, n_, docs=60):
        n1 = self.nodes[0]
        self.assertEqual(n1.put(f"/{name}?q={q_}&n={n_}").status, 201)
        self.assertTrue(wait_for(lambda: all(n.get(f"/{name}").status == 200 for n in self.nodes), 15))
        body = {"docs": [{"_id": f"d{i:03d}", "type": "xyz"[i % 3], "n": i} for i in range(docs)]}
        self.assertEqual(n1.post(f"/{name}/_bulk_docs", body).status, 201)
        self.assertIn(n1.put(f"/{name}/_design/app", DDOC).status, (201, 202))
        # Every node reads the design document (its range may be on another node).
        self.assertTrue(wait_for(lambda: all(n.get(f"/{name}/_design/app").status == 200 for n in self.nodes), 15))

    def view(self, node, db, name, query=""):
        r = node.get(f"/{db}/_design/app/_view/{name}{query}")
        self.assertEqual(r.status, 200, r.raw)
        return r.json

    def test_every_node_answers_with_the_same_rows(self):
        self.make_db("cviews", 4, 1)
        # n=1: each range lives on one node; more than one node holds some, so every node's
        # answer needs another node's copies.
        shards = self.node.get("/cviews/_shards").json["shards"]
        self.assertGreater(len({nodes[0] for nodes in shards.values()}), 1, shards)
        expected = sorted(((("xyz"[i % 3]), f"d{i:03d}", i) for i in range(60)))
        for k, n in enumerate(self.nodes):
            with self.subTest(node=k):
                got = self.view(n, "cviews", "by_type")
                self.assertEqual([(r["key"], r["id"], r["value"]) for r in got["rows"]], expected)
                self.assertEqual((got["total_rows"], got["offset"]), (60, 0))
                page = self.view(n, "cviews", "by_type", q(startkey="y", limit=5, skip=2))
                self.assertEqual([(r["key"], r["id"], r["value"]) for r in page["rows"]], expected[22:27])
                self.assertEqual(page["offset"], 22)
                back = self.view(n, "cviews", "by_type", q(startkey="y", descending="true", limit=3))
                self.assertEqual([r["id"] for r in back["rows"]], [e[1] for e in expected[39:36:-1]])
                self.assertEqual(back["offset"], 20)
                keyed = self.view(n, "cviews", "by_type", q(keys=["z", "x"], limit=25))
                self.assertEqual([r["id"] for r in keyed["rows"]], [e[1] for e in expected[40:60] + expected[0:5]])
                docs = self.view(n, "cviews", "by_type", q(key="x", limit=2, include_docs="true"))
                self.assertEqual([r["doc"]["n"] for r in docs["rows"]], [0, 3])
                grouped = self.view(n, "cviews", "counts", q(group_level=1))
                sums = {t: sum(i for i in range(60) if "xyz"[i % 3] == t) for t in "xyz"}
                self.assertEqual(grouped["rows"], [{"key": [t], "value": sums[t]} for t in "xyz"])
                whole = self.view(n, "cviews", "counts")
                self.assertEqual(whole["rows"], [{"key": None, "value": sum(range(60))}])
                # Each copy groups and reduces its range; the same key from several copies is
                # re-reduced by the coordinator (a JavaScript function's rereduce, too).
                self.assertEqual(self.view(n, "cviews", "js", q(group_level=1))["rows"], grouped["rows"])
                self.assertEqual(self.view(n, "cviews", "js")["rows"], whole["rows"])
                exact = self.view(n, "cviews", "js", q(group="true", descending="true", skip=1, limit=2))["rows"]
                self.assertEqual(exact, [{"key": ["z", 0], "value": sum(i for i in range(60) if i % 3 == 2 and i % 2 == 0)},
                                         {"key": ["y", 1], "value": sum(i for i in range(60) if i % 3 == 1 and i % 2)}])
                stats = self.view(n, "cviews", "stats", q(group="true"))["rows"]
                self.assertEqual([(r["key"], r["value"]["count"], r["value"]["sum"], r["value"]["min"]) for r in stats],
                                 [(t, 20, sums[t], "xyz".index(t)) for t in "xyz"])
                # One copy of each range indexed all its range holds: 61 changes in all (60
                # documents and the design document), whichever node's copies answered.
                info = n.get("/cviews/_design/app/_info").json["view_index"]
                self.assertEqual(info["updates_pending"]["total"], 0)
                self.assertEqual(info["update_seq"], 61)

    def test_a_write_on_one_node_is_in_the_next_query_on_any_other(self):
        self.make_db("cfresh", 4, 1, docs=10)
        for k, n in enumerate(self.nodes):
            for j, writer in enumerate(self.nodes):
                doc = f"w{k}{j}"
                self.assertIn(writer.put(f"/cfresh/{doc}", {"type": "fresh", "n": 10 * k + j}).status, (201, 202))
                got = self.view(n, "cfresh", "by_type", q(key="fresh"))
                self.assertIn(doc, [r["id"] for r in got["rows"]], (k, j))

    def test_a_node_killed_leaves_its_ranges_to_the_other_copies(self):
        self.make_db("ckill", 2, 2)
        n1, n2, n3 = self.nodes
        before = self.view(n1, "ckill", "by_type")
        self.assertEqual(len(before["rows"]), 60)
        # Each node has built its copies' indexes; then one dies without a word.
        for n in self.nodes:
            self.assertEqual(self.view(n, "ckill", "by_type")["rows"], before["rows"])
        n3.kill()
        try:
            for n in (n1, n2):
                self.assertTrue(wait_for(lambda n=n: n.get("/ckill/_design/app/_view/by_type").status == 200, 15))
                self.assertEqual(self.view(n, "ckill", "by_type")["rows"], before["rows"])
                self.assertEqual(self.view(n, "ckill", "counts", q(reduce="false"))["total_rows"], 60)
        finally:
            n3.start()
        self.cluster.wait_connected()
        self.assertTrue(wait_for(lambda: n3.get("/ckill/_design/app/_view/by_type").status == 200, 15))
        self.assertEqual(self.view(n3, "ckill", "by_type")["rows"], before["rows"])

    def test_a_moved_copy_answers_from_its_new_node(self):
        self.make_db("cmove", 1, 1)
        shards = self.node.get("/cmove/_shards").json["shards"]
        [(rng, [source])] = shards.items()
        target = next(name for name in self.cluster.names if name != source)
        src = self.nodes[self.cluster.names.index(source)]
        before = self.view(self.node, "cmove", "by_type")
        self.assertEqual(len(before["rows"]), 60)
        index_dir = os.path.join(src.data_dir, ".shard_views", "shards", rng)
        self.assertTrue(any(d.startswith("cmove.") for d in os.listdir(index_dir)))
        [shard] = [s["id"] for s in self.node.get("/cmove/_changes/_meta").json["shards"]]
        r = self.node.post("/_reshard/jobs", {"type": "move", "shard": f"shards/{rng}/cmove.{shard.split('.')[1]}",
                                              "source": source, "target": target})
        self.assertEqual(r.status, 201, r.json)
        job = wait_job(self.node, r.json[0]["id"])
        self.assertEqual(job["job_state"], "completed", job)
        self.assertTrue(wait_for(lambda: all(n.get("/cmove/_shards").json["shards"][rng] == [target]
                                             for n in self.nodes), 15))
        for n in self.nodes:
            self.assertEqual(self.view(n, "cmove", "by_type")["rows"], before["rows"])
        # The source's index went with its copy.
        self.assertTrue(wait_for(lambda: not any(d.startswith("cmove.") for d in os.listdir(index_dir)), 15))

    def test_view_cleanup_reaches_every_node_holding_copies(self):
        self.make_db("cclean", 4, 1, docs=20)
        self.assertEqual(len(self.view(self.node, "cclean", "by_type")["rows"]), 20)

        def signatures():
            found = set()
            for n in self.nodes:
                root = os.path.join(n.data_dir, ".shard_views", "shards")
                for rng in (os.listdir(root) if os.path.isdir(root) else []):
                    for d in os.listdir(os.path.join(root, rng)):
                        if d.startswith("cclean."):
                            found.update(f[:-5] for f in os.listdir(os.path.join(root, rng, d)) if f.endswith(".view"))
            return found

        old = signatures()
        self.assertEqual(len(old), 1)
        rev = self.node.get("/cclean/_design/app").json["_rev"]
        changed = {"_rev": rev, "views": {"by_type": {"map": "function(doc) { if (doc.type) emit(doc.n, 1); }"}}}
        self.assertIn(self.node.put("/cclean/_design/app", changed).status, (201, 202))
        self.assertTrue(wait_for(lambda: self.view(self.node, "cclean", "by_type")["rows"][0]["key"] == 0, 10))
        self.assertEqual(len(signatures()), 2)
        # Asked on one node, every node holding a copy cleans its own.
        r = self.nodes[2].post("/cclean/_view_cleanup", {})
        self.assertEqual((r.status, r.json), (202, {"ok": True}))
        now = signatures()
        self.assertEqual(len(now), 1)
        self.assertNotEqual(now, old)
        self.assertEqual(len(self.view(self.nodes[1], "cclean", "by_type")["rows"]), 20)

    def test_compaction_reaches_every_node_holding_copies(self):
        self.make_db("ccompact", 4, 1, docs=3000)
        n1 = self.nodes[0]
        self.assertEqual(len(self.view(n1, "ccompact", "by_type")["rows"]), 3000)
        ids = n1.get("/ccompact/_all_docs").json["rows"]
        gone = [{"_id": r["id"], "_rev": r["value"]["rev"], "_deleted": True} for r in ids if r["id"].startswith("d")]
        self.assertEqual(n1.post("/ccompact/_bulk_docs", {"docs": gone[300:]}).status, 201)
        rows = self.view(n1, "ccompact", "by_type")["rows"]
        self.assertEqual(len(rows), 300)

        def sizes():
            """Each node's index files of the database, by path: their sizes."""
            out = {}
            for n in self.nodes:
                root = os.path.join(n.data_dir, ".shard_views", "shards")
                for rng in (os.listdir(root) if os.path.isdir(root) else []):
                    for d in os.listdir(os.path.join(root, rng)):
                        if d.startswith("ccompact."):
                            for f in os.listdir(os.path.join(root, rng, d)):
                                if f.endswith(".view"):
                                    path = os.path.join(root, rng, d, f)
                                    out[path] = os.path.getsize(path)
            return out

        before = sizes()
        self.assertEqual(len(before), 4)  # one per range, on the nodes that hold them
        # Asked on one node, every node holding a copy compacts its own.
        r = self.nodes[2].post("/ccompact/_compact/app", {})
        self.assertEqual((r.status, r.json), (202, {"ok": True}))
        self.assertTrue(wait_for(lambda: all(size < before[p] for p, size in sizes().items()), 30), (before, sizes()))
        for n in self.nodes:
            self.assertEqual(self.view(n, "ccompact", "by_type")["rows"], rows)
        self.assertFalse(n1.get("/ccompact/_design/app/_info").json["view_index"]["compact_running"])

    def test_bad_queries_fail_the_same_on_a_node_without_copies(self):
        self.make_db("cbad", 1, 1, docs=3)
        shards = self.node.get("/cbad/_shards").json["shards"]
        holder = next(iter(shards.values()))[0]
        other = next(n for n, name in zip(self.nodes, self.cluster.names) if name != holder)
        r = other.get("/cbad/_design/app/_view/by_type?group=true")
        self.assertEqual(r.status, 400, r.raw)
        self.assertEqual(r.json["error"], "query_parse_error")
        r = other.get("/cbad/_design/app/_view/nope")
        self.assertEqual((r.status, r.json["error"]), (404, "not_found"))
        self.assertEqual(len(self.view(other, "cbad", "by_type")["rows"]), 3)



class ViewBuildsLongerThanARequest(ClusterTest):
    """A range whose copy is on another node is waited for while that node builds its index: the
    node protocol's viewRows call is bounded by [fabric] view_permsg_timeout, not request_timeout_ms."""
    NODES, SYNC_INTERVAL_MS = 2, 0
    EXTRA_CONFIG = "[couchdb]\nrequest_timeout_ms = 300\n"

    def test_a_remote_build_longer_than_the_request_timeout_is_waited_for(self):
        n1 = self.node
        self.assertEqual(n1.put("/cslow?q=2&n=1").status, 201)
        self.assertTrue(wait_for(lambda: all(n.get("/cslow").status == 200 for n in self.nodes), 15))
        shards = n1.get("/cslow/_shards").json["shards"]
        self.assertEqual(len({nodes[0] for nodes in shards.values()}), 2, shards)  # one range each
        self.assertEqual(n1.post("/cslow/_bulk_docs", {"docs": [{"i": i} for i in range(600)]}).status, 201)
        # ~2 ms a document: each node builds its range's ~300 for ~0.6 s.
        slow = "function(d) { var t = Date.now(); while (Date.now() - t < 2) {} emit(d.i, 1); }"
        self.assertEqual(n1.put("/cslow/_design/app", {"views": {"v": {"map": slow, "reduce": "_count"}}}).status, 201)
        self.assertTrue(wait_for(lambda: self.nodes[1].get("/cslow/_design/app").status == 200, 15))
        r = n1.get("/cslow/_design/app/_view/v")
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["rows"], [{"key": None, "value": 600}])


if __name__ == "__main__":
    main()
