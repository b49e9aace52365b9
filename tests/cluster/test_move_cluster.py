"""Shard moves in a 3-node cluster (issue 10, spec 11.6): a copy moves from node A to node B while
every node writes; the job runs on B, which pulls the copy from A keeping its uuid, seqs, _local
documents, security and time-seq; the map switches once, A's copy goes after its readers moved on.
No write fails or is lost, a continuous feed on A follows the copy to B without a repeat or a gap,
and a token from before the move continues exactly on B (no X-Settee-Since-Resolution)."""
import http.client
import json
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import OwnNodesTest, main  # noqa: E402
from test_membership import Cluster, ClusterTest, Writers, wait_for  # noqa: E402


def wait_job(node, job, timeout=60):
    """The job once it completed or failed (or the last seen state at the deadline)."""
    seen = {}

    def done():
        seen.update(node.get(f"/_reshard/jobs/{job}").json)
        return seen.get("job_state") in ("completed", "failed")

    wait_for(done, timeout)
    return seen


def shard_rows(node, db, shard_id):
    """{id: seq} of one shard's feed from 0."""
    return {r["id"]: r["seq"] for r in node.get(f"/{db}/_changes/{shard_id}?since=0").json["results"]}


class MoveCluster(ClusterTest):
    NODES, SYNC_INTERVAL_MS = 3, 500

    def setup_db(self, db, docs=300):
        """A q=1 n=1 database on nodes[0] (A) with `docs` documents, one with an attachment, a
        _local document and a security object; returns the shard id."""
        nodes = self.cluster.nodes
        self.assertEqual(nodes[0].put(f"/{db}?q=1&n=1").status, 201)
        shards = nodes[0].get(f"/{db}/_shards").json["shards"]
        self.assertEqual(list(shards.values()), [[self.cluster.names[0]]], shards)
        pre = [{"_id": f"pre{i:03d}", "i": i} for i in range(docs)]
        self.assertEqual(nodes[1].post(f"/{db}/_bulk_docs", {"docs": pre}).status, 201)
        att = nodes[0].put(f"/{db}/withatt", {"_attachments": {"a.txt": {"content_type": "text/plain",
                                                                          "data": "aGVsbG8gbW92ZQ=="}}})
        self.assertEqual(att.status, 201, att.json)
        self.assertEqual(nodes[0].put(f"/{db}/_local/checkpoint", {"seq": 7}).status, 201)
        sec = {"admins": {"names": [], "roles": []}, "members": {"names": ["ann"], "roles": []}}
        self.assertEqual(nodes[0].put(f"/{db}/_security", sec).status, 200)
        [shard] = [s["id"] for s in nodes[0].get(f"/{db}/_changes/_meta").json["shards"]]
        return shard

    def test_a_copy_moves_to_another_node_while_every_node_writes(self):
        nodes, names = self.cluster.nodes, self.cluster.names
        db = "mvc"
        shard = self.setup_db(db, docs=5000)  # many copy steps (500 changes each)
        before_rows = shard_rows(nodes[0], db, shard)
        token = nodes[0].get(f"/{db}/_changes").json["last_seq"]
        bins_before = nodes[0].get(f"/{db}/_time_seq").json["time_seq"]

        writers = Writers(nodes, db)
        acked, failures = writers.acked, writers.failures

        # Continuous feeds open throughout the move: the database's on A from the token, and the
        # shard's own feed on A and on the third node from the shard's last seq.
        writers_done = threading.Event()
        shard_seq = max(before_rows.values())
        feeds = {(0, f"/{db}/_changes?feed=continuous&heartbeat=200&since={token}"): [],
                 (0, f"/{db}/_changes/{shard}?feed=continuous&heartbeat=200&since={shard_seq}"): [],
                 (2, f"/{db}/_changes/{shard}?feed=continuous&heartbeat=200&since={shard_seq}"): []}

        def follow(k, path, streamed):
            conn = http.client.HTTPConnection("127.0.0.1", nodes[k].port, timeout=30)
            conn.request("GET", path, headers=dict(nodes[k].auth_header()))
            r = conn.getresponse()
            deadline = time.time() + 60
            while time.time() < deadline:
                line = r.readline()
                if not line:
                    break
                if line.strip():
                    row = json.loads(line)
                    if "id" in row:
                        streamed.append(row["id"])
                if writers_done.is_set() and set(acked) <= set(streamed):
                    break
            conn.close()

        followers = [threading.Thread(target=follow, args=(k, path, out)) for (k, path), out in feeds.items()]
        for f in followers:
            f.start()
        writers.start()
        time.sleep(0.3)
        # Asked on the third node: the job is made on the target.
        r = nodes[2].post("/_reshard/jobs", {"type": "move", "shard": f"shards/{shard.split('.')[0]}/{db}.{shard.split('.')[1]}",
                                             "source": names[0], "target": names[1]})
        self.assertEqual(r.status, 201, r.json)
        self.assertEqual(r.json[0]["node"], names[1])
        # The job lives on the target; any member answers for it.
        job = wait_job(nodes[2], r.json[0]["id"])
        self.assertEqual(job["node"], names[1])
        for n in nodes:
            listed = n.get("/_reshard/jobs").json
            self.assertEqual([j["id"] for j in listed["jobs"]], [job["id"]])
            self.assertEqual(n.get("/_reshard").json["completed"], 1)
        self.assertEqual(nodes[0].get(f"/_reshard/jobs/{job['id']}/state").json["state"], "completed")
        self.assertEqual(nodes[0].get("/_reshard/jobs/nope").status, 404)
        self.assertEqual(job["job_state"], "completed", job)
        self.assertEqual((job["type"], job["source"], job["target"]), ("move", names[0], names[1]))
        states = [h["type"] for h in job["history"]]
        self.assertEqual(states[-1], "completed")
        self.assertIn("update_shardmap", states)
        time.sleep(0.3)
        writers.stop()
        writers_done.set()
        for f in followers:
            f.join(timeout=30)
        self.assertEqual(failures, [])
        self.assertGreater(len(acked), 100)

        want = set(before_rows) | set(acked)
        for n in nodes:  # every node routes to B and sees every acknowledged write
            self.assertTrue(wait_for(lambda n=n: list(n.get(f"/{db}/_shards").json["shards"].values()) == [[names[1]]], 10))
            rows = {r["id"]: r["value"]["rev"] for r in n.get(f"/{db}/_all_docs").json["rows"]}
            self.assertEqual(set(rows), want)
            for doc_id, rev in acked.items():
                self.assertEqual(rows[doc_id], rev)
        # The continuous feeds followed the copy to B: every write once.
        for (k, path), streamed in feeds.items():
            self.assertEqual(len(streamed), len(set(streamed)), path)
            self.assertEqual(set(streamed), set(acked), path)
        # A token from before the move, on A and on B: exact, every write once.
        for n in (nodes[0], nodes[1]):
            r = n.get(f"/{db}/_changes?since={token}")
            self.assertIsNone(r.header("X-Settee-Since-Resolution"))
            ids = [row["id"] for row in r.json["results"]]
            self.assertEqual(len(ids), len(set(ids)))
            self.assertEqual(set(ids), set(acked))
        # Seqs kept: the documents written before keep theirs on B's copy.
        after_rows = shard_rows(nodes[1], db, shard)
        for doc_id, seq in before_rows.items():
            self.assertEqual(after_rows[doc_id], seq)
        # _local documents, security, attachments and time-seq came along.
        self.assertEqual(nodes[2].get(f"/{db}/_local/checkpoint").json["seq"], 7)
        self.assertEqual(nodes[2].get(f"/{db}/_security").json["members"]["names"], ["ann"])
        self.assertEqual(nodes[2].get(f"/{db}/withatt/a.txt").raw, "hello move")
        # {range: {node: [[bin time, count], ...]}}: A's bins, now B's, with what came since.
        [(rng, before)] = bins_before.items()
        after = nodes[1].get(f"/{db}/_time_seq").json["time_seq"][rng]
        self.assertEqual(list(before), [names[0]])
        self.assertEqual(list(after), [names[1]])
        counts = dict(map(tuple, after[names[1]]))
        for t, count in before[names[0]]:
            self.assertGreaterEqual(counts.get(t, -1), count)
        self.assertEqual(sum(counts.values()), sum(c for _, c in before[names[0]]) + len(acked))
        # A's copy is gone; the lineage says where it went.
        meta = nodes[0].get(f"/{db}/_changes/_meta").json["shards"]
        self.assertEqual([s["id"] for s in meta], [shard])
        self.assertFalse(os.path.exists(os.path.join(nodes[0].data_dir, "shards", shard.split(".")[0])) and any(
            f.startswith(db + ".") for f in os.listdir(os.path.join(nodes[0].data_dir, "shards", shard.split(".")[0]))))
        self.assertEqual(nodes[1].get("/_active_tasks").json, [])
        # The target's calls to the source show in its metrics (issue 12 point 4).
        scraped = nodes[1].get("/_node/_local/_prometheus").raw
        calls = re.search(r'settee_rpc_calls_total\{peer="%s"\} (\d+)' % re.escape(names[0]), scraped)
        self.assertIsNotNone(calls, scraped[:2000])
        self.assertGreater(int(calls.group(1)), 10)  # export batches, seal, retire

    def test_one_of_two_copies_moves_and_the_copies_stay_in_sync(self):
        nodes, names = self.cluster.nodes, self.cluster.names
        db = "mvn2"
        self.assertEqual(nodes[0].put(f"/{db}?q=1&n=2").status, 201)
        [copies] = nodes[0].get(f"/{db}/_shards").json["shards"].values()
        [spare] = [n for n in names if n not in copies]
        moving, staying = copies[0], copies[1]
        writer_node = nodes[names.index(staying)]
        self.assertEqual(writer_node.post(f"/{db}/_bulk_docs", {"docs": [{"_id": f"p{i}"} for i in range(500)]}).status, 201)
        acked, failures, stop = set(), [], threading.Event()

        def writer():
            n = 0
            while not stop.is_set() and n < 3000:
                status, body = writer_node.call("PUT", f"/{db}/w{n:05d}", {"n": n})
                (acked.add(f"w{n:05d}") if status in (201, 202) else failures.append((status, body)))
                n += 1

        t = threading.Thread(target=writer)
        t.start()
        [shard] = [s["id"] for s in nodes[0].get(f"/{db}/_changes/_meta").json["shards"]]
        rng, suffix = shard.split(".")
        r = nodes[0].post("/_reshard/jobs", {"type": "move", "shard": f"shards/{rng}/{db}.{suffix}",
                                             "source": moving, "target": spare})
        self.assertEqual(r.status, 201, r.json)
        job = wait_job(nodes[0], r.json[0]["id"])
        time.sleep(0.3)
        stop.set()
        t.join()
        self.assertEqual(job["job_state"], "completed", job)
        self.assertEqual(failures, [])
        want = {f"p{i}" for i in range(500)} | acked
        self.assertTrue(wait_for(lambda: all(n.get(f"/{db}/_shards").json["shards"][rng] == [spare, staying] for n in nodes), 10))
        # Each copy holds everything (internal replication keeps the moved copy and the other in step).
        for name in (spare, staying):
            n = nodes[names.index(name)]
            self.assertTrue(wait_for(lambda n=n: n.get(f"/{db}").json["doc_count"] == len(want), 15))
        self.assertEqual(nodes[names.index(spare)].put(f"/{db}/after", {}).status, 201)
        self.assertTrue(wait_for(lambda: nodes[names.index(staying)].get(f"/{db}/after").status == 200, 10))

    def test_a_copy_moves_back_to_the_node_it_left(self):
        # The node deleted its copy when it left: the path comes back with the copy (issue 34).
        nodes, names = self.cluster.nodes, self.cluster.names
        db = "mvback"
        self.assertEqual(nodes[0].put(f"/{db}?q=1&n=1").status, 201)
        [[holder]] = nodes[0].get(f"/{db}/_shards").json["shards"].values()
        other = [n for n in names if n != holder][0]
        self.assertEqual(nodes[1].post(f"/{db}/_bulk_docs", {"docs": [{"_id": f"d{i}"} for i in range(50)]}).status, 201)
        self.assertEqual(nodes[0].put(f"/{db}/_local/checkpoint", {"seq": 7}).status, 201)
        [shard] = [s["id"] for s in nodes[0].get(f"/{db}/_changes/_meta").json["shards"]]
        rng, suffix = shard.split(".")
        for source, target in ((holder, other), (other, holder)):
            r = nodes[0].post("/_reshard/jobs", {"type": "move", "shard": f"shards/{rng}/{db}.{suffix}",
                                                 "source": source, "target": target})
            self.assertEqual(r.status, 201, r.json)
            job = wait_job(nodes[0], r.json[0]["id"])
            self.assertEqual(job["job_state"], "completed", job)
            # Gone from the job list again: the other tests of the class read it.
            self.assertEqual(nodes[0].delete(f"/_reshard/jobs/{job['id']}").status, 200)
            self.assertTrue(wait_for(lambda: all(n.get(f"/{db}/_shards").json["shards"][rng] == [target]
                                                 for n in nodes), 10))
        for n in nodes:
            self.assertEqual(n.get(f"/{db}").json["doc_count"], 50)
            self.assertEqual(n.get(f"/{db}/_local/checkpoint").json["seq"], 7)
        self.assertEqual(nodes[2].put(f"/{db}/after", {}).status, 201)

    def test_bad_move_requests_are_refused(self):
        nodes, names = self.cluster.nodes, self.cluster.names
        db = "mvbad"
        shard = self.setup_db(db, docs=5)
        name = f"shards/{shard.split('.')[0]}/{db}.{shard.split('.')[1]}"
        cases = [
            ({"type": "move", "shard": name, "target": names[1]}, "`source` (a node) is required"),
            ({"type": "move", "shard": name, "source": names[0]}, "`target` (a node) is required"),
            ({"type": "move", "shard": name, "source": "nobody@127.0.0.1", "target": names[1]},
             "`source` is not a valid node name"),
            ({"type": "move", "db": db, "source": names[0], "target": names[1]},
             "A move names one `shard` (or `db` and `range`)"),
            ({"type": "jump", "shard": name}, "`job type must be `split` or `move`"),
        ]
        for body, reason in cases:
            r = nodes[2].post("/_reshard/jobs", body)
            self.assertError(r, 400, "bad_request", reason)
        # The source holds no copy; the target holds one already (asked on the target and elsewhere).
        r = nodes[2].post("/_reshard/jobs", {"type": "move", "shard": name, "source": names[1], "target": names[2]})
        self.assertEqual(r.status, 400, r.json)
        self.assertIn("holds no copy", r.json[0]["reason"])
        r = nodes[0].post("/_reshard/jobs", {"type": "move", "shard": name, "source": names[0], "target": names[0]})
        self.assertEqual(r.status, 400, r.json)
        self.assertIn("holds a copy", r.json[0]["reason"])
        self.assertEqual(list(nodes[0].get(f"/{db}/_shards").json["shards"].values()), [[names[0]]])


class FeedsThroughSplitsAndAMove(ClusterTest):
    """Issue 10 point 3 (apache/couchdb #3885): a consumer holding any token from before two rounds of
    splits and a move gets every change after it exactly once, with no writes after the last
    operation, in every feed type; the last token gives nothing."""

    NODES, SYNC_INTERVAL_MS = 2, 500

    def test_tokens_from_before_every_operation_continue_exactly(self):
        nodes, names = self.cluster.nodes, self.cluster.names
        db = "feeds3885"
        self.assertEqual(nodes[0].put(f"/{db}?q=1&n=1").status, 201)
        [[holder]] = nodes[0].get(f"/{db}/_shards").json["shards"].values()
        a, b = nodes[names.index(holder)], nodes[1 - names.index(holder)]
        other = names[1 - names.index(holder)]
        written, tokens = [], []  # tokens[i]: (token, the ids written before it)

        def write(k):
            docs = [{"_id": f"r{len(tokens)}-{i:03d}"} for i in range(k)]
            self.assertEqual(a.post(f"/{db}/_bulk_docs", {"docs": docs}).status, 201)
            written.extend(d["_id"] for d in docs)
            for n in (a, b):
                tokens.append((n.get(f"/{db}/_changes?limit=0&since=now").json["last_seq"], list(written)))

        def split_all():
            for rng in list(a.get(f"/{db}/_shards").json["shards"]):
                r = a.post("/_reshard/jobs", {"type": "split", "db": db, "range": rng})
                self.assertEqual(r.status, 201, r.json)
                self.assertEqual(wait_job(a, r.json[0]["id"])["job_state"], "completed")

        write(100)
        split_all()  # 1 -> 2 shards
        write(100)
        split_all()  # 2 -> 4 shards
        write(100)
        [shard] = [s["id"] for s in a.get(f"/{db}/_changes/_meta").json["shards"] if s["state"] == "open"][:1]
        rng, suffix = shard.split(".")
        r = a.post("/_reshard/jobs", {"type": "move", "shard": f"shards/{rng}/{db}.{suffix}", "source": holder,
                                      "target": other})
        self.assertEqual(r.status, 201, r.json)
        self.assertEqual(wait_job(b, r.json[0]["id"])["job_state"], "completed")
        self.assertTrue(wait_for(lambda: all(n.get(f"/{db}/_shards").json["shards"][rng] == [other] for n in nodes), 10))
        # No write after the move. Every token from before, asked on either node, in every feed type.
        self.assertEqual(len(tokens), 6)
        for token, before in tokens:
            want = set(written) - set(before)
            for n in nodes:
                for feed in ("normal", "longpoll", "continuous", "eventsource"):
                    with self.subTest(feed=feed, node=n.port, before=len(before)):
                        if feed == "continuous":
                            text = n.raw_stream(f"/{db}/_changes?feed=continuous&timeout=300&since={token}", 0.6)
                            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
                            ids = [row["id"] for row in rows if "id" in row]
                        elif feed == "eventsource":
                            r = n.get(f"/{db}/_changes?feed=eventsource&timeout=300&since={token}")
                            rows = [json.loads(e.split("\n")[0][6:]) for e in r.raw.split("\n\n")
                                    if e.startswith("data: {")]
                            ids = [row["id"] for row in rows if "id" in row]
                        else:
                            r = n.get(f"/{db}/_changes?feed={feed}&timeout=300&since={token}")
                            self.assertEqual(r.status, 200)
                            self.assertIsNone(r.header("X-Settee-Since-Resolution"))
                            ids = [row["id"] for row in r.json["results"]]
                        self.assertEqual(len(ids), len(set(ids)))
                        self.assertEqual(set(ids), want)
        # The newest position, after the move: nothing to send, on either node (no rewind).
        for n in nodes:
            last = n.get(f"/{db}/_changes").json["last_seq"]
            self.assertEqual(n.get(f"/{db}/_changes?since={last}").json["results"], [])
            self.assertEqual(n.get(f"/{db}/_changes?feed=longpoll&timeout=300&since={last}").json["results"], [])


class MoveSurvivesKill(OwnNodesTest):
    """The target killed at each state of a move (and once the source is sealed, before the map
    switch), or the source killed mid-copy: on restart the job goes on, nothing acknowledged is lost,
    the source stays the authority until the switch, and its copy goes once the move is done."""

    def start_cluster(self):
        cluster = Cluster(2, sync_interval_ms=500).start()
        self.addCleanup(cluster.cleanup)
        return cluster.wait_connected()

    def move_through(self, failpoint=None, kill_source=False, source_down_s=0.0):
        cluster = self.start_cluster()
        db = "mvkill"
        self.assertEqual(cluster.nodes[0].put(f"/{db}?q=1&n=1").status, 201)
        [[holder]] = cluster.nodes[0].get(f"/{db}/_shards").json["shards"].values()
        # a: the node holding the copy (the source), b: the target.
        a, b = sorted(cluster.nodes, key=lambda n: cluster.names[cluster.nodes.index(n)] != holder)
        names = [cluster.names[cluster.nodes.index(n)] for n in (a, b)]
        docs = [{"_id": f"d{i:05d}", "i": i} for i in range(6000)]
        self.assertEqual(a.post(f"/{db}/_bulk_docs", {"docs": docs}).status, 201)
        [shard] = [s["id"] for s in a.get(f"/{db}/_changes/_meta").json["shards"]]
        rng, suffix = shard.split(".")
        if failpoint:
            b.stop()
            b.env = {"SETTEE_FAILPOINT": failpoint}
            b.start()
            self.assertTrue(wait_for(lambda: all(n.get("/_membership", fresh=True).json["all_nodes"] == sorted(names)
                                                 for n in (a, b)), 20))
        acked, stop = {}, threading.Event()

        def writer():
            n = 0
            while not stop.is_set() and n < 5000:
                try:
                    status, body = a.call("PUT", f"/{db}/w{n:05d}", {"n": n})
                except OSError:
                    status = 0
                if status in (201, 202):
                    acked[f"w{n:05d}"] = body["rev"]
                n += 1

        t = threading.Thread(target=writer)
        t.start()
        move = {"type": "move", "shard": f"shards/{rng}/{db}.{suffix}", "source": names[0], "target": names[1]}
        r = a.post("/_reshard/jobs", move)
        # Just after b restarted, a's connection to it may be the old one: 503, and a retry works.
        # Or b took the job and reached the failpoint before its answer left: b is gone, the job
        # saved; it is found on b once b is back.
        deadline = time.time() + 20
        while r.status == 503 and time.time() < deadline and not (failpoint and b.proc.poll() is not None):
            time.sleep(0.2)
            r = a.post("/_reshard/jobs", move)
        job_id = None
        if r.status != 503 or not failpoint:
            self.assertEqual(r.status, 201, r.json)
            job_id = r.json[0]["id"]
        if failpoint:
            b.proc.wait(timeout=60)
            self.assertEqual(b.proc.returncode, 70)
            b.stop()
            b.env = {}
            b.start()
        if job_id is None:
            [job_id] = [j["id"] for j in b.get("/_reshard/jobs").json["jobs"] if j["type"] == "move"]
        if kill_source:
            time.sleep(0.05)
            a.kill()
            time.sleep(source_down_s)
            a.start()
        job = wait_job(b, job_id)
        stop.set()
        t.join()
        self.assertEqual(job["job_state"], "completed", job)
        want = {d["_id"] for d in docs} | set(acked)
        for n in (a, b):
            self.assertTrue(wait_for(lambda n=n: list(n.get(f"/{db}/_shards").json["shards"].values()) == [[names[1]]], 10))
            # A node just restarted may not be dialled back yet (503 for a moment): a client retries.
            self.assertTrue(wait_for(lambda n=n: n.get(f"/{db}/_all_docs").status == 200, 10))
            r = n.get(f"/{db}/_all_docs")
            rows = {row["id"]: row["value"]["rev"] for row in r.json["rows"]}
            # Every acknowledged write; a write whose answer was an error may be there too.
            self.assertEqual(want - set(rows), set())
            self.assertTrue(all(i.startswith("w") for i in set(rows) - want))
            for doc_id, rev in acked.items():
                self.assertEqual(rows[doc_id], rev)
        # The source's copy is gone; writes go on, to the target's copy.
        self.assertFalse(os.path.exists(os.path.join(a.data_dir, "shards", rng, f"{db}.{suffix}")))
        self.assertTrue(os.path.exists(os.path.join(b.data_dir, "shards", rng, f"{db}.{suffix}")))
        self.assertEqual(a.put(f"/{db}/after", {}).status, 201)
        return job

    def test_target_killed_before_the_switch_copies_on(self):
        for failpoint in ("initial_copy", "topoff2", "update_shardmap"):
            with self.subTest(failpoint=failpoint):
                job = self.move_through(failpoint)
                self.assertIn("the shard map had not switched: copying on",
                              [h["detail"] for h in job["history"] if h["type"] == "restart"])

    def test_target_killed_with_the_source_sealed_lifts_the_seal_and_copies_on(self):
        job = self.move_through("update_shardmap:sealed")
        self.assertIn("the shard map had not switched: copying on",
                      [h["detail"] for h in job["history"] if h["type"] == "restart"])

    def test_target_killed_after_the_switch_goes_forward(self):
        for failpoint in ("wait_source_close", "source_delete"):
            with self.subTest(failpoint=failpoint):
                job = self.move_through(failpoint)
                self.assertIn("the shard map had switched: going forward",
                              [h["detail"] for h in job["history"] if h["type"] == "restart"])

    def test_source_killed_during_the_copy(self):
        self.move_through(kill_source=True)

    def test_source_killed_and_back_seconds_later(self):
        # The target retries the source while it is down and while it restarts (docs/api.md).
        job = self.move_through(kill_source=True, source_down_s=3)
        self.assertEqual(job["job_state"], "completed", job)


if __name__ == "__main__":
    main()
