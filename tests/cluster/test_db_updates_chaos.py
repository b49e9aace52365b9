"""_db_updates under churn and kill -9 (issue 9, point 4): two consumers follow the feed of n1, one
continuous and one longpoll, and a third asks another node for each page (issue 12), while writers
create, write and delete databases through n1 and n2 and n3 is SIGKILLed and restarted again and again. At the end each consumer's view matches the truth:
which databases exist and which incarnation, each created/deleted seen exactly once per instance
(created first), and every acknowledged write followed by an `updated` row for its database later
than everything the consumer had read when the write was acknowledged."""
import json
import os
import random
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import Node, NodeTest, main  # noqa: E402
from test_membership import Cluster, wait_for  # noqa: E402

KILLS = 4
DBS = 12
# Each writer's steps a second: ~25 lifecycle events a second in all, the churn docs/api.md states
# for promise 4. Unpaced, the writers made ~100 a second, and a node restarted after kill -9 missed
# more than the 64 events a token remembers while it caught up: 4-12% of the rows came again
# (the documented limit, but a bound that moved with the machine's load).
STEPS_PER_S = 60


def client_of(node):
    c = Node.__new__(Node)
    c.__dict__.update(node.__dict__)
    c.conn = None
    return c


class Consumer:
    """Follows /_db_updates on a node and keeps every row, in order (bounded by `stop`). The
    `hopping` kind is a longpoll consumer that asks the next node of `others` for every page (its
    token read on another node each time; a node that is down is passed over)."""

    def __init__(self, node, kind, others=()):
        self.node, self.kind = node, kind
        self.others, self.hops = list(others), 0
        self.rows = []
        self.lock = threading.Lock()
        self.since = node.get("/_db_updates?since=now").json["last_seq"]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)  # a failed test must still exit

    def mark(self):
        with self.lock:
            return len(self.rows)

    def run(self):
        while not self.stop.is_set():
            try:
                if self.kind == "longpoll":
                    self.longpoll()
                elif self.kind == "hopping":
                    self.hop()
                else:
                    self.continuous()
            except OSError:
                time.sleep(0.1)

    def longpoll(self):
        c = client_of(self.node)
        while not self.stop.is_set():
            res = c.get(f"/_db_updates?feed=longpoll&timeout=500&since={self.since}").json
            with self.lock:
                self.rows.extend(res["results"])
                self.since = res["last_seq"]

    def hop(self):
        while not self.stop.is_set():
            self.hops += 1
            c = client_of(self.others[self.hops % len(self.others)])
            res = c.get(f"/_db_updates?feed=longpoll&timeout=300&since={self.since}").json
            with self.lock:
                self.rows.extend(res["results"])
                self.since = res["last_seq"]

    def continuous(self):
        s = socket.create_connection(("127.0.0.1", self.node.port), timeout=1)
        auth = self.node.auth_header()["Authorization"]
        s.sendall(f"GET /_db_updates?feed=continuous&heartbeat=200&since={self.since} HTTP/1.0\r\n"
                  f"Authorization: {auth}\r\n\r\n".encode())
        buf = b""
        head_done = False
        try:
            while not self.stop.is_set():
                try:
                    chunk = s.recv(65536)
                except socket.timeout:
                    continue
                if not chunk:
                    return
                buf += chunk
                if not head_done:
                    if b"\r\n\r\n" not in buf:
                        continue
                    buf = buf.split(b"\r\n\r\n", 1)[1]
                    head_done = True
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if not line.strip():
                        continue
                    row = json.loads(line)
                    if "db_name" in row:
                        with self.lock:
                            self.rows.append(row)
                            self.since = row["seq"]
        finally:
            s.close()


class DbUpdatesChaos(NodeTest):
    def setUp(self):
        self.cluster = Cluster(3, sync_interval_ms=300).start()
        self.n1, self.n2, self.n3 = self.cluster.nodes
        self.node = self.n1
        names = sorted(self.cluster.names)
        for n in self.cluster.nodes:
            self.assertTrue(wait_for(lambda n=n: n.get("/_membership", fresh=True).json["all_nodes"] == names, 20))

    def tearDown(self):
        self.cluster.cleanup()

    def test_consumers_see_the_truth_through_churn_and_kills(self):
        consumers = [Consumer(self.n1, "continuous"), Consumer(self.n1, "longpoll"),
                     Consumer(self.n1, "hopping", self.cluster.nodes)]
        for c in consumers:
            c.thread.start()
            self.addCleanup(c.stop.set)
        # truth: name -> instance of the live incarnation; acked writes: (name, instance, marks)
        live, writes, stop = {}, [], threading.Event()
        lock = threading.Lock()

        def writer(seed, via):
            rng = random.Random(seed)
            c = client_of(via)
            next_at = time.monotonic()
            for step in range(100000):  # bounded; `stop` ends it much sooner
                if stop.is_set():
                    return
                next_at += 1 / STEPS_PER_S
                time.sleep(max(0.0, next_at - time.monotonic()))
                name = f"chaos-{seed}-{rng.randrange(DBS)}"  # each writer its own names: no create/delete race
                try:
                    with lock:
                        exists = name in live
                    op = rng.random()
                    if not exists:
                        r = c.put(f"/{name}?q=1&n={rng.choice([2, 3])}")
                        if r.status == 201:
                            inst = c.get(f"/{name}").json["instance_start_time"]
                            with lock:
                                live[name] = inst
                    elif op < 0.1:
                        with lock:
                            inst = live.get(name)
                        if inst and c.delete(f"/{name}").status == 200:
                            with lock:
                                live.pop(name, None)
                    else:
                        with lock:
                            inst = live.get(name)
                        marks = [k.mark() for k in consumers]
                        r = c.put(f"/{name}/d{seed}-{step}", {})
                        if r.status in (201, 202) and inst:
                            with lock:
                                writes.append((name, inst, marks))
                except (OSError, ValueError, KeyError):
                    time.sleep(0.05)

        threads = [threading.Thread(target=writer, args=(k, via)) for k, via in enumerate([self.n1, self.n2])]
        for t in threads:
            t.start()
        for _ in range(KILLS):
            time.sleep(1.0 + random.random())
            self.n3.kill()
            time.sleep(0.5)
            self.n3.start(port=self.n3.port)
        stop.set()
        for t in threads:
            t.join()
        # The truth as the cluster tells it, once n3 is back and its catalog has caught up.
        names = sorted(self.cluster.names)
        self.assertTrue(wait_for(lambda: self.n1.get("/_membership", fresh=True).json["all_nodes"] == names, 20))
        def cluster_truth():
            """n1's catalog: every chaos database it lists, with its instance (None: not readable)."""
            out = {}
            for n in self.n1.get("/_all_dbs", fresh=True).json:
                if n.startswith("chaos-"):
                    r = self.n1.get(f"/{n}", fresh=True)
                    out[n] = r.json["instance_start_time"] if r.status == 200 else None
            return out

        def converged():
            t = cluster_truth()
            return None not in t.values() and all(t.get(name) == inst for name, inst in live.items())

        # n1 learns what n2 created or deleted by internal replication of `_dbs`: let it converge
        # (bounded) until it holds every acknowledged creation not deleted since, each readable.
        # (It may hold more: a creation whose answer was not a 201 can still have happened.)
        self.assertTrue(wait_for(converged, 30), (cluster_truth(), live))
        truth = cluster_truth()

        def caught_up(k):
            seen, passed = {}, set()
            for r in k.rows:
                event = (r["db_name"], r["instance"], r["type"])
                if event in passed:
                    continue  # the hopping consumer's repeats (at least once)
                passed.add(event)
                if r["type"] == "created":
                    seen[r["db_name"]] = r["instance"]
                elif r["type"] == "deleted" and seen.get(r["db_name"]) == r["instance"]:
                    del seen[r["db_name"]]
            return {n: i for n, i in seen.items() if n.startswith("chaos-")} == truth

        for k in consumers:
            self.assertTrue(wait_for(lambda k=k: caught_up(k), 30), k.kind)
        time.sleep(1.5)  # rows recorded after the last write (flusher, restarted n3's recovery)
        for k in consumers:
            k.stop.set()
            k.thread.join()
            rows = [r for r in k.rows if r["db_name"].startswith("chaos-")]
            lifecycle = [(r["db_name"], r["instance"], r["type"]) for r in rows if r["type"] != "updated"]
            if k.kind == "hopping":
                # Exactly once across nodes, within limits (docs/api.md, _db_updates promise 4): a
                # row may come again when more than 64 lifecycle events passed elsewhere before the
                # node it hops to learnt it (n3 catching up after a kill -9, at ~25 events/s here).
                # Seen: 0 repeated in 11 runs; with the seen list alone (no marks), ~99% repeated.
                repeated = len(lifecycle) - len(set(lifecycle))
                print(f"\n  hopping consumer: {k.hops} pages over 3 nodes, {len(lifecycle)} lifecycle rows, "
                      f"{repeated} repeated", file=sys.stderr)
                self.assertLessEqual(repeated, len(set(lifecycle)) // 10, "hopping: rows came again")
                lifecycle = list(dict.fromkeys(lifecycle))
            self.assertEqual(len(lifecycle), len(set(lifecycle)), f"{k.kind}: a lifecycle row twice")
            for name, inst, kind in lifecycle:
                if kind == "deleted":
                    self.assertLess(lifecycle.index((name, inst, "created")), lifecycle.index((name, inst, kind)))
            index = consumers.index(k)
            for name, inst, marks in writes:
                later = [r for r in k.rows[marks[index]:] if r["db_name"] == name and r["type"] == "updated"
                         and r["instance"] == inst]
                deleted = any(r["db_name"] == name and r["instance"] == inst and r["type"] == "deleted"
                              for r in k.rows)
                self.assertTrue(later or deleted, (f"{k.kind}: no updated row for {name} ({inst}) after a write",
                                                   marks, [(i, r) for i, r in enumerate(k.rows) if r["db_name"] == name],
                                                   self.n1.get(f"/{name}/_shards").json))


if __name__ == "__main__":
    main()
