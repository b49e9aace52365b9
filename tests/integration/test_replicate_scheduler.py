"""The replication scheduler (issue 33 point 3): with [replicator] max_jobs = 2, three continuous
replications: two run and one is pending; every `interval` (1 s here) `max_churn` (1) of the running
ones makes room for a pending one, so each gets its turn and every write reaches every target; a
one-shot replication posted while the slots are full waits its turn and answers once it ran; a
cancel of a pending one ends it; crashing replications (backing off) make room first, so two that
crash forever do not keep a healthy one pending."""
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

    def remove_documents(self):
        for row in self.node.get("/_replicator/_all_docs").json["rows"]:
            if not row["id"].startswith("_design/"):
                self.assertEqual(self.node.delete(f"/_replicator/{row['id']}?rev={row['value']['rev']}").status, 200)
        self.assertTrue(wait_until(lambda: self.node.get("/_scheduler/jobs").json["jobs"] == []))

    def test_crashing_replications_make_room_for_pending_ones(self):
        user = self.node.admin
        url = f"http://{user[0]}:{urllib.parse.quote(user[1])}@127.0.0.1:{self.node.port}"
        self.addCleanup(self.remove_documents)
        for k in range(2):  # both slots: one-shot documents whose source is missing crash and retry forever
            r = self.node.put(f"/_replicator/broken{k}", {"source": f"{url}/missing{k}", "target": f"{url}/nowhere{k}"})
            self.assertEqual(r.status, 201, r)
        self.assertTrue(wait_until(lambda: [self.node.get(f"/_scheduler/docs/_replicator/broken{k}").json.get("state")
                                            for k in range(2)] == ["crashing", "crashing"]))
        for k in range(2):  # CouchDB's count of errors in a row, and the last one
            row = self.node.get(f"/_scheduler/docs/_replicator/broken{k}").json
            self.assertGreaterEqual(row["error_count"], 1, row)
            self.assertIn("could not open", row["info"]["error"], row)
        self.new_db("healthy")
        self.assertEqual(self.node.put("/healthy/x", {}).status, 201)
        r = self.node.put("/_replicator/fine", {"source": f"{url}/healthy", "target": f"{url}/healthycopy",
                                                "create_target": True})
        self.assertEqual(r.status, 201, r)
        self.assertTrue(wait_until(lambda: self.node.get("/_replicator/fine").json.get("_replication_state")
                                   == "completed", 60))
        self.assertEqual(self.node.get("/healthycopy/x").status, 200)
        # A crashing replication that made room keeps its record: `stopped` in its history, and its
        # errors in a row.
        broken = [j for j in self.node.get("/_scheduler/jobs").json["jobs"] if j["doc_id"].startswith("broken")]
        stopped = [j for j in broken if "stopped" in [h["type"] for h in j["history"]]]
        self.assertTrue(stopped, broken)
        self.assertIn("crashed", [h["type"] for h in stopped[0]["history"]])
        for k in range(2):
            self.assertNotIn("_replication_state", self.node.get(f"/_replicator/broken{k}").json)


if __name__ == "__main__":
    main()
