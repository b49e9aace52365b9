"""Purges that stay purged under kill -9 (issue 57 point 7): a 3-node cluster (n=3, automatic
internal replication) takes writes, view and Mango queries, a continuous replication and a stream
of purges while one node at a time is killed with SIGKILL and restarted. After the chaos and a
sync, every purge that was acknowledged (201 or 202 naming the revision) holds on every copy: the
revision is on none, the document is in no node's `_all_docs`, view or Mango answer.

Before the fix (issue 57), 10 cycles brought back 48 to 128 of ~1,300 acknowledged purges, in two
ways: a copy that applied a purge before the write it named reached it (a coordinator's write
still on its way) then made the purged revision itself; and a copy that lacked the purged leaf
kept its parent, which no other copy refused. PURGE_CHAOS_CYCLES and PURGE_CHAOS_SEED vary the run."""
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import OwnNodesTest, main  # noqa: E402
from test_jobs_chaos import call, live  # noqa: E402
from test_membership import Cluster, wait_for  # noqa: E402

DB = "pchaos"
CYCLES = int(os.environ.get("PURGE_CHAOS_CYCLES", "10"))


class Load:
    """Threads against random live nodes until stopped: a writer of new documents, a purger that
    creates `p-<n>` and purges it (possibly after an edit), and a reader of the view and Mango."""

    def __init__(self, cluster, rng):
        self.cluster, self.rng, self.stop = cluster, rng, threading.Event()
        self.purged = {}  # id -> the revision acknowledged purged
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=f, daemon=True) for f in (self.write, self.purge, self.purge,
                                                                          self.read)]

    def node(self):
        nodes = live(self.cluster)
        return self.rng.choice(nodes) if nodes else None

    def write(self):
        n = 0
        while not self.stop.is_set():
            node = self.node()
            if node:
                call(node, "PUT", f"/{DB}/w-{n:06d}", {"kind": "w", "n": n})
                n += 1

    def purge(self):
        with self.lock:
            self.purgers = getattr(self, "purgers", 0) + 1
            name = self.purgers
        n = 0
        while not self.stop.is_set():
            n += 1
            doc_id = f"p-{name}-{n:05d}"
            node = self.node()
            if not node:
                continue
            status, body = call(node, "PUT", f"/{DB}/{doc_id}", {"kind": "p", "n": n})
            if status not in (201, 202):
                continue
            rev = body["rev"]
            if n % 3 == 0:  # edited first: the purge names the newer revision
                status, body = call(self.node() or node, "PUT", f"/{DB}/{doc_id}", {"kind": "p", "n": n, "_rev": rev})
                if status not in (201, 202):
                    continue
                rev = body["rev"]
            status, body = call(self.node() or node, "POST", f"/{DB}/_purge", {doc_id: [rev]})
            if status in (201, 202) and rev in (body.get("purged") or {}).get(doc_id, []):
                with self.lock:
                    self.purged[doc_id] = rev

    def read(self):
        while not self.stop.is_set():
            node = self.node()
            if node:
                call(node, "GET", f"/{DB}/_design/d/_view/by_kind?key=%22p%22&limit=5")
                call(node, "POST", f"/{DB}/_find", {"selector": {"kind": "p"}, "limit": 5})
            time.sleep(0.05)

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join()


class PurgeChaos(OwnNodesTest):
    def test_acknowledged_purges_stay_purged_on_every_copy(self):
        rng = random.Random(int(os.environ.get("PURGE_CHAOS_SEED", "57")))
        cluster = Cluster(3, sync_interval_ms=300).start()
        self.addCleanup(cluster.cleanup)
        cluster.wait_connected()
        n1 = cluster.nodes[0]
        self.assertEqual(n1.put(f"/{DB}?q=2&n=3").status, 201)
        self.assertTrue(wait_for(lambda: all(n.get(f"/{DB}").status == 200 for n in cluster.nodes)))
        self.assertEqual(n1.put(f"/{DB}/_design/d", {"views": {"by_kind": {
            "map": "function (doc) { emit(doc.kind, null); }"}}}).status, 201)
        self.assertEqual(n1.post(f"/{DB}/_index", {"index": {"fields": ["kind"]}, "name": "kind"}).status, 200)
        r = n1.post("/_replicate", {"source": DB, "target": DB + "_copy", "create_target": True, "continuous": True})
        self.assertEqual(r.status, 202, r)

        load = Load(cluster, rng).start()
        for cycle in range(CYCLES):
            time.sleep(rng.uniform(0.5, 1.5))
            victim = rng.choice(cluster.nodes)
            victim.proc.kill()
            victim.proc.wait()
            victim.proc = None
            time.sleep(rng.uniform(0.2, 1.0))
            victim.start(port=victim.port)
        time.sleep(1)
        load.finish()
        self.assertGreater(len(load.purged), 10, "too few purges acknowledged to mean anything")

        # Converged: every node connected, every copy pushed to every other (twice: both ways).
        cluster.wait_connected(timeout=60)
        for _ in range(2):
            for node in cluster.nodes:
                r = node.post(f"/{DB}/_sync_shards", raw_body="", headers={"Content-Type": "application/json"})
                self.assertIn(r.status, (200, 202), r)
        back = []
        for node in cluster.nodes:
            for doc_id, rev in sorted(load.purged.items()):
                r = node.get(f"/{DB}/{doc_id}?r=1&open_revs=all", headers={"Accept": "application/json"})
                leaves = [row["ok"]["_rev"] for row in (r.json if r.status == 200 else []) if "ok" in row]
                if leaves:
                    back.append((node.port, doc_id, rev, leaves))
            rows = node.get(f"/{DB}/_all_docs?startkey=%22p-%22&endkey=%22p.%22").json["rows"]
            back += [(node.port, "_all_docs", row["id"]) for row in rows if row["id"] in load.purged]
            view = node.get(f"/{DB}/_design/d/_view/by_kind?key=%22p%22").json["rows"]
            back += [(node.port, "view", row["id"]) for row in view if row["id"] in load.purged]
            found = node.post(f"/{DB}/_find", {"selector": {"kind": "p"}, "limit": 100000}).json["docs"]
            back += [(node.port, "_find", d["_id"]) for d in found if d["_id"] in load.purged]
        print(f"\n{CYCLES} kill -9 cycles: {len(load.purged)} purges acknowledged, {len(back)} came back")
        for b in back[:20]:
            print("  came back:", b)
        self.assertEqual(back, [])


if __name__ == "__main__":
    main()
