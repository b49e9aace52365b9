"""Older revisions until compaction (issue 11 point 2): a shard copy keeps the bodies of older
revisions (GET ?rev=, open_revs, revs_info "available", their attachments) until POST /db/_compact
drops them in the background, with CouchDB's database_compaction task in GET /_active_tasks."""
import base64
import time

from harness import Node, NodeTest, OwnNodesTest, main


def b64(data):
    return base64.b64encode(data).decode()


def wait_until(what, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = what()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("timed out")


class OldRevisions(NodeTest):
    config = "[database_compaction]\ndocs_per_step = 1\n"

    def test_older_revisions_are_readable_until_compaction(self):
        n = self.node
        self.new_db("old")
        r1 = n.put("/old/d", {"v": 1, "_attachments": {"a.txt": {"content_type": "text/plain", "data": b64(b"one")}}})
        r2 = n.put("/old/d", {"_rev": r1.json["rev"], "v": 2})  # the attachment goes in 2-
        r3 = n.put("/old/d", {"_rev": r2.json["rev"], "v": 3})
        rev1, rev2, rev3 = r1.json["rev"], r2.json["rev"], r3.json["rev"]
        old = n.get(f"/old/d?rev={rev1}")
        self.assertEqual(old.status, 200, old)
        self.assertEqual((old.json["_rev"], old.json["v"]), (rev1, 1))
        self.assertEqual(n.get(f"/old/d/a.txt?rev={rev1}").data, b"one")
        inline = n.get(f"/old/d?rev={rev1}&attachments=true").json["_attachments"]["a.txt"]
        self.assertEqual(base64.b64decode(inline["data"]), b"one")
        self.assertNotIn("_attachments", n.get(f"/old/d?rev={rev3}&attachments=true").json)
        self.assertError(n.get("/old/d/a.txt"), 404, "not_found", "Document is missing attachment")
        self.assertEqual(n.get(f"/old/d?rev={rev1}&latest=true").json["_rev"], rev3)
        revs = n.get(f'/old/d?open_revs=["{rev1}","{rev2}"]').json
        self.assertEqual([r["ok"]["v"] for r in revs], [1, 2])
        info = n.get("/old/d?revs_info=true").json["_revs_info"]
        self.assertEqual([i["status"] for i in info], ["available"] * 3)
        got = n.post("/old/_bulk_get", {"docs": [{"id": "d", "rev": rev2}]}).json
        self.assertEqual(got["results"][0]["docs"][0]["ok"]["v"], 2)

        # The writes above reach the update log first (it records marks in the background).
        wait_until(lambda: [r for r in n.get("/_db_updates").json["results"] if r["db_name"] == "old"])
        time.sleep(0.5)
        since = n.get("/_db_updates?since=now").json["last_seq"]
        self.assertEqual(n.post("/old/_compact", {}).status, 202)
        wait_until(lambda: n.get(f"/old/d?rev={rev1}").status == 404)
        wait_until(lambda: not n.get("/old").json["compact_running"])
        # Compaction changes no document: no _db_updates row (a write after it does make one).
        time.sleep(0.5)
        rows = n.get(f"/_db_updates?since={since}").json["results"]
        self.assertEqual([r for r in rows if r["db_name"] == "old"], [])
        self.assertError(n.get(f"/old/d?rev={rev2}"), 404, "not_found", "missing")
        self.assertError(n.get(f"/old/d/a.txt?rev={rev1}"), 404, "not_found", "missing")
        self.assertEqual(n.get("/old/d").json["v"], 3)
        info = n.get("/old/d?revs_info=true").json["_revs_info"]
        self.assertEqual([i["status"] for i in info], ["available", "missing", "missing"])
        revs = n.get(f'/old/d?open_revs=["{rev1}"]').json
        self.assertEqual(revs, [{"missing": rev1}])
        n.put("/old/after", {})
        wait_until(lambda: [r for r in n.get(f"/_db_updates?since={since}").json["results"] if r["db_name"] == "old"])

    def test_compaction_shows_in_active_tasks(self):
        n = self.node
        self.new_db("big", q=1)
        docs = [{"_id": f"d{i:05}", "v": i} for i in range(5000)]
        self.assertEqual(n.post("/big/_bulk_docs", {"docs": docs}).status, 201)
        self.assertEqual(n.get("/_active_tasks").json, [])
        self.assertEqual(n.post("/big/_compact", {}).status, 202)
        self.assertEqual(n.post("/big/_compact", {}).status, 202)  # already running: not twice
        tasks = wait_until(lambda: n.get("/_active_tasks").json)
        self.assertEqual(len(tasks), 1)
        t = tasks[0]
        self.assertEqual((t["type"], t["database"], t["total_changes"], t["phase"]),
                         ("database_compaction", "shards/00000000-ffffffff/big." + t["database"].split(".")[-1],
                          5000, "document copy"))
        self.assertEqual(set(t), {"type", "node", "pid", "database", "phase", "changes_done", "total_changes",
                                  "progress", "started_on", "updated_on"})
        self.assertTrue(0 <= t["progress"] <= 100)
        self.assertTrue(n.get("/big").json["compact_running"])
        wait_until(lambda: n.get("/_active_tasks").json == [], 120)
        self.assertFalse(n.get("/big").json["compact_running"])
        self.assertEqual(n.get("/big").json["doc_count"], 5000)  # leaves untouched
        self.assertError(n.get("/_active_tasks", auth=False), 401, "unauthorized")
        self.assertError(n.request("POST", "/_active_tasks", {}), 405, "method_not_allowed")


class CompactionResumes(OwnNodesTest):
    """A compaction is a job that saves its position (a `_local` document of `_dbs`): cut by a
    kill -9 (SETTEE_FAILPOINT=compaction:step exits after a step saved it) or by a clean stop, it
    goes on from there when the node starts again, with nobody asking for it again."""

    def start_with_old_revisions(self, env, count=1500):
        node = Node(config="[database_compaction]\ndocs_per_step = 1\n", env=env).start()
        self.addCleanup(node.cleanup)
        node.put("/cut?q=1")
        docs = [{"_id": f"d{i:04}", "v": 1} for i in range(count)]
        first = node.post("/cut/_bulk_docs", {"docs": docs}).json
        again = [{"_id": r["id"], "_rev": r["rev"], "v": 2} for r in first]
        self.assertEqual(node.post("/cut/_bulk_docs", {"docs": again}).status, 201)
        return node, {r["id"]: r["rev"] for r in first}

    def assert_compacted_after_restart(self, node, old, count=1500):
        log_before = open(node.log.name).read()
        node.env = {}
        node.start()
        # Nobody asks for it again: the saved job goes on by itself, to the last document.
        last = f"d{count - 1:04}"
        wait_until(lambda: node.get(f"/cut/{last}?rev={old[last]}").status == 404, 120)
        wait_until(lambda: not node.get("/cut").json["compact_running"], 60)
        for doc_id in ("d0000", f"d{count // 2:04}", last):
            self.assertError(node.get(f"/cut/{doc_id}?rev={old[doc_id]}"), 404, "not_found", "missing")
            self.assertEqual(node.get(f"/cut/{doc_id}").json["v"], 2)
        self.assertEqual(node.get("/cut").json["doc_count"], count)
        resumed = open(node.log.name).read()[len(log_before):]
        self.assertIn("goes on from where a restart cut it", resumed)
        # Once done, its saved position is gone: the next start does not compact again.
        node.stop()
        node.start()
        self.assertEqual(node.get("/_active_tasks").json, [])
        self.assertNotIn("goes on from where", open(node.log.name).read()[len(log_before) + len(resumed):])

    def test_killed_mid_compaction(self):
        node, old = self.start_with_old_revisions({"SETTEE_FAILPOINT": "compaction:step"})
        self.assertEqual(node.post("/cut/_compact", {}).status, 202)
        node.proc.wait(timeout=60)
        self.assertEqual(node.proc.returncode, 70)
        node.stop()
        self.assert_compacted_after_restart(node, old)

    def test_stopped_mid_compaction(self):
        # 6,000 one-document steps take ~1.6 s here: the stop comes long before the end.
        node, old = self.start_with_old_revisions({}, 6000)
        self.assertEqual(node.post("/cut/_compact", {}).status, 202)
        wait_until(lambda: node.get("/_active_tasks").json)
        node.stop()
        self.assert_compacted_after_restart(node, old, 6000)


if __name__ == "__main__":
    main()
