"""Partitioned databases in a 3-node cluster (issue 35 point 2): every node learns the database is
partitioned from `_dbs` and places each partition in the range of its CRC32, so documents written
through any node land together, and any node answers a partition's info and `_all_docs` from the
range's copy (its own, or another node's over the node protocol)."""
import os
import sys
import zlib

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import main  # noqa: E402
from test_membership import ClusterTest, wait_for  # noqa: E402


class ClusteredPartitions(ClusterTest):
    NODES, SYNC_INTERVAL_MS = 3, 300

    def test_every_node_places_and_answers_partitions_alike(self):
        n1 = self.nodes[0]
        self.assertEqual(n1.put("/cparts?partitioned=true&q=4&n=1").status, 201)
        self.assertTrue(wait_for(lambda: all(n.get("/cparts").status == 200 for n in self.nodes), 15))
        for n in self.nodes:
            self.assertEqual(n.get("/cparts").json["props"], {"partitioned": True})
        parts = [f"user{k}" for k in range(6)]
        for k, node in enumerate(self.nodes):  # each node writes a third of every partition
            r = node.post("/cparts/_bulk_docs", {"docs": [{"_id": f"{p}:{k}-{i}"} for p in parts for i in range(5)]})
            self.assertEqual(r.status, 201, r)
            self.assertEqual(node.put("/cparts/nopartition", {}).status, 400)
        for p in parts:
            h = zlib.crc32(p.encode())
            for node in self.nodes:
                name = node.get(f"/cparts/_shards/{p}:x").json["range"]
                lo, hi = (int(x, 16) for x in name.split("-"))
                self.assertTrue(lo <= h <= hi, (p, name))
                rows = node.get(f"/cparts/_partition/{p}/_all_docs").json["rows"]
                self.assertEqual(len(rows), 15, (p, node.port))
                self.assertEqual(node.get(f"/cparts/_partition/{p}").json["doc_count"], 15, (p, node.port))
        # A partition's view from every node (the range's copy, its own or another node's).
        views = {"v": {"map": "function(d){ emit(d._id, 1); }", "reduce": "_count"}}
        self.assertEqual(n1.put("/cparts/_design/p", {"views": views}).status, 201)
        for p in parts:
            for node in self.nodes:
                r = node.get(f"/cparts/_partition/{p}/_design/p/_view/v?reduce=false")
                self.assertEqual(r.status, 200, r)
                self.assertEqual(r.json["total_rows"], 15, (p, node.port))
                self.assertTrue(all(row["id"].startswith(p + ":") for row in r.json["rows"]))
                self.assertEqual(node.get(f"/cparts/_partition/{p}/_design/p/_view/v").json["rows"][0]["value"], 15)
        # A range another node holds answered: at least one partition is not on each node.
        shards = n1.get("/cparts/_shards").json["shards"]
        self.assertGreater(len({copies[0] for copies in shards.values()}), 1, shards)


if __name__ == "__main__":
    main()
