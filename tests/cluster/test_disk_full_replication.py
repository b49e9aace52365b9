"""Replication onto a node whose disk is full (issue 13, point 3): writes through the other node
are acknowledged below quorum (202) instead of failing, internal replication reports
insufficient_storage for that copy and goes on, the full node stays up and serves reads, and once
space is freed the copies converge with nothing lost."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import NodeTest, main, mount_small_tmpfs, unmount  # noqa: E402
from test_membership import Cluster, wait_for  # noqa: E402

PAD = "r" * 3000


class ReplicationOntoFullDisk(NodeTest):
    @classmethod
    def setUpClass(cls):
        cls.mnt, cls.filler = mount_small_tmpfs("4m", 1_800_000)
        cls.cluster = Cluster(2)
        full = cls.cluster.nodes[1]
        full.data_dir = os.path.join(cls.mnt, "data")
        full.own_dir = False
        os.mkdir(full.data_dir)
        cls.cluster.start()
        cls.n1, cls.n2 = cls.cluster.nodes
        cls.node = cls.n1
        names = sorted(cls.cluster.names)
        for n in cls.cluster.nodes:
            assert wait_for(lambda n=n: n.get("/_membership", fresh=True).json["all_nodes"] == names)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.cleanup()
        unmount(cls.mnt)

    def sync(self):
        return self.n1.post("/rep/_sync_shards", raw_body="", headers={"Content-Type": "application/json"})

    def test_full_copy_refuses_and_catches_up(self):
        self.assertEqual(self.n1.put("/rep?q=1&n=2").status, 201)
        acked, below_quorum = [], 0
        for i in range(1500):
            r = self.n1.put(f"/rep/d{i:04d}", {"pad": PAD})
            self.assertIn(r.status, (201, 202), r)  # committed on n1 either way
            acked.append(f"d{i:04d}")
            if r.status == 202:
                below_quorum += 1
                if below_quorum == 20:
                    break
        self.assertEqual(below_quorum, 20, "n2's disk never filled")

        r = self.sync()
        self.assertEqual(r.status, 200, r)
        self.assertFalse(r.json["ok"], r.json)
        (row,) = r.json["pushed"]
        self.assertEqual(row["error"], "insufficient_storage", row)
        self.assertIn("no space left on the device", row["reason"])
        # The full node is up and serves what it has.
        self.assertEqual(self.n2.get("/_up", fresh=True).status, 200)
        self.assertEqual(self.n2.get("/rep/d0000?r=1").status, 200)

        os.remove(self.filler)
        r = self.sync()
        self.assertTrue(r.json["ok"], r.json)
        # n2's own copy (n1 stopped, so nothing else can answer) has every write, across a kill -9.
        self.n2.kill()
        self.n2.start(port=self.n2.port)
        self.n1.stop()
        try:
            self.assertEqual([row["id"] for row in self.n2.get("/rep/_all_docs").json["rows"]], acked)
        finally:
            self.n1.start(port=self.n1.port)


if __name__ == "__main__":
    main()
