"""Quorum writes on a 3-node cluster (n=3): 201 at w copies, 202 below, and what a SIGKILL leaves."""
import base64
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import Node, NodeTest, main  # noqa: E402
from test_membership import Cluster, wait_for  # noqa: E402


def connected(node):
    return node.get("/_membership", fresh=True).json["all_nodes"]


class Quorum(NodeTest):
    """Sync is off: every copy holds exactly what the coordinators wrote to it."""

    def setUp(self):
        self.cluster = Cluster(3).start()
        self.n1, self.n2, self.n3 = self.cluster.nodes
        self.node = self.n1
        names = sorted(self.cluster.names)
        for n in self.cluster.nodes:
            self.assertTrue(wait_for(lambda n=n: connected(n) == names))

    def tearDown(self):
        self.cluster.cleanup()

    def holders(self, db, doc_id):
        """The nodes whose local copy has the document (every node holds every range here)."""
        return [i for i, n in enumerate(self.cluster.nodes) if n.proc and n.get(f"/{db}/{doc_id}?r=1").status == 200]

    def test_attachments_travel_with_their_documents(self):
        # q=1, n=2: one node holds no copy and reads the bytes from another node (readBlob).
        self.assertEqual(self.n1.put("/adb?q=1&n=2").status, 201)
        data = bytes(range(256)) * 400  # 102,400 bytes, two chunks
        body = {"_attachments": {"a.bin": {"data": base64.b64encode(data).decode(), "content_type": "x/y"}}}
        r = self.n1.put("/adb/d", body)
        self.assertEqual(r.status, 201, r)
        holders = self.n1.get("/adb/_shards").json["shards"]["00000000-ffffffff"]
        self.assertEqual(len(holders), 2)
        for node in self.cluster.nodes:
            stub = node.get("/adb/d").json["_attachments"]["a.bin"]
            self.assertEqual((stub["length"], stub["stub"], stub["revpos"]), (len(data), True, 1))
            got = node.get("/adb/d/a.bin")
            self.assertEqual((got.status, got.data, got.header("Content-Type")), (200, data, "x/y"), node.port)
        # Every copy holds the bytes (read each copy alone: r=1 on each holder).
        r2 = self.n2.put("/adb/d", {"_rev": r.json["rev"], "_attachments": {"a.bin": {"stub": True},
                                                                          "b": {"data": "Yg=="}}})
        self.assertEqual(r2.status, 201, r2)
        for node in self.cluster.nodes:
            self.assertEqual(node.get("/adb/d/b").data, b"b")
            self.assertEqual(node.get("/adb/d/a.bin").data, data)
        self.assertEqual(self.n3.post("/adb/_bulk_docs", {"docs": [dict(body, _id="e")]}).status, 201)
        self.assertEqual(self.n1.get("/adb/e/a.bin").data, data)
        # Listings and feeds with attachments=true, from every node (the copy renders the bytes).
        for node in self.cluster.nodes:
            rows = node.get("/adb/_all_docs?include_docs=true&attachments=true").json["rows"]
            self.assertEqual(base64.b64decode(rows[0]["doc"]["_attachments"]["a.bin"]["data"]), data, node.port)
            changes = node.get("/adb/_changes?include_docs=true&attachments=true").json["results"]
            got = {c["id"]: c["doc"]["_attachments"]["a.bin"]["data"] for c in changes}
            self.assertEqual({k: base64.b64decode(v) for k, v in got.items()}, {"d": data, "e": data}, node.port)
        # System databases of a cluster do not take attachments yet.
        self.assertError(self.n1.put("/_users/org.couchdb.user:x", dict(body, name="x", type="user", roles=[],
                                                                         password="p")),
                         501, "not_implemented", "attachments are not stored in system databases of a cluster yet")

    def test_writes_answer_201_at_quorum_and_202_below(self):
        r = self.n1.put("/qdb?q=2")
        self.assertEqual(r.status, 201)
        info = self.n1.get("/qdb").json
        self.assertEqual(info["cluster"], {"q": 2, "n": 3, "w": 2, "r": 2})
        self.assertEqual(self.n1.put("/qdb/all", {}).status, 201)
        # Answered at w=2, but written to every copy: the third commit lands without a sweep.
        self.assertTrue(wait_for(lambda: self.holders("qdb", "all") == [0, 1, 2], 5))
        self.assertEqual(self.n2.put("/qdb/w3?w=3", {}).status, 201)
        self.assertError(self.n1.put("/qdb/bad?w=0", {}), 400, "bad_request", "The `w` value should be a positive integer.")

        self.n3.stop()
        self.assertTrue(wait_for(lambda: connected(self.n1) == sorted(self.cluster.names[:2])))
        self.assertEqual(self.n1.put("/qdb/two", {}).status, 201)  # 2 of 3 copies: w=2 met
        r = self.n1.put("/qdb/strict?w=3", {})
        self.assertEqual(r.status, 202)  # accepted, not on 3 copies
        self.assertTrue(r.json["ok"])
        r = self.n1.post("/qdb/_bulk_docs", {"docs": [{"_id": f"b{i}"} for i in range(10)]})
        self.assertEqual(r.status, 201)
        self.assertEqual(self.n1.post("/qdb/_bulk_docs?w=3", {"docs": [{"_id": "b-strict"}]}).status, 202)

        self.n2.stop()
        self.assertTrue(wait_for(lambda: connected(self.n1) == [self.cluster.names[0]]))
        r = self.n1.put("/qdb/alone", {})
        self.assertEqual(r.status, 202)
        rev = r.json["rev"]
        self.assertEqual(self.n1.delete(f"/qdb/alone?rev={rev}").status, 202)
        self.assertError(self.n1.put("/qdb/all", {}), 409, "conflict", "Document update conflict.")

        # The stopped nodes come back with what they missed missing; a sweep brings it.
        self.n2.start(port=self.n2.port)
        self.n3.start(port=self.n3.port)
        for n in self.cluster.nodes:
            self.assertTrue(wait_for(lambda n=n: connected(n) == sorted(self.cluster.names)))
        self.assertEqual(self.holders("qdb", "two"), [0, 1])
        self.assertEqual(self.holders("qdb", "strict"), [0, 1])
        self.assertEqual(self.n1.get("/qdb").json["doc_count"], 15)  # this node's copies
        self.assertEqual(self.n3.get("/qdb").json["doc_count"], 2)
        # Read quorum (r=2 by default): n3's copy lacks "two"; the read answers from the copies that
        # have it and repairs n3's copy on the way.
        self.assertError(self.n3.get("/qdb/two?r=1"), 404, "not_found", "missing")  # its own copy only
        r = self.n3.get("/qdb/two")
        self.assertEqual(r.status, 200)
        self.assertEqual(self.n3.get("/qdb/two?r=1").status, 200)  # repaired
        self.assertEqual(self.n3.get("/qdb").json["doc_count"], 3)
        rev = r.json["_rev"]
        self.assertEqual(self.n1.put("/qdb/two", {"_rev": rev, "v": 2}).status, 201)
        self.assertEqual(self.n3.get("/qdb/two?r=3").json["v"], 2)
        self.assertError(self.n3.get("/qdb/two?r=0"), 400, "bad_request", "The `r` value should be a positive integer.")
        for n in (self.n1, self.n2):
            n.post("/qdb/_sync_shards", raw_body="", headers={"Content-Type": "application/json"})
        for n in self.cluster.nodes:
            self.assertEqual(n.get("/qdb").json["doc_count"], 15)
            self.assertEqual(n.get("/qdb/alone").status, 404)

    def test_sigkill_under_load_leaves_every_acknowledged_write_on_its_quorum(self):
        self.assertEqual(self.n1.put("/load?q=3").status, 201)
        acked = {}  # id -> (status, rev)
        lock = threading.Lock()
        stop = threading.Event()

        def writer(k):
            w = Node.__new__(Node)
            w.__dict__.update((self.n1 if k % 2 == 0 else self.n3).__dict__)
            w.conn = None
            for i in range(100000):
                if stop.is_set():
                    return
                doc_id = f"w{k}-{i}"
                try:
                    r = w.put(f"/load/{doc_id}", {"k": k, "i": i})
                except OSError:
                    w.conn = None
                    continue
                if r.status in (201, 202):
                    with lock:
                        acked[doc_id] = (r.status, r.json["rev"])

        threads = [threading.Thread(target=writer, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        time.sleep(1.0)
        self.n2.stop(sig=signal.SIGKILL)
        time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join(30)
        self.n2.start(port=self.n2.port)
        for n in self.cluster.nodes:
            self.assertTrue(wait_for(lambda n=n: connected(n) == sorted(self.cluster.names)))

        statuses = [s for s, _ in acked.values()]
        print(f"\n  {len(acked)} writes acknowledged around the SIGKILL", file=sys.stderr)
        self.assertGreater(len(acked), 100)
        self.assertEqual(statuses.count(202), 0, "two of three copies stayed up: every write met w=2")
        missing = []
        for doc_id, (status, rev) in acked.items():
            found = sum(1 for n in self.cluster.nodes if n.get(f"/load/{doc_id}?r=1").json.get("_rev") == rev)
            if found < 2:
                missing.append((doc_id, found))
        self.assertEqual(missing, [], "acknowledged with 201 but on fewer than w=2 copies")


if __name__ == "__main__":
    main()
