"""Metrics of a cluster (issue 12 point 4): internal replication lag per range and peer, a long push
listed in /_active_tasks with its progress, and time-seq bins per shard in /_node/_local/_prometheus."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import main  # noqa: E402
from test_membership import ClusterTest, wait_for  # noqa: E402
from test_metrics import promtool_check, scrape as scrape_all  # noqa: E402


def scrape(node, name):
    """{labels text: value} of metric `name` in the node's Prometheus text."""
    _, values, _ = scrape_all(node)
    prefix = "settee_" + name
    return {k[len(prefix):]: v for k, v in values.items() if k == prefix or k.startswith(prefix + "{")}


class ClusterMetrics(ClusterTest):
    # No periodic sync: the test pushes with POST /db/_sync_shards and sees each push's effect.
    NODES, SYNC_INTERVAL_MS = 2, 0
    EXTRA_CONFIG = "[prometheus]\nper_database = all\n"  # per-database series for every database

    def test_each_member_tells_its_figures_through_any_node(self):
        n1, n2 = self.cluster.nodes
        here = n1.get("/_node/_local/_system").json
        there = n1.get(f"/_node/{self.cluster.names[1]}/_system")  # over RPC (nodeStatus)
        self.assertEqual(there.status, 200, there)
        self.assertEqual(set(there.json), set(here))
        self.assertEqual(there.json["version"], here["version"])
        self.assertGreater(there.json["memory"]["rss"], 1 << 20)
        self.assertGreater(there.json["disk"]["size"], there.json["disk"]["free"])
        self.assertGreater(there.json["disk"]["database_files"], 0)
        # n2's own count, not n1's: n2 answered none of n1's requests.
        before = n2.get("/_node/_local/_system").json["requests"]
        for _ in range(5):
            n1.get("/")
        self.assertEqual(n1.get(f"/_node/{self.cluster.names[1]}/_system").json["requests"], before + 1)
        self.assertEqual(n1.get(f"/_node/{self.cluster.names[0]}/_system").status, 200)
        self.assertError(n1.get("/_node/nobody@127.0.0.1/_system"), 404, "not_found")
        self.assertError(n1.get(f"/_node/{self.cluster.names[1]}/_prometheus"), 404, "not_found")

    def test_a_split_does_not_push_its_range_again(self):
        """Issue 53 item 11: after a split each child takes its parent's checkpoints for the children
        of their targets, so the next internal replication sends only what the other copy lacks."""
        n1, n2 = self.cluster.nodes
        self.assertEqual(n1.put("/resync?q=1&n=2").status, 201)
        docs = [{"_id": f"d{i:04d}", "pad": "x" * 100} for i in range(2000)]
        self.assertEqual(n1.post("/resync/_bulk_docs", {"docs": docs}).status, 201)

        def sent():
            return sum(scrape(n, "internal_replication_docs_total").get("", 0) for n in (n1, n2))

        for n in (n1, n2):  # checkpoints that reach the end on both copies
            self.assertTrue(n.post("/resync/_sync_shards", {}).json["ok"])
        before = sent()
        self.assertGreaterEqual(before, 2000)  # the first push had no checkpoint: every document, each way
        r = n1.post("/_reshard/jobs", {"type": "split", "db": "resync"})
        self.assertEqual(r.status, 201, r.json)
        ids = {j["id"] for j in r.json}
        self.assertTrue(wait_for(lambda: all(j["job_state"] == "completed" for j in n1.get("/_reshard/jobs").json["jobs"]
                                             if j["id"] in ids), 60), n1.get("/_reshard/jobs").json)
        self.assertTrue(wait_for(lambda: all(len(n.get("/resync/_shards").json["shards"]) == 2 for n in (n1, n2)), 10))
        self.assertLessEqual(sent() - before, 10)  # the split's own pushes: what its copies lacked
        split_done = sent()
        self.assertEqual(n2.put("/resync/after", {}).status, 201)  # one new document, on both copies
        for n in (n1, n2):
            r = n.post("/resync/_sync_shards", {})
            self.assertTrue(r.json["ok"], r.json)
            self.assertEqual([p["docs"] for p in r.json["pushed"] if p["range"] == "00000000-7fffffff"], [0])
        # The new document at most, each way (it was written to both copies already).
        self.assertLessEqual(sent() - split_done, 2)
        for n in (n1, n2):
            self.assertEqual(n.get("/resync").json["doc_count"], 2001)

    def test_lag_sync_task_and_time_seq(self):
        n1, n2 = self.cluster.nodes
        peer = self.cluster.names[1]
        self.assertEqual(n1.put("/m?q=1&n=2").status, 201)
        for i in range(5):
            self.assertEqual(n1.put(f"/m/d{i}", {"i": i}).status, 201)
        key = f'{{db="m",peer="{peer}",range="00000000-ffffffff"}}'
        self.assertTrue(n1.post("/m/_sync_shards", {}).json["ok"])
        self.assertEqual(scrape(n1, "internal_replication_pending_changes").get(key), 0.0)
        # Calls to n2 (the writes' copies, the push) answered, with their latency, by peer.
        answered = scrape(n1, "rpc_duration_seconds_count")[f'{{peer="{peer}"}}']
        self.assertGreaterEqual(answered, 1)
        self.assertEqual(scrape(n1, "rpc_duration_seconds_bucket")[f'{{peer="{peer}",le="+Inf"}}'], answered)

        # n2 down: n1's copy runs ahead and the gauge says by how much.
        n2.stop()
        pad = "x" * 20000
        for b in range(3):
            r = n1.post("/m/_bulk_docs", {"docs": [{"_id": f"b{b}-{i}", "pad": pad} for i in range(1000)]})
            self.assertIn(r.status, (201, 202), r)
        n1.post("/m/_sync_shards", {})
        self.assertEqual(scrape(n1, "internal_replication_pending_changes").get(key), 3000.0)
        self.assertEqual(scrape(n1, "internal_replication_peer_pending_changes").get(f'{{peer="{peer}"}}'), 3000.0)
        shards = [k for k in scrape(n1, "time_seq_bins") if "/m." in k]
        self.assertEqual(len(shards), 1, shards)
        shard = shards[0]
        self.assertRegex(shard, r'^\{shard="shards/00000000-ffffffff/m\.\d+"\}$')
        self.assertGreaterEqual(scrape(n1, "time_seq_bins")[shard], 1)
        self.assertEqual(scrape(n1, "time_seq_newest_bin_changes")[shard], 3005.0)

        # Back up: the push of 3,000 changes (60 MB) shows in /_active_tasks while it runs.
        n2.start(port=n2.port)
        self.assertTrue(wait_for(lambda: peer in n1.get("/_membership", fresh=True).json["all_nodes"], 20))
        done = {}
        pusher = threading.Thread(target=lambda: done.update(r=n1.call("POST", "/m/_sync_shards", {})))
        pusher.start()
        seen = []
        while pusher.is_alive():
            seen += [t for t in n1.get("/_active_tasks", fresh=True).json if t.get("type") == "internal_replication"]
            time.sleep(0.01)
        pusher.join()
        self.assertEqual(done["r"][0], 200)
        self.assertTrue(done["r"][1]["ok"], done["r"])
        self.assertTrue(seen, "the push never showed in /_active_tasks")
        t = seen[-1]
        self.assertEqual((t["database"], t["range"], t["source"], t["target"], t["total_changes"]),
                         ("m", "00000000-ffffffff", self.cluster.names[0], peer, 3000))
        self.assertTrue(0 <= t["progress"] <= 100 and 0 <= t["changes_done"] <= 3000, t)
        self.assertFalse([t for t in n1.get("/_active_tasks", fresh=True).json if t.get("type") == "internal_replication"])
        self.assertEqual(scrape(n1, "internal_replication_pending_changes").get(key), 0.0)
        self.assertEqual(n2.get("/m", fresh=True).json["doc_count"], 3005)

        promtool_check(self, scrape_all(n1)[0].raw)  # every per-database, per-range and per-peer series
        # A deleted database leaves the gauge.
        self.assertEqual(n1.delete("/m").status, 200)
        self.assertNotIn(key, scrape(n1, "internal_replication_pending_changes"))


if __name__ == "__main__":
    main()
