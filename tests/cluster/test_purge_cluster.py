"""Purge on a 3-node cluster (issue 35 point 1): a purge reaches every copy it can (201 at w, 202
below); a copy that was down learns it from internal replication, which carries purges before
documents both ways, so the copy that missed it neither keeps the purged revisions nor brings them
back to the others, nor does a read's repair. Sync is off: the test drives internal replication."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import NodeTest, main  # noqa: E402
from test_membership import Cluster, wait_for  # noqa: E402


def connected(node):
    return node.get("/_membership", fresh=True).json["all_nodes"]


def sync(node, db):
    r = node.post(f"/{db}/_sync_shards", raw_body="", headers={"Content-Type": "application/json"})
    assert r.status in (200, 202), r


class PurgeCluster(NodeTest):
    def setUp(self):
        self.cluster = Cluster(3).start()
        self.n1, self.n2, self.n3 = self.cluster.nodes
        self.node = self.n1
        self.cluster.wait_connected()

    def tearDown(self):
        self.cluster.cleanup()

    def leaves(self, node, doc_id):
        """The leaves of `node`'s own copy (r=1 reads this node's copy first), or None."""
        r = node.get(f"/pdb/{doc_id}?r=1&open_revs=all")
        if r.status == 404:
            return None
        return sorted(row["ok"]["_rev"] for row in r.json if "ok" in row)

    def test_a_node_down_during_a_purge_learns_it_and_brings_nothing_back(self):
        self.assertEqual(self.n1.put("/pdb?q=2&n=3").status, 201)
        self.assertTrue(wait_for(lambda: all(n.get("/pdb").status == 200 for n in self.cluster.nodes)))
        gone = self.n1.put("/pdb/gone", {"secret": 1}).json["rev"]
        first = self.n1.put("/pdb/conflicted", {"v": 1}).json["rev"]
        keep = self.n1.put("/pdb/conflicted", {"v": 2, "_rev": first}).json["rev"]
        branch = "2-" + "b" * 32  # a sibling of keep
        r = self.n1.post("/pdb/_bulk_docs", {"new_edits": False, "docs": [
            {"_id": "conflicted", "_rev": branch, "_revisions": {"start": 2, "ids": ["b" * 32, first.split("-")[1]]},
             "v": "branch"}]})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(self.n1.put("/pdb/other", {}).status, 201)
        for n in self.cluster.nodes:  # every copy has everything (writes go to all three)
            self.assertTrue(wait_for(lambda n=n: self.leaves(n, "conflicted") == sorted([keep, branch])))

        self.n3.stop()
        self.assertTrue(wait_for(lambda: connected(self.n1) == sorted(self.cluster.names[:2])))
        r = self.n1.post("/pdb/_purge", {"gone": [gone], "conflicted": [branch]})
        self.assertEqual((r.status, r.json), (201, {"purge_seq": None,
                                                    "purged": {"gone": [gone], "conflicted": [branch]}}))
        r = self.n2.post("/pdb/_purge?w=3", {"other": ["1-" + "0" * 32]})
        self.assertEqual((r.status, r.json["purged"]), (202, {"other": []}))  # 2 copies of 3
        for n in (self.n1, self.n2):
            self.assertIsNone(self.leaves(n, "gone"))
            self.assertEqual(self.leaves(n, "conflicted"), [keep])
            self.assertEqual(n.get("/pdb/conflicted?conflicts=true").json.get("_conflicts"), None)
            self.assertEqual([c["id"] for c in n.get("/pdb/_changes").json["results"]].count("gone"), 0)

        # n3 comes back holding what it had; it syncs FIRST: it takes the others' purges before it
        # pushes its documents, so nothing comes back to them.
        self.n3.start(port=self.n3.port)
        self.cluster.wait_connected()
        self.assertEqual(self.leaves(self.n3, "gone"), [gone])  # its own copy, not synced yet
        sync(self.n3, "pdb")
        for n in self.cluster.nodes:
            self.assertIsNone(self.leaves(n, "gone"), n.port)
            self.assertEqual(self.leaves(n, "conflicted"), [keep], n.port)
            self.assertEqual(n.get("/pdb/gone").status, 404)
            infos = n.get("/pdb/_purged_infos").json["purged_infos"]
            self.assertEqual(sorted(i["id"] for i in infos), ["conflicted", "gone", "other"], n.port)
            self.assertEqual(n.get("/pdb").json["doc_count"], 2)
        # A sync the other way after it brings nothing back either, and applies nothing twice.
        sync(self.n1, "pdb")
        sync(self.n2, "pdb")
        for n in self.cluster.nodes:
            self.assertIsNone(self.leaves(n, "gone"))
            self.assertEqual(len(n.get("/pdb/_purged_infos").json["purged_infos"]), 3)

    def test_a_read_repair_from_a_copy_that_missed_a_purge_does_not_undo_it(self):
        self.assertEqual(self.n1.put("/pdb?q=1&n=3").status, 201)
        self.assertTrue(wait_for(lambda: all(n.get("/pdb").status == 200 for n in self.cluster.nodes)))
        rev = self.n1.put("/pdb/d", {"x": 1}).json["rev"]
        self.assertTrue(wait_for(lambda: all(self.leaves(n, "d") == [rev] for n in self.cluster.nodes)))
        self.n3.stop()
        self.assertTrue(wait_for(lambda: connected(self.n1) == sorted(self.cluster.names[:2])))
        self.assertEqual(self.n1.post("/pdb/_purge", {"d": [rev]}).status, 201)
        self.n3.start(port=self.n3.port)
        self.cluster.wait_connected()
        # A quorum read on n3 merges its stale copy with another: the repair it writes is refused
        # by the copies that purged the revision.
        self.n3.get("/pdb/d?r=3")
        for n in (self.n1, self.n2):
            self.assertIsNone(self.leaves(n, "d"), n.port)
        sync(self.n1, "pdb")
        self.assertIsNone(self.leaves(self.n3, "d"))


class PurgeThroughMove(NodeTest):
    def setUp(self):
        self.cluster = Cluster(3, sync_interval_ms=300).start()
        self.nodes, self.names = self.cluster.nodes, self.cluster.names
        self.node = self.nodes[0]
        self.cluster.wait_connected()

    def tearDown(self):
        self.cluster.cleanup()

    def test_a_moved_copy_keeps_the_purges_and_its_purge_log(self):
        from test_move_cluster import wait_job
        n1 = self.nodes[0]
        self.assertEqual(n1.put("/pmv?q=1&n=2").status, 201)
        [copies] = n1.get("/pmv/_shards").json["shards"].values()
        [spare] = [n for n in self.names if n not in copies]
        moving = copies[0]
        revs = {f"d{i}": n1.put(f"/pmv/d{i}", {"i": i}).json["rev"] for i in range(20)}
        purged = {f"d{i}": [revs[f"d{i}"]] for i in range(0, 20, 2)}
        self.assertEqual(n1.post("/pmv/_purge", purged).status, 201)
        [shard] = [s["id"] for s in n1.get("/pmv/_changes/_meta").json["shards"]]
        rng, suffix = shard.split(".")
        r = n1.post("/_reshard/jobs", {"type": "move", "shard": f"shards/{rng}/pmv.{suffix}", "source": moving,
                                       "target": spare})
        self.assertEqual(r.status, 201, r.json)
        self.assertEqual(wait_job(n1, r.json[0]["id"])["job_state"], "completed")
        target = self.nodes[self.names.index(spare)]
        self.assertTrue(wait_for(lambda: spare in target.get("/pmv/_shards").json["shards"][rng]))
        # The moved copy (read alone: r=1 on its node) has neither the purged documents nor lost
        # the requests: a later sync brings nothing back either way.
        self.assertEqual(target.get("/pmv").json["doc_count"], 10)
        self.assertEqual(target.get("/pmv/d0?r=1").status, 404)
        self.assertEqual(len(target.get("/pmv/_purged_infos").json["purged_infos"]), 10)
        self.assertEqual(target.post("/pmv/_purge", {"d1": [revs["d1"]]}).json["purged"], {"d1": [revs["d1"]]})
        for node in self.nodes:
            self.assertTrue(wait_for(lambda node=node: node.get("/pmv/d1").status == 404
                                     and node.get("/pmv").json["doc_count"] == 9, 15), node.port)
        # The moved copy alone (the other one's node stopped) still lists every request.
        staying = self.nodes[self.names.index(copies[1])]
        staying.stop()
        self.assertTrue(wait_for(lambda: copies[1] not in target.get("/_membership", fresh=True).json["all_nodes"]))
        infos = target.get("/pmv/_purged_infos").json["purged_infos"]
        self.assertEqual(sorted(i["id"] for i in infos), sorted(list(purged) + ["d1"]))


if __name__ == "__main__":
    main()
