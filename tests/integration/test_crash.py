"""Durability: kill -9 the node during a concurrent write load; every acknowledged write survives.

Writers create and update their own documents (single PUTs and _bulk_docs) and record each
acknowledged (id, rev). After SIGKILL and a restart, each acknowledged rev must be the document's
current rev or an ancestor of it (a write in flight at the kill may have committed unacknowledged).
"""
import random
import threading
import time

from harness import Node, NodeTest, main

WRITERS = 12
ROUNDS = 3


class CrashDuringWrites(NodeTest):
    def write_load(self, node, acked, stop, seed):
        rng = random.Random(seed)
        client = Node.__new__(Node)
        client.__dict__.update(node.__dict__)
        client.conn = None
        revs = {}
        for i in range(100000):  # bounded; `stop` ends it much sooner
            if stop.is_set():
                break
            try:
                if rng.random() < 0.2:
                    docs = [{"_id": f"w{seed}-b{i}-{k}", "k": k} for k in range(20)]
                    r = client.post("/crash/_bulk_docs", {"docs": docs})
                    if r.status == 201:
                        for row in r.json:
                            acked[row["id"]] = row["rev"]
                else:
                    doc_id = f"w{seed}-d{rng.randrange(30)}"
                    body = {"i": i}
                    if doc_id in revs:
                        body["_rev"] = revs[doc_id]
                    r = client.put(f"/crash/{doc_id}", body)
                    if r.status == 201:
                        revs[doc_id] = r.json["rev"]
                        acked[doc_id] = r.json["rev"]
            except OSError:
                break  # the node is gone
            except Exception:
                break

    def test_every_acknowledged_write_survives_sigkill(self):
        node = self.node
        self.assertEqual(node.put("/crash?q=3").status, 201)
        acked = {}
        for round_no in range(ROUNDS):
            stop = threading.Event()
            threads = [threading.Thread(target=self.write_load, args=(node, acked, stop, round_no * 100 + w))
                       for w in range(WRITERS)]
            for t in threads:
                t.start()
            time.sleep(1.5 + random.random())
            node.kill()
            stop.set()
            for t in threads:
                t.join(timeout=30)
            node.start()
            self.assertGreater(len(acked), 50, "the load produced too few writes to be meaningful")
            lost = []
            items = list(acked.items())
            for start in range(0, len(items), 500):
                batch = items[start:start + 500]
                r = node.post("/crash/_bulk_get?revs=true", {"docs": [{"id": d} for d, _ in batch]})
                self.assertEqual(r.status, 200, r)
                for (doc_id, rev), result in zip(batch, r.json["results"]):
                    found = result["docs"][0]
                    if "ok" not in found:
                        lost.append((doc_id, rev, found))
                        continue
                    hist = found["ok"]["_revisions"]
                    known = {f"{hist['start'] - i}-{h}" for i, h in enumerate(hist["ids"])}
                    if rev not in known:
                        lost.append((doc_id, rev, found["ok"]["_rev"]))
            self.assertEqual(lost, [], f"round {round_no}: acknowledged writes lost after kill -9")
            info = node.get("/crash").json
            self.assertGreaterEqual(info["doc_count"], len(acked))
        print(f"\n  {len(acked)} acknowledged documents verified across {ROUNDS} kill -9 rounds")


if __name__ == "__main__":
    main()
