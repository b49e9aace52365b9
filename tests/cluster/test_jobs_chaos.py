"""Jobs that recover (issue 34 item 7): splits and moves in a 3-node cluster while writers write and
a random node is killed with SIGKILL and restarted, again and again. A continuous `_changes`
consumer that resumes on any live node with its last seq misses nothing and re-receives at most
the rows each copy committed after its last internal-replication checkpoint with the copy the
consumer had read (docs/api.md "Resuming on another copy"); every job completes, a move whose
source restarts included."""
import http.client
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import Node, OwnNodesTest, main  # noqa: E402
from test_membership import Cluster, wait_for  # noqa: E402
from test_move_cluster import wait_job  # noqa: E402

DB = "chaos"


def live(cluster):
    return [n for n in cluster.nodes if n.proc is not None and n.proc.poll() is None]


def call(node, method, path, body=None, timeout=30):
    """(status, JSON) on a connection of its own, (0, None) when the node does not answer."""
    try:
        conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=timeout)
        headers = dict(node.auth_header())
        data = None
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body), "application/json"
        conn.request(method, path, body=data, headers=headers)
        r = conn.getresponse()
        return r.status, json.loads(r.read() or b"null")
    except (OSError, http.client.HTTPException, ValueError):
        return 0, None
    finally:
        conn.close()


class Consumer:
    """Follows DB's continuous feed from one live node; when the connection breaks, resumes on a
    random live node with the last seq it read. `sessions` holds, per connection, the node, the
    resolution header and the ids read."""

    def __init__(self, cluster, rng):
        self.cluster, self.rng = cluster, rng
        self.sessions, self.stop = [], threading.Event()
        self.last = "0"
        self.thread = threading.Thread(target=self.run, daemon=True)

    def seen(self):
        return {i for s in self.sessions for i in s["ids"]}

    def run(self):
        while not self.stop.is_set():
            nodes = live(self.cluster)
            if not nodes:
                time.sleep(0.1)
                continue
            node = self.rng.choice(nodes)
            try:
                conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=5)
                conn.request("GET", f"/{DB}/_changes?feed=continuous&heartbeat=500&since={self.last}",
                             headers=node.auth_header())
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException):
                time.sleep(0.1)
                continue
            if resp.status != 200:
                conn.close()
                time.sleep(0.1)
                continue
            session = {"node": node.port, "resolution": resp.getheader("X-Settee-Since-Resolution"),
                       "since": self.last, "ids": []}
            self.sessions.append(session)
            try:
                while not self.stop.is_set():
                    line = resp.readline()
                    if not line:
                        break
                    line = line.strip()
                    if not line:
                        continue
                    row = json.loads(line)
                    if "id" in row:
                        session["ids"].append(row["id"])
                        self.last = row["seq"]
                    elif "last_seq" in row:
                        self.last = row["last_seq"]
                        break
            except (OSError, http.client.HTTPException, ValueError):
                pass
            finally:
                conn.close()


class ResumeBound(OwnNodesTest):
    """The bound exactly: a consumer that read node A's copy resumes on B after A's death with
    exactly the changes B committed since its last internal-replication checkpoint with A, before
    and after a split (the children hold their parent's checkpoints and continue its numbering),
    whether its token names a child or the parent."""

    def rows(self, node, since):
        r = node.get(f"/{DB}/_changes?since={since}")
        self.assertEqual(r.status, 200, r.json)
        return r, [row["id"] for row in r.json["results"]]

    def kill_and_resume(self, a, b, token, want):
        a.kill()
        r, ids = self.rows(b, token)
        self.assertEqual(sorted(ids), sorted(want))
        resolution = json.loads(r.header("X-Settee-Since-Resolution"))
        self.assertEqual(set(resolution.values()), {"translated"}, resolution)
        a.start()

    def test_a_resumed_consumer_gets_exactly_the_rows_since_the_checkpoint(self):
        cluster = Cluster(2).start()  # no periodic sync: checkpoints only where this test pushes
        self.addCleanup(cluster.cleanup)
        cluster.wait_connected()
        a, b = cluster.nodes
        self.assertEqual(a.put(f"/{DB}?q=1&n=2").status, 201)

        def write(prefix, k):
            docs = [{"_id": f"{prefix}{i:03d}"} for i in range(k)]
            self.assertEqual(a.post(f"/{DB}/_bulk_docs", {"docs": docs}).status, 201)
            return [d["_id"] for d in docs]

        def push():  # B's copies to A's: B's checkpoints with A
            r = b.post(f"/{DB}/_sync_shards", raw_body="", headers={"Content-Type": "application/json"})
            self.assertTrue(r.json["ok"], r.json)

        def token_on_a():  # a consumer that read every change on A's copies
            r, _ = self.rows(a, 0)
            return r.json["last_seq"]

        write("old", 100)
        push()
        since_push = write("new", 37)
        self.kill_and_resume(a, b, token_on_a(), since_push)
        cluster.wait_connected()

        # A split: the parent's checkpoints go to the children, which continue its numbering.
        push()
        parent_token = token_on_a()
        r = a.post("/_reshard/jobs", {"type": "split", "db": DB, "range": "00000000-ffffffff"})
        self.assertEqual(r.status, 201, r.json)
        self.assertEqual(wait_job(a, r.json[0]["id"])["job_state"], "completed")
        since_split = write("split", 23)
        child_token = token_on_a()
        self.assertEqual(len(b.get(f"/{DB}/_changes/_meta").json["shards"]), 3)
        self.kill_and_resume(a, b, child_token, since_split)  # each child: rewound to 0 before
        cluster.wait_connected()
        self.kill_and_resume(a, b, parent_token, since_split)


    def test_a_token_of_another_incarnation_is_never_translated(self):
        # Same name, same split ranges, checkpoints of the new parents on the new children: the
        # old token's copies are not those children, so it starts over (more rows, never fewer).
        cluster = Cluster(2).start()  # no periodic sync: the non-leader's job must still see the switch
        self.addCleanup(cluster.cleanup)
        cluster.wait_connected()
        a, b = cluster.nodes

        def incarnation(prefix, k):
            self.assertEqual(a.put(f"/{DB}?q=1&n=2").status, 201)
            docs = [{"_id": f"{prefix}{i:03d}"} for i in range(k)]
            self.assertEqual(a.post(f"/{DB}/_bulk_docs", {"docs": docs}).status, 201)
            r = b.post(f"/{DB}/_sync_shards", raw_body="", headers={"Content-Type": "application/json"})
            self.assertTrue(r.json["ok"], r.json)
            r = a.post("/_reshard/jobs", {"type": "split", "db": DB, "range": "00000000-ffffffff"})
            self.assertEqual(r.status, 201, r.json)
            for job in r.json:  # one per copy's node
                self.assertEqual(wait_job(a, job["id"])["job_state"], "completed", job)
            return [d["_id"] for d in docs]

        incarnation("old", 50)
        old_token = self.rows(a, 0)[0].json["last_seq"]
        self.assertEqual(a.delete(f"/{DB}").status, 200)
        now = incarnation("new", 30)
        a.kill()
        r, ids = self.rows(b, old_token)
        self.assertEqual(sorted(ids), now, r.header("X-Settee-Since-Resolution"))
        self.assertEqual(set(json.loads(r.header("X-Settee-Since-Resolution")).values()), {"rewound"})


class JobsChaos(OwnNodesTest):
    def test_splits_and_moves_with_kills(self):
        seed = int(os.environ.get("SETTEE_CHAOS_SEED", random.randrange(1 << 30)))
        print(f"chaos seed {seed}", file=sys.stderr)
        rng = random.Random(seed)
        cluster = Cluster(3, sync_interval_ms=int(os.environ.get("SETTEE_CHAOS_SYNC_MS", 1000)),
                          extra_config=os.environ.get("SETTEE_CHAOS_CONFIG", "")).start()
        if not os.environ.get("SETTEE_CHAOS_KEEP"):
            self.addCleanup(cluster.cleanup)
        cluster.wait_connected()
        names = cluster.names
        self.assertEqual(cluster.nodes[0].put(f"/{DB}?q=2&n=2").status, 201)

        acked, stop = set(), threading.Event()
        self.addCleanup(stop.set)  # a failed assertion must not leave the writers looping forever

        def writer(k):
            n = 0
            while not stop.is_set() and n < 5000:
                nodes = live(cluster)
                if not nodes:
                    time.sleep(0.05)
                    continue
                docs = [{"_id": f"w{k}-{n:04d}-{i:02d}"} for i in range(10)]
                status, body = call(rng.choice(nodes), "POST", f"/{DB}/_bulk_docs", {"docs": docs})
                if status in (201, 202):
                    acked.update(r["id"] for r in body if "rev" in r)
                n += 1
                time.sleep(0.01)

        writers = [threading.Thread(target=writer, args=(k,), daemon=True) for k in range(2)]
        for t in writers:
            t.start()
        consumer = Consumer(cluster, rng)
        self.addCleanup(consumer.stop.set)
        consumer.thread.start()

        def kill_one():
            # Half the time the node the consumer reads from.
            reading = [n for n in live(cluster) if consumer.sessions and n.port == consumer.sessions[-1]["node"]]
            victim = reading[0] if reading and rng.random() < 0.5 else rng.choice(live(cluster))
            time.sleep(rng.uniform(0.0, 0.5))
            victim.kill()
            time.sleep(rng.uniform(0.2, 2.0))
            victim.start()

        jobs = []

        def post_job(body):
            for _ in range(100):
                node = rng.choice(live(cluster))
                status, r = call(node, "POST", "/_reshard/jobs", body)
                if status in (201, 202):
                    jobs.extend(j["id"] for j in r if j.get("ok"))
                    return
                time.sleep(0.2)
            self.fail(f"no job made for {body}")

        def shards():
            for _ in range(100):
                status, r = call(rng.choice(live(cluster)), "GET", f"/{DB}/_shards")
                if status == 200:
                    return r["shards"]
                time.sleep(0.2)
            self.fail("no shard map")

        def wait_jobs():
            for job in list(jobs):
                done = {}

                def ended():
                    status, r = call(rng.choice(live(cluster)), "GET", f"/_reshard/jobs/{job}")
                    if status == 200:
                        done.update(r)
                    return done.get("job_state") in ("completed", "failed")

                self.assertTrue(wait_for(ended, 120), done)
                self.assertEqual(done["job_state"], "completed", done)

        for round_ in range(3):
            time.sleep(1)
            rng_name = rng.choice(sorted(shards()))
            post_job({"type": "split", "db": DB, "range": rng_name})
            kill_one()
            wait_jobs()
            # A node that was down during the switch learns it at the next sync (1 s): take the map
            # once every live node has it (a map read from a node that had not yet learned it named
            # a range already split; seed 850437808).
            settled = {}

            def same_map_everywhere():
                maps = []
                for n in live(cluster):
                    status, r = call(n, "GET", f"/{DB}/_shards")
                    if status != 200:
                        return False
                    maps.append(r["shards"])
                if maps and all(x == maps[0] for x in maps):
                    settled["map"] = maps[0]
                    return True
                return False

            self.assertTrue(wait_for(same_map_everywhere, 60), "the nodes' shard maps did not agree")
            m = settled["map"]
            rng_name = rng.choice(sorted(m))
            source = rng.choice(m[rng_name])
            target = rng.choice([n for n in names if n not in m[rng_name]])
            # The node asked may not have learned the last switch yet (a push it missed while it was
            # down arrives with the next sync): ask until one answers with the map read above.
            open_ids = []
            for _ in range(100):
                status, meta = call(rng.choice(live(cluster)), "GET", f"/{DB}/_changes/_meta")
                if status == 200:
                    open_ids = [s["id"] for s in meta["shards"] if s["state"] == "open" and s["id"].startswith(rng_name)]
                    if len(open_ids) == 1:
                        break
                time.sleep(0.2)
            self.assertEqual(len(open_ids), 1, (rng_name, m, meta))
            [shard] = open_ids
            post_job({"type": "move", "shard": f"shards/{rng_name}/{DB}.{shard.split('.')[1]}",
                      "source": source, "target": target})
            kill_one()
            wait_jobs()
            kill_one()
        stop.set()
        for t in writers:
            t.join()
        self.assertTrue(wait_for(lambda: acked <= consumer.seen(), 60), len(acked - consumer.seen()))
        consumer.stop.set()
        consumer.thread.join()
        # Every resumption continued each range from a checkpoint (or exactly), none from its start.
        for s in consumer.sessions[1:]:
            self.assertNotIn("rewound", json.loads(s["resolution"] or "{}").values(), s["resolution"])
        seen_before, total_again = set(), 0
        for s in consumer.sessions:
            again = [i for i in s["ids"] if i in seen_before]
            total_again += len(again)
            print(f"session on port {s['node']}: {len(s['ids'])} rows, {len(again)} again, "
                  f"resolution {s['resolution']}", file=sys.stderr)
            seen_before.update(s["ids"])
        print(f"re-received {total_again} of {sum(len(s['ids']) for s in consumer.sessions)} rows, "
              f"{len(acked)} acked", file=sys.stderr)


if __name__ == "__main__":
    main()
