"""validate_doc_update in a 3-node cluster (issue 30): the decision is the same whichever node
coordinates the write, including a node that holds no copy of the design document's range."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import main  # noqa: E402
from test_membership import ClusterTest, wait_for  # noqa: E402

VDU = "function(newDoc) { if (!newDoc._deleted && !newDoc.owner) throw({forbidden: 'owner required'}); }"


class ValidationEverywhere(ClusterTest):
    NODES, SYNC_INTERVAL_MS = 3, 300

    def test_every_coordinator_runs_the_same_function(self):
        n1, n2, n3 = self.nodes
        self.assertEqual(n1.put("/cv?q=2&n=3").status, 201)
        self.assertTrue(wait_for(lambda: all(n.get("/cv").status == 200 for n in self.nodes), 15))
        r = n1.put("/cv/_design/rules", {"validate_doc_update": VDU})
        self.assertEqual(r.status, 201)
        # Every node refuses at once: the functions are read from every copy that answers (w=2 of
        # 3: the third copy may follow a moment later, and a node may read that one first).
        for i, n in enumerate(self.nodes):
            self.assertError(n.put(f"/cv/x{i}", {"v": 1}), 403, "forbidden", "owner required")
            self.assertIn(n.put(f"/cv/ok{i}", {"owner": "me"}).status, (201, 202))
        # A new version, saved on another node, replaces the old one everywhere.
        vdu2 = "function(newDoc) { if (newDoc.banned) throw({unauthorized: 'banned'}); }"
        self.assertEqual(n2.put("/cv/_design/rules", {"_rev": r.json["rev"], "validate_doc_update": vdu2}).status,
                         201)
        for i, n in enumerate(self.nodes):
            self.assertTrue(wait_for(lambda n=n, i=i: n.put(f"/cv/y{i}", {"v": 1}).status in (201, 202), 10), i)
            self.assertError(n.put(f"/cv/z{i}", {"banned": True}), 401, "unauthorized", "banned")

    def test_a_node_without_a_copy_of_the_design_documents_range_sees_it_too(self):
        n1, n2, n3 = self.nodes
        # n=1, q=1: one node holds everything; the two others coordinate over RPC and learn of the
        # design document by reading it (at most 5 s late, said docs/api.md; here: the first read).
        self.assertEqual(n1.put("/cv1?q=1&n=1").status, 201)
        self.assertTrue(wait_for(lambda: all(n.get("/cv1").status == 200 for n in self.nodes), 15))
        self.assertEqual(n1.put("/cv1/_design/rules", {"validate_doc_update": VDU}).status, 201)
        for i, n in enumerate(self.nodes):
            self.assertTrue(wait_for(lambda n=n, i=i: n.put(f"/cv1/x{i}", {"v": 1}).status == 403, 10), i)
        b = n3.post("/cv1/_bulk_docs", {"docs": [{"_id": "b1", "owner": "a"}, {"_id": "b2"}]})
        self.assertEqual(b.status, 201)
        self.assertTrue(b.json[0]["ok"])
        self.assertEqual(b.json[1]["error"], "forbidden")


class ValidationWithALaggingCopy(ClusterTest):
    """A design document saved while one copy of its range was down: that copy lacks it (no periodic
    sync here) when it comes back. A write coordinated by the node holding no copy must still be
    validated: the validator reads the design documents of every copy, not one per range (the
    reshard drill once saw a VDU saved with 201 let the next write past it)."""
    NODES, SYNC_INTERVAL_MS = 3, 0

    def test_a_copy_that_lags_does_not_hide_the_function(self):
        names = self.cluster.names
        for k in range(2):  # each copy lags once: whichever copy the coordinator would read first
            db = f"lag{k}"
            self.assertEqual(self.nodes[0].put(f"/{db}?q=1&n=2").status, 201)
            self.assertTrue(wait_for(lambda db=db: all(n.get(f"/{db}").status == 200 for n in self.nodes), 15))
            holders = self.nodes[0].get(f"/{db}/_shards").json["shards"]["00000000-ffffffff"]
            lagging, keeping = (self.nodes[names.index(h)] for h in (holders[k], holders[1 - k]))
            [outside] = [n for n, name in zip(self.nodes, names) if name not in holders]
            lagging.stop()
            try:
                self.assertEqual(keeping.put(f"/{db}/_design/rules", {"validate_doc_update": VDU}).status, 202)
            finally:
                lagging.start()
            self.cluster.wait_connected()
            self.assertError(outside.put(f"/{db}/x", {"v": 1}), 403, "forbidden", "owner required")


if __name__ == "__main__":
    main()
