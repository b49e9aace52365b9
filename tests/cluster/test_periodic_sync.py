"""Copies converge without being asked: the periodic sweep ([cluster] sync_interval_ms)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import Node, NodeTest, free_port, main  # noqa: E402
from test_membership import wait_for  # noqa: E402


class PeriodicSync(NodeTest):
    @classmethod
    def setUpClass(cls):
        names = ["p1@127.0.0.1", "p2@127.0.0.1"]
        ports = [free_port(), free_port()]
        cls.nodes = []
        for i in range(2):
            other = 1 - i
            cls.nodes.append(Node(config=f"[node]\nname = {names[i]}\n[cluster]\nrpc_port = {ports[i]}\n"
                                         f"seeds = {names[other]}:{ports[other]}\nsync_interval_ms = 200\n").start())
        cls.node = cls.nodes[0]
        assert wait_for(lambda: len(cls.nodes[0].get("/_membership", fresh=True).json["all_nodes"]) == 2)

    @classmethod
    def tearDownClass(cls):
        for n in cls.nodes:
            n.cleanup()

    def test_databases_are_created_and_deleted_cluster_wide(self):
        p1, p2 = self.nodes
        self.assertEqual(p1.put("/cw?q=3").status, 201)
        p1.put("/cw/doc", {"x": 1})
        self.assertTrue(wait_for(lambda: "cw" in p2.get("/_all_dbs", fresh=True).json, 20))
        self.assertTrue(wait_for(lambda: p2.get("/cw/doc", fresh=True).status == 200, 20))
        info1, info2 = p1.get("/cw").json, p2.get("/cw").json
        self.assertEqual(info2["cluster"]["q"], 3)
        self.assertEqual(info1["instance_start_time"], info2["instance_start_time"])  # same incarnation
        self.assertEqual(p2.delete("/cw").status, 200)
        self.assertTrue(wait_for(lambda: "cw" not in p1.get("/_all_dbs", fresh=True).json, 20))
        self.assertError(p1.get("/cw/doc", fresh=True), 404, "not_found", "Database does not exist.")
        leftovers = [f for root, _, files in os.walk(os.path.join(p1.data_dir, "shards"))
                     for f in files if f.startswith("cw.")]
        self.assertEqual(leftovers, [])

    def test_writes_on_either_node_reach_the_other(self):
        p1, p2 = self.nodes
        self.assertEqual(p1.put("/auto?q=2").status, 201)
        self.assertTrue(wait_for(lambda: "auto" in p2.get("/_all_dbs", fresh=True).json, 20))
        for i in range(20):
            p1.put(f"/auto/from-p1-{i}", {"i": i})
        p2.put("/auto/from-p2", {})
        self.assertTrue(wait_for(lambda: p2.get("/auto", fresh=True).json["doc_count"] == 21, 20),
                        p2.get("/auto").json)
        self.assertTrue(wait_for(lambda: p1.get("/auto", fresh=True).json["doc_count"] == 21, 20),
                        p1.get("/auto").json)
        rev = p2.get("/auto/from-p1-3").json["_rev"]
        p2.put("/auto/from-p1-3", {"_rev": rev, "i": "edited on p2"})
        self.assertTrue(wait_for(lambda: p1.get("/auto/from-p1-3", fresh=True).json.get("i") == "edited on p2", 20))


if __name__ == "__main__":
    main()
