"""Shard splitting in a 3-node cluster (issue 10): a node splits the ranges whose copies are all its
own while every node takes writes for them; the other nodes' coordinators retry what the sealed
parent refused once the new map reaches them (pushed at the switch), so no write fails or is lost,
and a feed on another node continues from a token taken before the split without rewinding.
A range with copies on several nodes splits on every node at once, led by the node asked."""
import http.client
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import OwnNodesTest, main  # noqa: E402
from test_membership import Cluster, ClusterTest, Writers, wait_for  # noqa: E402


class ReshardCluster(ClusterTest):
    NODES, SYNC_INTERVAL_MS = 3, 500

    def test_a_node_splits_its_own_ranges_while_every_node_writes(self):
        nodes, names = self.cluster.nodes, self.cluster.names
        self.assertEqual(nodes[0].put("/rsc?q=3&n=1").status, 201)
        shards = nodes[0].get("/rsc/_shards").json["shards"]
        owner = {rng: names.index(copies[0]) for rng, copies in shards.items()}
        pre = [{"_id": f"pre{i:03d}"} for i in range(300)]
        self.assertEqual(nodes[1].post("/rsc/_bulk_docs", {"docs": pre}).status, 201)
        token = nodes[2].get("/rsc/_changes").json["last_seq"]

        writers = Writers(nodes, "rsc")
        acked, failures = writers.acked, writers.failures

        writers.start()
        time.sleep(0.3)
        # Every range, split on the node holding it, one node at a time (see docs/api.md).
        for rng, k in owner.items():
            r = nodes[k].post("/_reshard/jobs", {"type": "split", "db": "rsc", "range": rng})
            self.assertEqual(r.status, 201, r.json)
            job = r.json[0]["id"]
            self.assertTrue(wait_for(lambda k=k, job=job: nodes[k].get(f"/_reshard/jobs/{job}").json["job_state"] == "completed", 30))
            # The next node splits once the new map has reached it.
            self.assertTrue(wait_for(lambda rng=rng: all(rng not in n.get("/rsc/_shards").json["shards"] for n in nodes), 10))
        time.sleep(0.3)
        writers.stop()
        self.assertEqual(failures, [])
        want = {d["_id"] for d in pre} | set(acked)
        for n in nodes:  # every node sees the new map and every acknowledged write
            self.assertTrue(wait_for(lambda n=n: n.get("/rsc").json["cluster"]["q"] == 6, 10))
            rows = {r["id"]: r["value"]["rev"] for r in n.get("/rsc/_all_docs").json["rows"]}
            self.assertEqual(set(rows), want)
            for doc_id, rev in acked.items():
                self.assertEqual(rows[doc_id], rev)
        # A token from before the split, on another node: exactly what came after it, once each.
        r = nodes[2].get(f"/rsc/_changes?since={token}")
        self.assertIsNone(r.header("X-Settee-Since-Resolution"))
        ids = [row["id"] for row in r.json["results"]]
        self.assertEqual(len(ids), len(set(ids)))
        self.assertEqual(set(ids), set(acked))

    def test_a_range_with_copies_on_three_nodes_splits_on_every_node(self):
        """One job per copy, the node asked leading: every copy is sealed, takes its last pass and
        reports its end seq, then one _dbs edit switches them all, while every node writes."""
        nodes, names = self.cluster.nodes, self.cluster.names
        db = "rsc3"
        self.assertEqual(nodes[0].put(f"/{db}?q=1&n=3").status, 201)
        pre = [{"_id": f"pre{i:03d}"} for i in range(500)]
        self.assertEqual(nodes[1].post(f"/{db}/_bulk_docs", {"docs": pre}).status, 201)
        self.assertTrue(wait_for(lambda: all(n.get(f"/{db}").json["doc_count"] == 500 for n in nodes), 15))
        tokens = [n.get(f"/{db}/_changes").json["last_seq"] for n in nodes]
        writers = Writers(nodes, db)
        acked, failures = writers.acked, writers.failures

        writers.start()
        time.sleep(0.3)
        r = nodes[0].post("/_reshard/jobs", {"type": "split", "db": db})
        self.assertEqual(r.status, 201, r.json)
        self.assertEqual(sorted(e["node"] for e in r.json), sorted(names))
        for e in r.json:
            self.assertTrue(wait_for(lambda e=e: nodes[0].get(f"/_reshard/jobs/{e['id']}").json["job_state"] == "completed", 60),
                            nodes[0].get(f"/_reshard/jobs/{e['id']}").json)
        time.sleep(0.3)
        writers.stop()
        self.assertEqual(failures, [])
        want = {d["_id"] for d in pre} | set(acked)
        for n in nodes:
            self.assertTrue(wait_for(lambda n=n: len(n.get(f"/{db}/_shards").json["shards"]) == 2, 10))
            for copies in n.get(f"/{db}/_shards").json["shards"].values():
                self.assertEqual(sorted(copies), sorted(names))
            # A write a quorum acknowledged while the third copy was already sealed reaches that
            # copy's children by internal replication, as between any copies.
            wait_for(lambda n=n: {row["id"] for row in n.get(f"/{db}/_all_docs").json["rows"]} == want, 15)
            rows = {row["id"]: row["value"]["rev"] for row in n.get(f"/{db}/_all_docs").json["rows"]}
            self.assertEqual(set(rows), want)
            for doc_id, rev in acked.items():
                self.assertEqual(rows[doc_id], rev)
        meta = nodes[0].get(f"/{db}/_changes/_meta").json["shards"]
        [parent] = [s for s in meta if s["state"] == "closed"]
        self.assertEqual(len(parent["children"]), 2)
        # Each node's token from before: exact on its own node's children, every write once.
        for n, token in zip(nodes, tokens):
            r = n.get(f"/{db}/_changes?since={token}")
            self.assertIsNone(r.header("X-Settee-Since-Resolution"))
            ids = [row["id"] for row in r.json["results"]]
            self.assertEqual(len(ids), len(set(ids)))
            self.assertEqual(set(ids), set(acked))
        # Every node's parent copy went.
        rng, suffix = parent["id"].split(".")
        for n in nodes:
            self.assertFalse(os.path.exists(os.path.join(n.data_dir, "shards", rng, f"{db}.{suffix}")))

    def test_the_resharding_state_is_the_clusters(self):
        """PUT /_reshard/state on any node sets every member's (CouchDB's mem3_reshard_api
        multicall): a split of copies on three nodes, created while stopped, waits on every node
        and goes once any node says running."""
        nodes = self.cluster.nodes
        db = "rsstate"
        self.assertEqual(nodes[0].put(f"/{db}?q=1&n=3").status, 201)
        self.assertEqual(nodes[1].put("/_reshard/state", {"state": "stopped", "reason": "upgrade"}).json, {"ok": True})
        for n in nodes:
            self.assertEqual(n.get("/_reshard/state").json, {"state": "stopped", "reason": "upgrade"})
            self.assertEqual(n.get("/_reshard").json["state"], "stopped")
        r = nodes[0].post("/_reshard/jobs", {"type": "split", "db": db})
        self.assertEqual(r.status, 201, r.json)
        self.assertEqual(len(r.json), 3)
        jobs = [e["id"] for e in r.json]
        state = lambda: sorted(nodes[2].get(f"/_reshard/jobs/{j}").json["job_state"] for j in jobs)  # noqa: E731
        self.assertEqual(state(), ["stopped"] * 3)  # made stopped, on every node
        self.assertEqual(len(nodes[2].get(f"/{db}/_shards").json["shards"]), 1)
        self.assertEqual(nodes[2].put("/_reshard/state", {"state": "running"}).json, {"ok": True})
        for n in nodes:
            self.assertEqual(n.get("/_reshard/state").json, {"state": "running", "reason": None})
        self.assertTrue(wait_for(lambda: state() == ["completed"] * 3, 60), state())
        self.assertTrue(wait_for(lambda: all(len(n.get(f"/{db}/_shards").json["shards"]) == 2 for n in nodes), 10))
        for j in jobs:
            self.assertEqual(nodes[0].delete(f"/_reshard/jobs/{j}").status, 200)


class SplitOfCopiesSurvivesKill(OwnNodesTest):
    """A split of a range with three copies, its leader killed once every copy is sealed (before the
    map switched), or a follower killed while copying: on restart the jobs go on, the seals are
    lifted or the switch happens, and nothing acknowledged is lost."""

    def split_through(self, victim, failpoint):
        cluster = Cluster(3, sync_interval_ms=300).start().wait_connected()
        self.addCleanup(cluster.cleanup)
        nodes = cluster.nodes
        db = "rskill3"
        self.assertEqual(nodes[0].put(f"/{db}?q=1&n=3").status, 201)
        docs = [{"_id": f"d{i:04d}"} for i in range(2000)]
        self.assertEqual(nodes[0].post(f"/{db}/_bulk_docs", {"docs": docs}).status, 201)
        self.assertTrue(wait_for(lambda: all(n.get(f"/{db}").json["doc_count"] == 2000 for n in nodes), 15))
        v = nodes[victim]
        v.stop()
        v.env = {"SETTEE_FAILPOINT": failpoint}
        v.start()
        cluster.wait_connected()
        r = nodes[0].post("/_reshard/jobs", {"type": "split", "db": db})
        self.assertEqual(r.status, 201, r.json)
        v.proc.wait(timeout=60)
        self.assertEqual(v.proc.returncode, 70)
        v.stop()
        v.env = {}
        v.start()
        cluster.wait_connected()
        for e in r.json:
            self.assertTrue(wait_for(lambda e=e: nodes[1].get(f"/_reshard/jobs/{e['id']}").json.get("job_state") == "completed", 90),
                            nodes[1].get(f"/_reshard/jobs/{e['id']}").json)
        for n in nodes:
            self.assertTrue(wait_for(lambda n=n: len(n.get(f"/{db}/_shards").json["shards"]) == 2, 10))
            self.assertTrue(wait_for(lambda n=n: n.get(f"/{db}").json["doc_count"] == 2000, 10))
        for n in nodes:
            self.assertEqual(n.put(f"/{db}/after-{n.port}", {}).status, 201)  # no copy stayed sealed

    def test_leader_killed_with_every_copy_sealed(self):
        self.split_through(0, "update_shardmap:sealed")

    def test_follower_killed_while_copying(self):
        self.split_through(2, "topoff1")


if __name__ == "__main__":
    main()
