"""Internal replication over Cap'n Proto between real processes: POST /db/_sync_shards."""
import os
import sys

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

    def test_copies_converge_both_ways_with_conflicts_and_deletions(self):
        for n in (self.n1, self.n2):
            self.assertEqual(n.put("/conv?q=2").status, 201)
        revs = {}
        for i in range(30):
            revs[f"d{i}"] = self.n1.put(f"/conv/d{i}", {"i": i}).json["rev"]
        self.n1.put("/conv/d1", {"_rev": revs["d1"], "i": "updated"})
        self.n1.delete(f"/conv/d2?rev={revs['d2']}")
        self.n2.put("/conv/d3", {"i": "n2 edit"})  # concurrent edit: a conflict once synced
        self.n2.put("/conv/only-n2", {})

        r = self.n1.post("/conv/_sync_shards", raw_body="", headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.json["ok"], r.json)
        self.assertEqual(sum(row["docs"] for row in r.json["pushed"]), 30)
        again = self.n1.post("/conv/_sync_shards", raw_body="", headers={"Content-Type": "application/json"}).json
        self.assertEqual(sum(row["docs"] for row in again["pushed"]), 0)  # checkpointed
        self.n2.post("/conv/_sync_shards", raw_body="", headers={"Content-Type": "application/json"})

        self.assertEqual(self.docs(self.n1, "conv"), self.docs(self.n2, "conv"))
        for n in (self.n1, self.n2):
            self.assertEqual(n.get("/conv/d1").json["i"], "updated")
            self.assertError(n.get("/conv/d2"), 404, "not_found", "deleted")
            self.assertEqual(len(n.get("/conv/d3?conflicts=true").json.get("_conflicts", [])), 1)
            self.assertEqual(n.get("/conv").json["doc_count"], 30)  # 30 - d2 + only-n2

    def test_a_node_without_the_database_is_reported(self):
        self.assertEqual(self.n1.put("/onlyhere").status, 201)
        self.n1.put("/onlyhere/x", {})
        r = self.n1.post("/onlyhere/_sync_shards", raw_body="", headers={"Content-Type": "application/json"}).json
        self.assertFalse(r["ok"])
        self.assertEqual({row["error"] for row in r["pushed"]}, {"not_found"})

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
            for n in (n1, n2):
                n.put("/pd?q=1")
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


if __name__ == "__main__":
    main()
