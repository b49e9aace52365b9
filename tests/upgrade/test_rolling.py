"""Rolling upgrade of a 3-node cluster from v0.1.0 (and from v0.2.0 and v0.3.0) to this release, one
node at a time, under a steady write load, then a rolling downgrade back (issue 5 point 5d): no
acknowledged write is lost, and no request fails except those sent to the node being restarted."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cluster"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import BIN, Node, NodeTest, main  # noqa: E402
from releases import binary  # noqa: E402
from test_membership import Cluster, wait_for  # noqa: E402

# Releases before 0.3 cannot prove the cluster secret: nodes of this release let them in only with
# this switch, which an upgrade or downgrade sets on every node until the last old node is gone.
LEGACY = "accept_legacy_peers = true\n"


class Rolling(NodeTest):
    OLD = "v0.1.0"

    @classmethod
    def setUpClass(cls):
        cls.old_bin = binary(cls.OLD)
        cls.cluster = Cluster(3, sync_interval_ms=300, extra_config=LEGACY)
        for n in cls.cluster.nodes:
            n.bin = cls.old_bin
        cls.cluster.start()
        cls.node = cls.cluster.nodes[0]

    @classmethod
    def tearDownClass(cls):
        cls.cluster.cleanup()

    def all_connected(self):
        names = sorted(self.cluster.names)
        for n in self.cluster.nodes:
            self.assertTrue(wait_for(lambda n=n: n.get("/_membership", fresh=True).json["all_nodes"] == names, 30))

    def restart(self, k, bin):
        node = self.cluster.nodes[k]
        self.restarting[k] = True
        node.stop()
        node.bin = bin
        node.start(port=node.port)
        self.all_connected()
        self.restarting[k] = False
        time.sleep(0.5)  # let the load run against the whole cluster for a while

    def test_upgrade_then_downgrade_under_load(self):
        self.all_connected()
        self.assertEqual(self.node.put("/rolling?q=2").status, 201)
        self.restarting = [False, False, False]
        acked, unexpected, expected_failures = {}, [], [0]
        lock, stop = threading.Lock(), threading.Event()

        def writer(k):
            w = Node.__new__(Node)
            w.__dict__.update(self.cluster.nodes[k].__dict__)
            w.conn = None
            for i in range(1_000_000):
                if stop.is_set():
                    return
                doc_id = f"w{k}-{i}"
                during = self.restarting[k]
                try:
                    r = w.put(f"/rolling/{doc_id}", {"k": k, "i": i})
                    ok = r.status in (201, 202)
                except (OSError, ValueError):
                    w.conn, r, ok = None, None, False
                during = during or self.restarting[k]
                with lock:
                    if ok:
                        acked[doc_id] = r.json["rev"]
                    elif during:
                        expected_failures[0] += 1
                    else:
                        unexpected.append((doc_id, r.status if r else "connection"))
                if not ok:
                    time.sleep(0.05)

        threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        try:
            time.sleep(0.5)
            for k in range(3):  # upgrade, one node at a time
                self.restart(k, BIN)
            versions = {n.get("/").json["vendor"]["version"] for n in self.cluster.nodes}
            self.assertEqual(len(versions), 1)
            self.assertNotEqual(versions, {self.OLD[1:]})
            for k in range(3):  # and back down
                self.restart(k, self.old_bin)
            self.assertEqual({n.get("/").json["vendor"]["version"] for n in self.cluster.nodes}, {self.OLD[1:]})
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        print(f"\n  {len(acked)} writes acknowledged, {expected_failures[0]} failed against a restarting node",
              file=sys.stderr)
        self.assertEqual(unexpected, [], "requests failed against nodes that were not restarting")
        self.assertGreater(len(acked), 100)
        lost = [d for d, rev in acked.items() if self.cluster.nodes[0].get(f"/rolling/{d}").json.get("_rev") != rev]
        self.assertEqual(lost, [], "acknowledged writes lost")


class RollingFromV020(Rolling):
    OLD = "v0.2.0"


class RollingFromV030(Rolling):
    """From the last release: it has _db_updates, so a feed's token also crosses releases."""
    OLD = "v0.3.0"

    def test_db_updates_tokens_cross_releases(self):
        self.all_connected()
        self.restarting = [False, False, False]
        old, _, new = self.cluster.nodes
        self.restart(2, BIN)
        try:
            for i in range(3):
                self.assertEqual(new.put(f"/cross{i}?q=1").status, 201)
            def created(n):
                return [r["db_name"] for r in n.get("/_db_updates", fresh=True).json["results"]
                        if r["db_name"].startswith("cross") and r["type"] == "created"]

            self.assertTrue(wait_for(lambda: created(old) == ["cross0", "cross1", "cross2"], 10))
            # This release's token lists the events it passed (an entry 0.3 passes over): 0.3 reads it,
            # five minutes early as 0.3 does (the rows repeat there, none is missing).
            token = new.get("/_db_updates").json["last_seq"]
            r = old.get(f"/_db_updates?since={token}", fresh=True)
            self.assertEqual(r.status, 200, r.json)
            self.assertLessEqual({"cross0", "cross1", "cross2"}, {x["db_name"] for x in r.json["results"]})
            # And 0.3's token here: the same (no list of what was seen).
            self.assertEqual(old.put("/cross3?q=1").status, 201)
            self.assertTrue(wait_for(lambda: "cross3" in created(new), 10))
            r = new.get(f"/_db_updates?since={r.json['last_seq']}", fresh=True)
            self.assertEqual(r.status, 200, r.json)
            self.assertIn("cross3", [x["db_name"] for x in r.json["results"]])
        finally:
            self.restart(2, self.old_bin)

    def test_reshard_jobs_across_releases(self):
        """0.4 asks a 0.3 member about jobs with 0.3's calls (reshardRequest, createJob) and reads
        its answers back; 0.3 asks a 0.4 member the same way and gets what 0.3 answered. Every
        node is stopped first, so the moves only exist: they are listed, found and removed."""
        self.all_connected()
        self.restarting = [False, False, False]
        old, _, new = self.cluster.nodes
        names = self.cluster.names
        self.restart(2, BIN)
        try:
            for n in self.cluster.nodes:  # a 0.3 node takes the state only from a PUT on itself
                n.put("/_reshard/state", {"state": "stopped", "reason": "cross"})
            for n in self.cluster.nodes:
                self.assertEqual(n.get("/_reshard/state").json["state"], "stopped")
            self.assertEqual(new.put("/xjobs?q=2&n=1").status, 201)
            shards = new.get("/xjobs/_shards").json["shards"]
            meta = {s["range"]: s["id"] for s in new.get("/xjobs/_changes/_meta").json["shards"]}

            def move(via, to):
                """A move of a copy that is not on `to`, asked of `via`."""
                rng, [holder] = next((r, c) for r, c in shards.items() if c != [to])
                shard = f"shards/{rng}/xjobs.{meta[rng].split('.')[1]}"
                r = via.post("/_reshard/jobs", {"type": "move", "shard": shard, "source": holder, "target": to})
                self.assertEqual(r.status, 201, r.json)
                return r.json[0]["id"]

            to_old = move(new, names[0])  # made on the 0.3 node through createJob
            to_new = move(old, names[2])  # 0.3 asks 0.4 through createJob
            for via in (old, new):
                listed = {j["id"]: j for j in via.get("/_reshard/jobs").json["jobs"]}
                self.assertLessEqual({to_old, to_new}, set(listed), via.port)
                self.assertEqual(listed[to_old]["node"], names[0])
                self.assertEqual(listed[to_new]["node"], names[2])
                self.assertEqual(listed[to_old]["type"], "move")
                self.assertEqual(listed[to_old]["job_state"], "stopped")
            self.assertEqual(new.get(f"/_reshard/jobs/{to_old}").json["target"], names[0])
            self.assertEqual(new.get(f"/_reshard/jobs/{to_old}/state").json["state"], "stopped")
            self.assertEqual(old.get(f"/_reshard/jobs/{to_new}").json["target"], names[2])
            self.assertEqual(new.delete(f"/_reshard/jobs/{to_old}").status, 200)  # removed on the 0.3 node
            self.assertEqual(old.delete(f"/_reshard/jobs/{to_new}").status, 200)  # removed on this release's
            for via in (old, new):
                ids = {j["id"] for j in via.get("/_reshard/jobs").json["jobs"]}
                self.assertFalse({to_old, to_new} & ids)
        finally:
            for n in self.cluster.nodes:
                n.put("/_reshard/state", {"state": "running"})
            self.restart(2, self.old_bin)


if __name__ == "__main__":
    main()
