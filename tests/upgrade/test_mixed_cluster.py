"""A mixed 3-node cluster: one v0.1.0 node and two of this release (issue 5 point 5c)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cluster"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import NodeTest, main  # noqa: E402
from releases import binary  # noqa: E402
from test_membership import Cluster, wait_for  # noqa: E402


class MixedCluster(NodeTest):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(3, sync_interval_ms=300)
        cls.cluster.nodes[0].bin = binary("v0.1.0")
        cls.cluster.start()
        cls.old, cls.n2, cls.n3 = cls.cluster.nodes
        cls.node = cls.n2
        names = sorted(cls.cluster.names)
        for n in cls.cluster.nodes:
            assert wait_for(lambda n=n: n.get("/_membership", fresh=True).json["all_nodes"] == names, 20)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.cleanup()

    def test_reads_writes_feeds_and_time_seq_across_releases(self):
        self.assertEqual(self.old.get("/").json["vendor"]["version"], "0.1.0")
        self.assertEqual(self.n2.put("/mixed?q=2").status, 201)
        for i in range(12):
            r = self.cluster.nodes[i % 3].put(f"/mixed/d{i:02d}", {"i": i})
            self.assertEqual(r.status, 201, r)
        ids = [f"d{i:02d}" for i in range(12)]
        for n in self.cluster.nodes:
            # w=2 of 3: the third copy of the last writes may land a moment after their 201.
            self.assertTrue(wait_for(lambda n=n: [r["id"] for r in n.get("/mixed/_all_docs").json["rows"]] == ids, 10))
            self.assertEqual(sorted(r["id"] for r in n.get("/mixed/_changes").json["results"]), ids)
            self.assertEqual(n.get("/mixed/d07").json["i"], 7)

        # _time_seq: the old node's copies cannot answer and are listed as such.
        ts = self.n2.get("/mixed/_time_seq").json
        old_name = self.cluster.names[0]
        self.assertEqual(sorted({u["node"] for u in ts["unavailable"]}), [old_name])
        self.assertEqual(sorted(u["range"] for u in ts["unavailable"]), ["00000000-7fffffff", "80000000-ffffffff"])
        for copies in ts["time_seq"].values():
            self.assertEqual(sorted(copies), sorted(self.cluster.names[1:]))
        # since=<time>: every change at or after the time (here: all of them), on every new node.
        for n in (self.n2, self.n3):
            got = sorted(r["id"] for r in n.get("/mixed/_changes?since=2025-09-01T00:00:00Z").json["results"])
            self.assertEqual(got, ids)
            self.assertEqual(n.get("/mixed/_changes?since=2999-01-01T00:00:00Z").json["results"], [])


if __name__ == "__main__":
    main()
