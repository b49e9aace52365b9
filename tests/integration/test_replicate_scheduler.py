"""The replication scheduler (issue 33 point 3): with [replicator] max_jobs = 2, three continuous
replications: two run and one is pending; every `interval` (1 s here) `max_churn` (1) of the running
ones makes room for a pending one, so each gets its turn and every write reaches every target; a
one-shot replication posted while the slots are full waits its turn and answers once it ran; a
cancel of a pending one ends it."""
import urllib.parse

from harness import NodeTest, main, wait_until


class Scheduler(NodeTest):
    config = "[replicator]\nmax_jobs = 2\ninterval = 1000\nmax_churn = 1\n"

    def states(self):
        out = {}
        for j in self.node.get("/_scheduler/jobs").json["jobs"]:
            out[j["target"].rstrip("/").rsplit("/", 1)[-1]] = j
        return out

    def test_pending_replications_get_their_turn(self):
        self.new_db("sch")
        ids = []
        for k in range(3):
            r = self.node.post("/_replicate", {"source": "sch", "target": f"sch{k}", "create_target": True,
                                               "continuous": True})
            self.assertEqual(r.status, 202, r)
            ids.append(r.json["_local_id"])
        for rep_id in ids:
            self.addCleanup(lambda i=rep_id: self.node.post("/_replicate", {"replication_id": i, "cancel": True}))
        self.assertEqual(len(self.states()), 3)
        # Writes reach every target, the pending one's included, as the scheduler rotates them.
        for i in range(3):
            self.assertEqual(self.node.put(f"/sch/doc{i}", {}).status, 201)
        self.assertTrue(wait_until(lambda: all(self.node.get(f"/sch{k}/doc2").status == 200 for k in range(3)), 60))
        # At most two run at any time: the runner's _active_tasks show the running ones.
        tasks = [t for t in self.node.get("/_active_tasks").json if t["type"] == "replication"]
        self.assertLessEqual(len(tasks), 2, tasks)
        # A one-shot replication posted while both slots are taken waits its turn, then answers.
        self.new_db("once")
        self.assertEqual(self.node.put("/once/x", {}).status, 201)
        r = self.node.post("/_replicate", {"source": "once", "target": "oncecopy", "create_target": True})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.node.get("/oncecopy/x").status, 200)

    def test_a_pending_replication_can_be_cancelled(self):
        self.new_db("pc")
        ids = []
        for k in range(3):
            r = self.node.post("/_replicate", {"source": "pc", "target": f"pc{k}", "create_target": True,
                                               "continuous": True})
            ids.append(r.json["_local_id"])
        for rep_id in ids:
            r = self.node.post("/_replicate", {"replication_id": rep_id, "cancel": True})
            self.assertEqual((r.status, r.json), (200, {"ok": True, "_local_id": rep_id}))
        self.assertEqual(self.node.get("/_scheduler/jobs").json["jobs"], [])
        self.assertEqual(self.node.get(f"/_scheduler/jobs/{urllib.parse.quote(ids[2])}").status, 404)


if __name__ == "__main__":
    main()
