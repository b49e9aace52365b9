"""Per-shard feeds on a 3-node cluster (spec 11.3): every node serves a shard's feed from the same
copy (the first in the shard map), so a consumer may ask any node with the seqs it has; when that
copy's node is down another copy serves it, from its start, and the response says so."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import NodeTest, main  # noqa: E402
from test_membership import Cluster, wait_for  # noqa: E402


class ShardFeedsCluster(NodeTest):
    def setUp(self):
        self.cluster = Cluster(3).start()
        self.node = self.cluster.nodes[0]
        names = sorted(self.cluster.names)
        for n in self.cluster.nodes:
            self.assertTrue(wait_for(lambda n=n: n.get("/_membership", fresh=True).json["all_nodes"] == names))

    def tearDown(self):
        self.cluster.cleanup()

    def test_every_node_serves_a_shard_from_its_first_copy(self):
        n1, n3 = self.cluster.nodes[0], self.cluster.nodes[2]
        self.assertEqual(n1.put("/sf?q=2&n=3").status, 201)
        docs = [{"_id": f"d{i}", "i": i} for i in range(40)]
        self.assertEqual(n1.post("/sf/_bulk_docs", {"docs": docs}).status, 201)
        # The copies' numberings part: edits n3 misses reach it later as one change per document.
        n3.kill()
        for d in docs[:20]:
            rev = n1.get(f"/sf/{d['_id']}").json["_rev"]
            for _ in range(2):
                rev = n1.put(f"/sf/{d['_id']}", {"_rev": rev, "i": d["i"]}).json["rev"]
        n3.start(port=n3.port)
        self.assertTrue(wait_for(lambda: n1.get("/_membership", fresh=True).json["all_nodes"] == sorted(self.cluster.names)))
        self.assertTrue(wait_for(lambda: n1.post("/sf/_sync_shards", raw_body="",
                                                 headers={"Content-Type": "application/json"}).json["ok"]))
        metas = [n.get("/sf/_changes/_meta").json for n in self.cluster.nodes]
        ids = [s["id"] for s in metas[0]["shards"]]
        self.assertTrue(all([s["id"] for s in m["shards"]] == ids for m in metas))
        seen = []
        for shard in ids:
            answers = [n.get(f"/sf/_changes/{shard}?since=3").json for n in self.cluster.nodes]
            self.assertEqual(answers[1], answers[0])
            self.assertEqual(answers[2], answers[0])
            seen += [r["id"] for r in n1.get(f"/sf/_changes/{shard}").json["results"]]
        self.assertEqual(sorted(seen), sorted(d["_id"] for d in docs))

        # The first copy of the first shard goes down: the others serve its feed from their start.
        shard, rng = ids[0], metas[0]["shards"][0]["range"]
        first = n1.get("/sf/_shards").json["shards"][rng][0]
        down = self.cluster.names.index(first)
        self.cluster.nodes[down].kill()
        alive = self.cluster.nodes[(down + 1) % 3]
        whole = [r["id"] for r in alive.get(f"/sf/_changes/{shard}").json["results"]]
        r = alive.get(f"/sf/_changes/{shard}?since=3")
        self.assertEqual(r.status, 200)
        self.assertEqual(json.loads(r.header("X-Settee-Since-Resolution")), {rng: "rewound"})
        self.assertEqual([row["id"] for row in r.json["results"]], whole)  # more rows, never fewer
        self.assertIsNone(alive.get(f"/sf/_changes/{shard}?since=0").header("X-Settee-Since-Resolution"))


if __name__ == "__main__":
    main()
