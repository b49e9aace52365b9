"""Internal replication over Cap'n Proto between real processes: POST /db/_sync_shards."""
import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import NodeTest, main  # noqa: E402
from test_membership import Cluster, wait_for  # noqa: E402


class SyncShards(NodeTest):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(2).start()
        cls.n1, cls.n2 = cls.cluster.nodes
        everyone = sorted(cls.cluster.names)
        assert wait_for(lambda: cls.n1.get("/_membership", fresh=True).json["all_nodes"] == everyone)
        assert wait_for(lambda: cls.n2.get("/_membership", fresh=True).json["all_nodes"] == everyone)
        cls.node = cls.n1

    @classmethod
    def tearDownClass(cls):
        cls.cluster.cleanup()

    def docs(self, node, db):
        rows = node.get(f"/{db}/_all_docs").json["rows"]
        return {r["id"]: r["value"]["rev"] for r in rows}

    def sync(self, node, db):
        r = node.post(f"/{db}/_sync_shards", raw_body="", headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.json["ok"], r.json)
        return sum(row["applied"] for row in r.json["pushed"])

    def wait_connected(self, node, names):
        self.assertTrue(wait_for(lambda: node.get("/_membership", fresh=True).json["all_nodes"] == sorted(names)))

    def test_copies_converge_both_ways_with_conflicts_and_deletions(self):
        # Each copy misses the writes made while its node was down; _sync_shards brings them together.
        self.assertEqual(self.n1.put("/conv?q=2").status, 201)
        self.assertError(self.n2.put("/conv?q=2"), 412, "file_exists")  # one database cluster-wide
        revs = {}
        for i in range(30):
            r = self.n1.put(f"/conv/d{i}", {"i": i})
            self.assertEqual(r.status, 201)  # n=2, w=2: both copies have it
            revs[f"d{i}"] = r.json["rev"]
        self.assertEqual(self.sync(self.n1, "conv"), 0)  # nothing to catch up on

        self.n2.stop()
        self.wait_connected(self.n1, [self.cluster.names[0]])
        self.assertEqual(self.n1.put("/conv/d1", {"_rev": revs["d1"], "i": "updated"}).status, 202)
        self.assertEqual(self.n1.delete(f"/conv/d2?rev={revs['d2']}").status, 202)
        self.assertEqual(self.n1.put("/conv/d3", {"_rev": revs["d3"], "i": "n1 edit"}).status, 202)
        self.n1.stop()
        self.n2.start(port=self.n2.port)
        self.assertEqual(self.n2.put("/conv/d3", {"_rev": revs["d3"], "i": "n2 edit"}).status, 202)  # a conflict
        self.assertEqual(self.n2.put("/conv/only-n2", {}).status, 202)
        self.n1.start(port=self.n1.port)
        for n in (self.n1, self.n2):
            self.wait_connected(n, self.cluster.names)

        self.assertEqual(self.sync(self.n1, "conv"), 3)  # d1, d2, d3
        self.assertEqual(self.sync(self.n1, "conv"), 0)  # checkpointed
        self.assertEqual(self.sync(self.n2, "conv"), 2)  # d3, only-n2
        self.assertEqual(self.docs(self.n1, "conv"), self.docs(self.n2, "conv"))
        for n in (self.n1, self.n2):
            self.assertEqual(n.get("/conv/d1").json["i"], "updated")
            self.assertError(n.get("/conv/d2"), 404, "not_found", "deleted")
            self.assertEqual(len(n.get("/conv/d3?conflicts=true").json.get("_conflicts", [])), 1)
            self.assertEqual(n.get("/conv").json["doc_count"], 30)  # 30 - d2 + only-n2

    def test_large_attachments_stream_between_nodes_and_catch_up_in_pieces(self):
        # 9 MiB: uploads stage it on both copies in pieces; a copy that missed it gets it from
        # internal replication in pieces too (not in one message), and then serves it alone.
        data = hashlib.shake_256(b"large").digest(9 << 20)
        self.assertEqual(self.n1.put("/big?q=1").status, 201)
        hdr = {"Content-Type": "application/octet-stream"}
        self.assertEqual(self.n1.request("PUT", "/big/a/x.bin", raw_body=data, headers=hdr).status, 201)
        for n in (self.n1, self.n2):
            got = n.get("/big/a/x.bin")
            self.assertEqual((got.status, got.header("Content-Length"), got.data == data), (200, str(len(data)), True))
        self.assertEqual(self.sync(self.n1, "big"), 0)
        self.n2.stop()
        self.wait_connected(self.n1, [self.cluster.names[0]])
        other = data[::-1]
        self.assertEqual(self.n1.request("PUT", "/big/b/y.bin", raw_body=other, headers=hdr).status, 202)
        self.n2.start(port=self.n2.port)
        for n in (self.n1, self.n2):
            self.wait_connected(n, self.cluster.names)
        self.assertEqual(self.sync(self.n1, "big"), 1)
        self.assertEqual(self.sync(self.n1, "big"), 0)
        self.n1.stop()
        try:
            self.wait_connected(self.n2, [self.cluster.names[1]])
            got = self.n2.get("/big/b/y.bin")
            self.assertEqual((got.status, got.data == other), (200, True))
            self.assertEqual(self.n2.get("/big/a/x.bin").data, data)
        finally:
            self.n1.start(port=self.n1.port)
            for n in (self.n1, self.n2):
                self.wait_connected(n, self.cluster.names)

    def test_a_database_with_one_copy_has_nothing_to_push(self):
        self.assertEqual(self.n1.put("/onlyhere?n=1&q=3").status, 201)
        shards = self.n1.get("/onlyhere/_shards").json["shards"]
        self.assertEqual(sorted(len(nodes) for nodes in shards.values()), [1, 1, 1])
        r = self.n1.post("/onlyhere/_sync_shards", raw_body="", headers={"Content-Type": "application/json"}).json
        self.assertEqual(r, {"ok": True, "pushed": []})
        # As CouchDB (issue 28 item 9): more copies than nodes is capped at the node count.
        self.assertEqual(self.n1.put("/toomany?n=3").status, 201)
        shards = self.n1.get("/toomany/_shards").json["shards"]
        self.assertTrue(all(len(nodes) == 2 for nodes in shards.values()), shards)
        self.assertError(self.n1.put("/zero?n=0"), 400, "bad_request")

    def test_rules(self):
        self.n1.put("/rules")
        self.assertError(self.n1.post("/rules/_sync_shards", {}, auth=False), 401, "unauthorized")
        self.assertError(self.n1.get("/rules/_sync_shards"), 405, "method_not_allowed", "Only POST allowed")


class SyncWithPeerDown(NodeTest):
    def test_unavailable_peer_then_resume_from_checkpoint(self):
        cluster = Cluster(2).start()
        n1, n2 = cluster.nodes
        try:
            everyone = sorted(cluster.names)
            self.assertTrue(wait_for(lambda: n1.get("/_membership", fresh=True).json["all_nodes"] == everyone))
            self.assertEqual(n1.put("/pd?q=1").status, 201)
            for i in range(10):
                n1.put(f"/pd/a{i}", {})
            n1.post("/pd/_sync_shards", raw_body="", headers={"Content-Type": "application/json"})
            n2.kill()
            self.assertTrue(wait_for(lambda: n1.get("/_membership", fresh=True).json["all_nodes"] == everyone[:1]))
            for i in range(5):
                n1.put(f"/pd/b{i}", {})
            r = n1.post("/pd/_sync_shards", raw_body="", headers={"Content-Type": "application/json"}).json
            self.assertEqual(r["pushed"], [])  # nobody connected to push to
            n2.start(port=n2.port)
            self.assertTrue(wait_for(lambda: n1.get("/_membership", fresh=True).json["all_nodes"] == everyone))
            r = n1.post("/pd/_sync_shards", raw_body="", headers={"Content-Type": "application/json"}).json
            self.assertEqual([row["docs"] for row in r["pushed"]], [5])  # only what is new since the checkpoint
            self.assertEqual(n2.get("/pd").json["doc_count"], 15)
        finally:
            cluster.cleanup()


class ClusterCompaction(NodeTest):
    """POST /db/_compact compacts every copy, on every node (CouchDB's fabric compacts every shard
    file), and GET /_active_tasks on any node lists every node's tasks."""

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(2, extra_config="[database_compaction]\ndocs_per_step = 20\n").start()
        cls.n1, cls.n2 = cls.cluster.nodes
        everyone = sorted(cls.cluster.names)
        for n in cls.cluster.nodes:
            assert wait_for(lambda n=n: n.get("/_membership", fresh=True).json["all_nodes"] == everyone)
        cls.node = cls.n1

    @classmethod
    def tearDownClass(cls):
        cls.cluster.cleanup()

    def test_compact_reaches_every_copy_and_tasks_show_every_node(self):
        self.assertEqual(self.n1.put("/cc?q=1").status, 201)
        r1 = self.n1.put("/cc/d", {"v": 1})
        r2 = self.n1.put("/cc/d", {"_rev": r1.json["rev"], "v": 2})
        self.assertEqual((r1.status, r2.status), (201, 201))
        docs = [{"_id": f"x{i:05}"} for i in range(4000)]
        self.assertEqual(self.n1.post("/cc/_bulk_docs", {"docs": docs}).status, 201)
        for n in (self.n1, self.n2):  # r=1 reads the node's own copy first
            self.assertEqual(n.get(f"/cc/d?rev={r1.json['rev']}&r=1").json["v"], 1)
        self.assertEqual(self.n2.post("/cc/_compact", {}).status, 202)
        seen = set()
        deadline = time.time() + 120
        while time.time() < deadline:
            tasks = self.n1.get("/_active_tasks").json
            seen |= {t["node"] for t in tasks if t["type"] == "database_compaction"}
            if not tasks and seen:
                break
            time.sleep(0.05)
        self.assertEqual(seen, set(self.cluster.names))
        for n in (self.n1, self.n2):
            self.assertTrue(wait_for(lambda n=n: n.get(f"/cc/d?rev={r1.json['rev']}&r=1").status == 404))
            self.assertEqual(n.get("/cc/d?r=1").json["v"], 2)


if __name__ == "__main__":
    main()
