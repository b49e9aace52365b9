"""Shard splitting on one node (issue 10; spec section 8): the /_reshard API as CouchDB answers it,
a split under a steady write load that loses no acknowledged write and lists every document once,
lineage in _changes/_meta with the children continuing the parent's numbering, and jobs that
survive a SIGKILL before and after the shard map switched."""
import http.client
import json
import os
import threading
import time

from harness import ClockedNodeTest, Node, NodeTest, OwnNodesTest, main


def wait_for_jobs(node, ids, state="completed", timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        jobs = {j["id"]: j for j in node.get("/_reshard/jobs").json["jobs"]}
        if all(jobs[i]["job_state"] == state for i in ids):
            return jobs
        if any(jobs[i]["job_state"] == "failed" for i in ids):
            raise AssertionError(f"a job failed: {jobs}")
        time.sleep(0.05)
    raise AssertionError(f"jobs not {state}: {node.get('/_reshard/jobs').json}")


def split(test, node, db, **what):
    r = node.post("/_reshard/jobs", {"type": "split", "db": db, **what})
    test.assertEqual(r.status, 201, r.data)
    return [j["id"] for j in r.json]


class ReshardApi(NodeTest):
    def test_state_summary_and_state_errors(self):
        r = self.node.get("/_reshard")
        self.assertEqual(r.status, 200)
        self.assertEqual(set(r.json), {"state", "state_reason", "completed", "failed", "running", "stopped", "total"})
        self.assertEqual(r.json["state"], "running")
        self.assertEqual(self.node.get("/_reshard/state").json, {"state": "running", "reason": None})
        self.assertError(self.node.put("/_reshard/state", {"reason": "x"}), 400, "bad_request", "Expected a `state` field")
        self.assertError(self.node.put("/_reshard/state", {"state": "paused"}), 400, "bad_request",
                         "State field not `running` or `stopped`")
        self.assertError(self.node.put("/_reshard/state", [1]), 400, "bad_request")
        self.assertEqual(self.node.request("DELETE", "/_reshard/state").status, 405)
        self.assertError(self.node.get("/_reshard/nothing"), 404, "not_found")
        self.assertEqual(self.node.get("/_reshard", auth=False).status, 401)

    def test_job_creation_errors(self):
        self.new_db("rsapi", q=2)
        post = lambda body: self.node.post("/_reshard/jobs", body)  # noqa: E731
        self.assertError(post({"type": "merge", "db": "rsapi"}), 400, "bad_request", "`job type must be `split` or `move`")
        self.assertError(post({"type": "split", "db": 7}), 400, "bad_request", "Invalid `db`")
        self.assertError(post({"type": "split", "db": "no_such_db"}), 400, "bad_request", "Invalid `db`")
        self.assertError(post({"type": "split", "db": "rsapi", "range": "0-7"}), 400, "bad_request", "Invalid `range`")
        self.assertError(post({"type": "split", "shard": 5}), 400, "bad_request", "Invalid `shard`")
        self.assertError(post({"type": "split", "shard": "shards/x/rsapi.1"}), 400, "bad_request", "`shard` is invalid")
        self.assertError(post({"type": "split", "db": "rsapi", "node": 1}), 400, "bad_request", "Invalid `node`")
        self.assertError(post({"type": "split", "db": "rsapi", "node": "who@where"}), 400, "bad_request",
                         "`node` is not a valid node name")
        self.assertError(post({"type": "split", "db": "rsapi", "range": "00000000-3fffffff"}), 404, "not_found",
                         "No shards to split")
        self.assertError(self.node.get("/_reshard/jobs/001-nope"), 404, "not_found")
        self.assertError(self.node.request("DELETE", "/_reshard/jobs/001-nope"), 404, "not_found")
        self.assertEqual(self.node.request("PUT", "/_reshard/jobs", {}).status, 405)

    def test_a_stopped_node_keeps_new_jobs_stopped_until_it_runs_again(self):
        self.new_db("rsstop", q=1)
        for i in range(20):
            self.node.put(f"/rsstop/d{i}", {"i": i})
        self.assertEqual(self.node.put("/_reshard/state", {"state": "stopped", "reason": "maintenance"}).json, {"ok": True})
        self.assertEqual(self.node.get("/_reshard/state").json, {"state": "stopped", "reason": "maintenance"})
        [job] = split(self, self.node, "rsstop")
        time.sleep(0.3)
        j = self.node.get(f"/_reshard/jobs/{job}").json
        self.assertEqual((j["job_state"], j["split_state"]), ("stopped", "new"))
        self.assertEqual(j["state_info"], {"reason": "maintenance"})
        # A job stopped by itself stays stopped when the node runs again, until it is started.
        self.assertEqual(self.node.put(f"/_reshard/jobs/{job}/state", {"state": "stopped"}).json, {"ok": True})
        self.node.put("/_reshard/state", {"state": "running"})
        time.sleep(0.3)
        self.assertEqual(self.node.get(f"/_reshard/jobs/{job}/state").json, {"state": "stopped", "reason": "Stopped by user"})
        self.assertError(self.node.put(f"/_reshard/jobs/{job}/state", {"state": "x"}), 400, "bad_request",
                         "State field not `running` or `stopped`")
        self.node.put(f"/_reshard/jobs/{job}/state", {"state": "running"})
        jobs = wait_for_jobs(self.node, [job])
        types = [h["type"] for h in jobs[job]["history"]]
        self.assertEqual(types[0], "new")
        for s in ["initial_copy", "topoff1", "build_indices", "topoff2", "copy_local_docs", "update_shardmap",
                  "wait_source_close", "topoff3", "source_delete", "completed"]:
            self.assertIn(s, types)
        self.assertEqual(self.node.get("/rsstop").json["doc_count"], 20)
        summary = self.node.get("/_reshard").json
        self.assertGreaterEqual(summary["completed"], 1)
        # A job can be deleted once done; a second split of the same shard is refused while one runs.
        self.assertEqual(self.node.request("DELETE", f"/_reshard/jobs/{job}").json, {"ok": True})
        self.assertEqual(self.node.get(f"/_reshard/jobs/{job}").status, 404)


class SplitUnderLoad(NodeTest):
    def test_split_under_writes_loses_nothing_and_lists_each_document_once(self):
        db = self.new_db("rsload", q=2)
        docs = [{"_id": f"pre{i:04d}", "v": i} for i in range(1500)]
        self.assertEqual(self.node.post(f"/{db}/_bulk_docs", {"docs": docs}).status, 201)
        self.node.put(f"/{db}/_local/checkpoint", {"seq": 7})
        self.node.put(f"/{db}/_security", {"members": {"names": ["alice"]}, "admins": {}})
        before = self.node.get(f"/{db}/_changes").json["last_seq"]
        acked, failures, stop, writers_done = {}, [], threading.Event(), threading.Event()

        def writer(k):
            n = 0
            while not stop.is_set() and n < 2000:
                doc_id = f"w{k}-{n:05d}"
                status, body = self.node.call("PUT", f"/{db}/{doc_id}", {"n": n})
                if status == 201:
                    acked[doc_id] = body["rev"]
                else:
                    failures.append((status, body))
                n += 1

        # A continuous feed from before the split, open throughout it.
        streamed, ended = [], []

        def follow():
            conn = http.client.HTTPConnection("127.0.0.1", self.node.port, timeout=30)
            conn.request("GET", f"/{db}/_changes?feed=continuous&heartbeat=200&since={before}",
                         headers=dict(self.node.auth_header()))
            r = conn.getresponse()
            deadline = time.time() + 60
            while time.time() < deadline:
                line = r.readline()
                if not line:
                    break
                if line.strip():
                    row = json.loads(line)
                    if "id" not in row:
                        ended.append(row)
                    if "id" in row:
                        streamed.append(row["id"])
                if writers_done.is_set() and set(acked) <= set(streamed):
                    break
            conn.close()

        follower = threading.Thread(target=follow)
        follower.start()
        threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        time.sleep(0.2)
        jobs = split(self, self.node, db)  # both ranges
        self.assertEqual(len(jobs), 2)
        done = wait_for_jobs(self.node, jobs)
        time.sleep(0.2)
        stop.set()
        for t in threads:
            t.join()
        writers_done.set()
        follower.join()
        self.assertEqual(failures, [])
        # The feed went on over the children: every write once, nothing from before its token.
        self.assertEqual(len(streamed), len(set(streamed)))
        self.assertEqual(set(streamed), set(acked), ended)
        self.assertGreater(len(acked), 0)

        # The map: four open children, two closed parents, lineage named both ways.
        meta = self.node.get(f"/{db}/_changes/_meta").json
        by_id = {s["id"]: s for s in meta["shards"]}
        opened = [s for s in meta["shards"] if s["state"] == "open"]
        closed = [s for s in meta["shards"] if s["state"] == "closed"]
        self.assertEqual(len(opened), 4)
        self.assertEqual(len(closed), 2)
        for p in closed:
            self.assertEqual(len(p["children"]), 2)
            for c in p["children"]:
                self.assertEqual(by_id[c]["parents"], [p["id"]])
                self.assertEqual(by_id[c]["start_seq"], p["end_seq"])
        self.assertEqual(self.node.get(f"/{db}").json["cluster"]["q"], 4)
        shards = self.node.get(f"/{db}/_shards").json["shards"]
        self.assertEqual(sorted(shards), sorted(s["range"] for s in opened))
        for job in jobs:  # each job's source and targets are the closed shard and its children
            _, rng, name = done[job]["source"].split("/")
            children = by_id[rng + "." + name.rsplit(".", 1)[1]]["children"]
            self.assertEqual([t.split("/")[1] + "." + t.rsplit(".", 1)[1] for t in done[job]["target"]], children)

        # Every acknowledged write is there, at its revision; nothing else was lost.
        rows = {r["id"]: r["value"]["rev"] for r in self.node.get(f"/{db}/_all_docs").json["rows"]}
        for doc_id, rev in acked.items():
            self.assertEqual(rows.get(doc_id), rev, doc_id)
        self.assertEqual(len(rows), 1500 + len(acked))
        self.assertEqual(self.node.get(f"/{db}").json["doc_count"], 1500 + len(acked))
        # A full feed lists every document exactly once.
        results = self.node.get(f"/{db}/_changes").json["results"]
        ids = [r["id"] for r in results]
        self.assertEqual(len(ids), len(set(ids)))
        self.assertEqual(set(ids), set(rows))
        # Per-shard feeds of the open shards partition the documents.
        seen = []
        for s in opened:
            part = self.node.get(f"/{db}/_changes/{s['id']}").json["results"]
            seen += [r["id"] for r in part]
        self.assertEqual(sorted(seen), sorted(rows))
        # A child's feed from its start_seq has only what was written to it after the split.
        for s in opened:
            later = self.node.get(f"/{db}/_changes/{s['id']}?since={s['start_seq']}").json["results"]
            self.assertTrue(all(r["seq"] > s["start_seq"] for r in later))
            self.assertTrue(all(r["id"].startswith("w") for r in later))
        # _local documents and _security came along; the old token still reads (from the start, said).
        self.assertEqual(self.node.get(f"/{db}/_local/checkpoint").json["seq"], 7)
        self.assertEqual(self.node.get(f"/{db}/_security").json["members"], {"names": ["alice"]})
        r = self.node.get(f"/{db}/_changes?since={before}")
        self.assertEqual(r.status, 200)
        self.assertIsNone(r.header("X-Settee-Since-Resolution"))  # exact: no rewind
        after = [row["id"] for row in r.json["results"]]
        self.assertEqual(len(after), len(set(after)))
        self.assertEqual(set(after), set(acked))
        # The parents' files are gone; the children's are there.
        for p in closed:
            rng, suffix = p["id"].split(".")
            self.assertFalse(os.path.exists(os.path.join(self.node.data_dir, "shards", rng, f"{db}.{suffix}")))
        for s in opened:
            rng, suffix = s["id"].split(".")
            self.assertTrue(os.path.exists(os.path.join(self.node.data_dir, "shards", rng, f"{db}.{suffix}")))

    def test_a_child_splits_again(self):
        db = self.new_db("rstwice", q=1)
        self.node.post(f"/{db}/_bulk_docs", {"docs": [{"_id": f"d{i}"} for i in range(200)]})
        wait_for_jobs(self.node, split(self, self.node, db))
        wait_for_jobs(self.node, split(self, self.node, db, range="00000000-7fffffff"))
        meta = self.node.get(f"/{db}/_changes/_meta").json
        self.assertEqual(sorted(s["range"] for s in meta["shards"] if s["state"] == "open"),
                         ["00000000-3fffffff", "40000000-7fffffff", "80000000-ffffffff"])
        self.assertEqual(len(meta["shards"]), 5)
        self.assertEqual(self.node.get(f"/{db}").json["doc_count"], 200)
        for i in range(0, 200, 37):
            self.assertEqual(self.node.get(f"/{db}/d{i}").status, 200)

    def test_a_shard_feed_of_the_parent_ends_with_its_children_which_continue_its_numbering(self):
        db = self.new_db("rsfeed", q=1)
        self.node.post(f"/{db}/_bulk_docs", {"docs": [{"_id": f"old{i}"} for i in range(100)]})
        [parent] = self.node.get(f"/{db}/_changes/_meta").json["shards"]
        ended = []

        def follow():
            conn = http.client.HTTPConnection("127.0.0.1", self.node.port, timeout=30)
            conn.request("GET", f"/{db}/_changes/{parent['id']}?feed=continuous&since=now&heartbeat=100",
                         headers=dict(self.node.auth_header()))
            r = conn.getresponse()
            for line in iter(r.readline, b""):
                if line.strip() and "last_seq" in json.loads(line):
                    ended.append(json.loads(line))
            conn.close()

        t = threading.Thread(target=follow)
        t.start()
        time.sleep(0.2)
        wait_for_jobs(self.node, split(self, self.node, db))
        t.join(timeout=20)
        self.assertFalse(t.is_alive())
        meta = {s["id"]: s for s in self.node.get(f"/{db}/_changes/_meta").json["shards"]}
        end = meta[parent["id"]]["end_seq"]
        self.assertEqual(meta[parent["id"]]["state"], "closed")
        children = [{"id": c, "since": end} for c in meta[parent["id"]]["children"]]
        # The live feed ended where the parent did, naming the children and where they start.
        self.assertEqual(ended, [{"last_seq": end, "pending": 0, "shard_closed": True, "children": children}])
        for i in range(30):
            self.node.put(f"/{db}/new{i}", {})

        # The closed shard's feed: its changes (read from the children), in seq order, up to its end.
        whole = self.node.get(f"/{db}/_changes/{parent['id']}?since=0").json
        seqs = [r["seq"] for r in whole["results"]]
        self.assertEqual(seqs, sorted(seqs))
        self.assertEqual(sorted(r["id"] for r in whole["results"]), sorted(f"old{i}" for i in range(100)))
        self.assertEqual((whole["last_seq"], whole["shard_closed"], whole["children"]), (end, True, children))
        part = self.node.get(f"/{db}/_changes/{parent['id']}?since={seqs[49]}&limit=10").json
        self.assertEqual([r["seq"] for r in part["results"]], seqs[50:60])
        self.assertNotIn("shard_closed", part)  # not at the end yet
        self.assertEqual(part["last_seq"], seqs[59])
        done = self.node.get(f"/{db}/_changes/{parent['id']}?since={end}&feed=longpoll").json  # no wait
        self.assertEqual((done["results"], done["shard_closed"]), ([], True))
        self.assertError(self.node.get(f"/{db}/_changes/{parent['id']}?descending=true"), 400, "bad_request")
        self.assertError(self.node.get(f"/{db}/_changes/{parent['id']}?since=x"), 400, "bad_request")

        # Following the lineage: the children from the parent's end give exactly what came after.
        new = []
        for child in children:
            new += [r["id"] for r in self.node.get(f"/{db}/_changes/{child['id']}?since={child['since']}").json["results"]]
        self.assertEqual(sorted(new), sorted(f"new{i}" for i in range(30)))

    def test_parallel_consumers_follow_lineage_through_two_rounds_of_splits(self):
        """One consumer per shard (spec 11.3), each following its shard's children when it closes,
        while writers run and the shards split twice: together they see every write exactly once."""
        db = self.new_db("rslineage", q=2)
        acked, stop, writers_done = set(), threading.Event(), threading.Event()

        def writer(k):
            n = 0
            while not stop.is_set() and n < 3000:
                status, _ = self.node.call("PUT", f"/{db}/w{k}-{n:05d}", {"n": n})
                if status == 201:
                    acked.add(f"w{k}-{n:05d}")
                n += 1

        seen, lock, work = [], threading.Lock(), []
        for s0 in self.node.get(f"/{db}/_changes/_meta").json["shards"]:
            work.append((s0["id"], 0))
        active = [0]

        def consumer():
            while True:
                with lock:
                    if not work:
                        if active[0] == 0 and writers_done.is_set():
                            return
                        item = None
                    else:
                        item = work.pop()
                        active[0] += 1
                if item is None:
                    time.sleep(0.02)
                    continue
                shard, since = item
                while True:
                    status, body = self.node.call("GET", f"/{db}/_changes/{shard}?feed=longpoll&timeout=300&since={since}")
                    self.assertEqual(status, 200, body)
                    with lock:
                        seen.extend((r["id"], r["changes"][0]["rev"]) for r in body["results"])
                    since = body["last_seq"]
                    if body.get("shard_closed"):
                        with lock:
                            work.extend((c["id"], c["since"]) for c in body["children"])
                        break
                    if writers_done.is_set() and not body["results"]:
                        break
                with lock:
                    active[0] -= 1

        writers = [threading.Thread(target=writer, args=(k,)) for k in range(2)]
        consumers = [threading.Thread(target=consumer) for _ in range(4)]
        for t in writers + consumers:
            t.start()
        time.sleep(0.3)
        wait_for_jobs(self.node, split(self, self.node, db))  # 2 -> 4
        time.sleep(0.3)
        wait_for_jobs(self.node, split(self, self.node, db, range="00000000-3fffffff"))  # 4 -> 5
        time.sleep(0.3)
        stop.set()
        for t in writers:
            t.join()
        writers_done.set()
        for t in consumers:
            t.join(timeout=60)
        self.assertFalse(any(t.is_alive() for t in consumers))
        ids = [i for i, _ in seen]
        self.assertEqual(len(ids), len(set(ids)))  # nobody saw a change twice
        self.assertEqual(set(ids), acked)  # and together they saw every one
        meta = self.node.get(f"/{db}/_changes/_meta").json["shards"]
        self.assertEqual(len([s for s in meta if s["state"] == "open"]), 5)
        self.assertEqual(len(meta), 8)

    def test_active_tasks_show_a_running_split(self):
        db = self.new_db("rstask", q=1)
        for k in range(4):
            self.node.post(f"/{db}/_bulk_docs", {"docs": [{"_id": f"d{k}-{i}", "pad": "x" * 200} for i in range(5000)]})
        [job] = split(self, self.node, db)
        seen, phases = [], []
        deadline = time.time() + 30
        while time.time() < deadline:
            state = self.node.get(f"/_reshard/jobs/{job}").json  # first: the task row is never behind it
            tasks = [t for t in self.node.get("/_active_tasks").json if t["type"] == "shard_split"]
            seen = seen or tasks
            if tasks and state["split_state"] == "initial_copy":  # the long state, copying
                phases.append(tasks[0]["phase"])
            if state["job_state"] == "completed":
                break
        wait_for_jobs(self.node, [job])
        self.assertTrue(seen, "the split was never seen running")
        # While the job copies, its task row says so (it said "new" until the copy step ended).
        self.assertTrue(phases, "the copy was never seen running")
        # The row is never behind the job (it may be ahead: the job moved on between the two reads).
        self.assertNotIn("new", phases)
        task = seen[0]
        self.assertEqual(task["job_id"], job)
        self.assertEqual(task["source"], self.node.get(f"/_reshard/jobs/{job}").json["source"])
        for field in ("node", "phase", "changes_done", "total_changes", "progress", "started_on", "updated_on", "pid"):
            self.assertIn(field, task)
        self.assertEqual([t for t in self.node.get("/_active_tasks").json if t["type"] == "shard_split"], [])


class SplitSurvivesKill(OwnNodesTest):
    """SETTEE_FAILPOINT=<split_state> exits as a job enters that state; on restart the job starts
    over (before the map switched) or goes forward (after)."""

    def run_to(self, failpoint):
        node = Node(env={"SETTEE_FAILPOINT": failpoint}).start()
        self.addCleanup(node.cleanup)
        db = "rskill"
        node.put(f"/{db}?q=1")
        node.post(f"/{db}/_bulk_docs", {"docs": [{"_id": f"d{i}", "i": i} for i in range(300)]})
        try:
            node.post("/_reshard/jobs", {"type": "split", "db": db})
        except ConnectionError:
            pass  # the failpoint may exit the process before the 201 is written (the job was created)
        node.proc.wait(timeout=30)
        self.assertEqual(node.proc.returncode, 70)
        node.stop()
        node.env = {}
        node.start()
        [job] = [j["id"] for j in node.get("/_reshard/jobs").json["jobs"]]
        jobs = wait_for_jobs(node, [job])
        self.assertEqual(node.get(f"/{db}").json["doc_count"], 300)
        ids = [r["id"] for r in node.get(f"/{db}/_changes").json["results"]]
        self.assertEqual(sorted(ids), sorted(f"d{i}" for i in range(300)))
        return node, jobs[job]

    def shard_files(self, node):
        return sorted(f for rng in os.listdir(os.path.join(node.data_dir, "shards"))
                      for f in os.listdir(os.path.join(node.data_dir, "shards", rng))
                      if f.startswith("rskill.") and not f.endswith("-lock"))

    def test_killed_before_the_switch_starts_over(self):
        for state in ("initial_copy", "topoff1", "build_indices", "topoff2", "copy_local_docs", "update_shardmap"):
            with self.subTest(state=state):
                node, job = self.run_to(state)
                restarts = [h for h in job["history"] if h["type"] == "restart"]
                self.assertEqual(len(restarts), 1)
                self.assertIn("copying on", restarts[0]["detail"])
                meta = node.get("/rskill/_changes/_meta").json["shards"]
                self.assertEqual(len(meta), 3)
                # The children the first attempt began are the ones finished (same ids); the parent went.
                self.assertEqual(sorted(job["target"]), sorted(f"shards/{s['range']}/rskill.{s['id'].split('.')[1]}"
                                                               for s in meta if s["parents"]))
                self.assertEqual(len(self.shard_files(node)), 2)

    def test_killed_after_the_switch_goes_forward(self):
        # source_delete:removed: killed once the parent file is gone, before the job saved that
        # state: topoff3 runs again with no parent to check (it once opened an empty one and failed).
        for state in ("wait_source_close", "topoff3", "source_delete", "source_delete:removed"):
            with self.subTest(state=state):
                node, job = self.run_to(state)
                restarts = [h for h in job["history"] if h["type"] == "restart"]
                self.assertEqual(len(restarts), 1)
                self.assertIn("going forward", restarts[0]["detail"])
                # The state it was killed in ran again: the parent is gone, the children remain.
                self.assertEqual(len(self.shard_files(node)), 2)

class TopologyAtAPoint(ClockedNodeTest):
    """GET /db/_changes/_meta?since=<token|time> (spec 11.3): the shards live at that point, each
    with the seq its own feed starts from."""

    def test_meta_since_a_token_or_a_time_gives_the_shards_of_that_moment(self):
        db, t0 = "topo", self.START
        self.assertEqual(self.node.put(f"/{db}?q=1").status, 201)
        self.node.post(f"/{db}/_bulk_docs", {"docs": [{"_id": f"a{i}"} for i in range(10)]})
        self.set_time(t0 + 3600)
        self.node.post(f"/{db}/_bulk_docs", {"docs": [{"_id": f"b{i}"} for i in range(10)]})
        token = self.node.get(f"/{db}/_changes").json["last_seq"]
        [root] = [s["id"] for s in self.node.get(f"/{db}/_changes/_meta").json["shards"]]
        self.set_time(t0 + 7200)
        wait_for_jobs(self.node, split(self, self.node, db))
        self.node.post(f"/{db}/_bulk_docs", {"docs": [{"_id": f"c{i}"} for i in range(10)]})
        meta = {s["id"]: s for s in self.node.get(f"/{db}/_changes/_meta").json["shards"]}
        children = meta[root]["children"]

        def at(since):
            r = self.node.get(f"/{db}/_changes/_meta?since={since}")
            self.assertEqual(r.status, 200, r.json)
            return {s["id"]: s for s in r.json["shards"]}

        self.assertEqual({k: v["since"] for k, v in at(0).items()}, {root: 0})
        # The token from before the split: the parent, at the token's seq (exact).
        before = at(token)
        self.assertEqual(list(before), [root])
        self.assertEqual(before[root]["since"], 20)
        self.assertNotIn("since_resolution", before[root])
        self.assertEqual(before[root]["children"], children)  # lineage as known now: where to go next
        # A time before the split: the parent; its feed from there gives the second batch (and
        # perhaps some of the first: a time-seq bin's granularity), then ends with the children.
        t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0 + 3600))
        mid = at(t)
        self.assertEqual(list(mid), [root])
        self.assertLessEqual(mid[root]["since"], 10)
        rows = self.node.get(f"/{db}/_changes/{root}?since={mid[root]['since']}").json
        self.assertTrue({f"b{i}" for i in range(10)} <= {r["id"] for r in rows["results"]})
        self.assertEqual(rows["last_seq"], 20)
        # A time after the split, and now: the children.
        after = at(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0 + 7200)))
        self.assertEqual(sorted(after), sorted(children))
        self.assertTrue(all(s["since"] <= 30 for s in after.values()))
        now = at("now")
        self.assertEqual(sorted(now), sorted(children))
        seen = set()
        for child in children:  # from `since=now` nothing; from the time after the split, the third batch
            self.assertEqual(self.node.get(f"/{db}/_changes/{child}?since={now[child]['since']}").json["results"], [])
            seen |= {r["id"] for r in self.node.get(f"/{db}/_changes/{child}?since={after[child]['since']}").json["results"]}
        self.assertTrue({f"c{i}" for i in range(10)} <= seen)
        self.assertError(self.node.get(f"/{db}/_changes/_meta?since=garbage"), 400, "bad_request")


if __name__ == "__main__":
    main()
