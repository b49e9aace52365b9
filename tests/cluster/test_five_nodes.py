"""Five nodes, n=3: every node serves every endpoint, also for ranges it holds no copy of (reads go
to a node that does, over Cap'n Proto), and keeps doing so with a node down."""
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import Node, main  # noqa: E402
from test_membership import ClusterTest, wait_for  # noqa: E402


class FiveNodes(ClusterTest):
    NODES, SYNC_INTERVAL_MS = 5, 300

    def test_every_node_serves_every_range(self):
        self.assertEqual(self.node.put("/five?q=4").status, 201)
        shards = self.node.get("/five/_shards").json["shards"]
        self.assertEqual(len(shards), 4)
        held = {name: 0 for name in self.cluster.names}
        for copies in shards.values():
            self.assertEqual(len(set(copies)), 3)
            for name in copies:
                held[name] += 1
        self.assertEqual(sorted(held.values()), [2, 2, 2, 3, 3])  # 12 copies over 5 nodes
        # Some node lacks some range: that is what this test is about.
        self.assertTrue(any(len(copies) < 5 for copies in shards.values()))

        revs = {}
        for i in range(40):
            r = self.nodes[i % 5].put(f"/five/d{i:02d}", {"i": i})
            self.assertEqual(r.status, 201, r)
            revs[f"d{i:02d}"] = r.json["rev"]
        ids = sorted(revs)
        for n in self.nodes:
            # w=2 of 3: a third copy may commit a moment after the 201; these reads use one copy.
            self.assertTrue(wait_for(lambda n=n: n.get("/five", fresh=True).json["doc_count"] == 40, 10))
            self.assertTrue(wait_for(lambda n=n: len(n.get("/five/_all_docs", fresh=True).json["rows"]) == 40, 10))
            for doc_id in ids[::7]:
                r = n.get(f"/five/{doc_id}")
                self.assertEqual((r.status, r.json["_rev"], r.json["i"]), (200, revs[doc_id], int(doc_id[1:])))
                self.assertEqual(r.header("ETag"), f'"{revs[doc_id]}"')
            self.assertError(n.get("/five/nope"), 404, "not_found", "missing")
            rows = n.get("/five/_all_docs").json
            self.assertEqual((rows["total_rows"], [row["id"] for row in rows["rows"]]), (40, ids))
            page = n.get('/five/_all_docs?startkey="d10"&limit=3&include_docs=true').json
            self.assertEqual([row["doc"]["i"] for row in page["rows"]], [10, 11, 12])
            self.assertEqual(page["offset"], 10)
            keyed = n.post("/five/_all_docs", {"keys": ["d05", "zz", "d31"]}).json["rows"]
            self.assertEqual([row.get("id", row.get("error")) for row in keyed], ["d05", "not_found", "d31"])
            changes = n.get("/five/_changes?include_docs=true").json
            self.assertEqual(sorted(row["id"] for row in changes["results"]), ids)
            self.assertTrue(all(row["doc"]["_id"] == row["id"] for row in changes["results"]))
            again = n.get(f"/five/_changes?since={changes['last_seq']}").json
            self.assertEqual((again["results"], again["pending"]), ([], 0))

    def test_feeds_and_deletes_through_a_node_without_the_copy(self):
        self.assertEqual(self.node.put("/lean?q=2&n=1").status, 201)
        shards = self.node.get("/lean/_shards").json["shards"]
        holders = {copies[0] for copies in shards.values()}
        outsider = next(n for n, name in zip(self.nodes, self.cluster.names) if name not in holders)
        # Longpoll on a node holding no copy at all: it learns of the write by polling the copies.
        result = {}

        def wait_change():
            w = Node.__new__(Node)
            w.__dict__.update(outsider.__dict__)
            w.conn = None
            result["r"] = w.get("/lean/_changes?feed=longpoll&since=now&timeout=10000")

        feeds = outsider.get("/_node/_local/_system").json["live_feeds"]
        t = threading.Thread(target=wait_change)
        t.start()
        # The write must come after the feed took its position (since=now), however slow the machine.
        self.assertTrue(wait_for(lambda: outsider.get("/_node/_local/_system").json["live_feeds"] > feeds, 10))
        r = self.nodes[0].put("/lean/far", {"x": 1})
        self.assertEqual(r.status, 201)
        t.join(15)
        self.assertEqual([row["id"] for row in result["r"].json["results"]], ["far"])
        # Writes and deletes through the outsider land on the copy.
        self.assertEqual(outsider.put("/lean/near", {}).status, 201)
        rev = outsider.get("/lean/far").json["_rev"]
        self.assertEqual(outsider.delete(f"/lean/far?rev={rev}").status, 200)
        self.assertError(outsider.get("/lean/far"), 404, "not_found", "deleted")
        self.assertError(outsider.delete("/lean/never"), 404, "not_found", "missing")
        self.assertEqual(self.nodes[0].get("/lean").json["doc_count"], 1)
        # since=<time> through a node without copies: each copy's bins answer over Cap'n Proto.
        timed = outsider.get("/lean/_changes?since=2025-01-01T00:00:00Z").json
        self.assertEqual(sorted(r["id"] for r in timed["results"]), ["far", "near"])
        self.assertEqual(outsider.get("/lean/_changes?since=2999-01-01T00:00:00Z").json["results"], [])
        # What the replicator asks of any node: _revs_diff, _bulk_get, _local checkpoints.
        near = outsider.get("/lean/near").json["_rev"]
        diff = outsider.post("/lean/_revs_diff", {"near": [near, "9-x"], "gone": ["1-a"]}).json
        self.assertEqual(diff, {"near": {"missing": ["9-x"], "possible_ancestors": [near]},
                                "gone": {"missing": ["1-a"]}})
        got = outsider.post("/lean/_bulk_get", {"docs": [{"id": "near"}, {"id": "nope"}, {"id": "far"}]}).json
        self.assertEqual(got["results"][0]["docs"][0]["ok"]["_rev"], near)
        self.assertEqual(got["results"][1]["docs"][0]["error"]["error"], "not_found")
        self.assertEqual([r["id"] for r in got["results"]], ["near", "nope", "far"])
        r = outsider.put("/lean/_local/ckpt", {"seq": 1})
        self.assertEqual((r.status, r.json["rev"]), (201, "0-1"))
        self.assertEqual(outsider.get("/lean/_local/ckpt").json, {"_id": "_local/ckpt", "_rev": "0-1", "seq": 1})
        # _local_docs lists every range's, held here or not.
        for i in range(6):
            self.assertEqual(self.nodes[i % 5].put(f"/lean/_local/l{i}", {"i": i}).status, 201)
        for n in (outsider, self.nodes[0]):
            listed = n.get("/lean/_local_docs?include_docs=true").json["rows"]
            self.assertEqual([r["id"] for r in listed], ["_local/ckpt"] + [f"_local/l{i}" for i in range(6)])
            self.assertEqual(listed[3]["doc"], {"_id": "_local/l2", "_rev": "0-1", "i": 2})
        self.assertEqual(outsider.delete("/lean/_local/ckpt?rev=0-1").status, 200)
        self.assertError(outsider.get("/lean/_local/ckpt"), 404, "not_found", "missing")
        self.assertEqual(len(outsider.get("/lean/_local_docs").json["rows"]), 6)

    def test_revs_limit_reaches_every_copy(self):
        # q=1, n=3 of 5 nodes: every holder's GET reads its own copy; two nodes hold none.
        self.assertEqual(self.node.put("/stems?q=1&n=3").status, 201)
        holders = set(next(iter(self.node.get("/stems/_shards").json["shards"].values())))
        outsider = next(n for n, name in zip(self.nodes, self.cluster.names) if name not in holders)
        self.assertEqual(outsider.get("/stems/_revs_limit").json, 1000)
        self.assertEqual(outsider.put("/stems/_revs_limit", 3).json, {"ok": True})
        for n in self.nodes:
            self.assertEqual(n.get("/stems/_revs_limit").json, 3)
        # Every copy stems at 3: a document with 6 revisions keeps 3 on each.
        rev = outsider.put("/stems/d", {"v": 0}).json["rev"]
        for v in range(1, 6):
            rev = outsider.put(f"/stems/d?rev={rev}", {"v": v}).json["rev"]
        for name, n in zip(self.cluster.names, self.nodes):
            if name in holders:  # r=1 on a holder reads its own copy
                self.assertTrue(wait_for(lambda n=n: n.get("/stems/d?revs=true&r=1").json["_revisions"]["start"] == 6))
                self.assertEqual(len(n.get("/stems/d?revs=true&r=1").json["_revisions"]["ids"]), 3, name)

    def test_security_is_enforced_by_every_node_at_once(self):
        self.assertEqual(self.node.put("/guarded?q=2&n=1").status, 201)
        for n in self.nodes:
            self.assertError(n.get("/guarded", auth=False), 401, "unauthorized")  # admin-only when new
        self.assertEqual(self.node.put("/guarded/_security", {}).status, 200)
        for n in self.nodes:
            self.assertEqual(n.get("/guarded", auth=False).status, 200)  # public until members are set
        self.assertEqual(self.node.put("/guarded/_security", {"members": {"names": ["alice"]}}).status, 200)
        for n in self.nodes:  # no sweep needed: the change is pushed and applied before the 200
            self.assertError(n.get("/guarded", auth=False), 401, "unauthorized")
            self.assertEqual(n.get("/guarded/_security").json, {"members": {"names": ["alice"]}})

    def test_a_node_down_leaves_every_range_readable_and_writable(self):
        self.assertEqual(self.node.put("/sturdy?q=3").status, 201)
        for i in range(15):
            self.nodes[i % 5].put(f"/sturdy/s{i}", {})
        down = self.nodes[4]
        down.stop()
        try:
            alive = self.nodes[:4]
            for n in alive:
                self.assertTrue(wait_for(lambda n=n: len(n.get("/_membership", fresh=True).json["all_nodes"]) == 4))
            for i, n in enumerate(alive):
                self.assertEqual(n.put(f"/sturdy/after{i}", {}).status, 201)  # 2 of 3 copies remain
                want = 15 + i + 1  # (a third live copy may commit a moment after the 201)
                self.assertTrue(wait_for(lambda n=n: n.get("/sturdy", fresh=True).json["doc_count"] == want, 10))
                self.assertTrue(wait_for(lambda n=n: len(n.get("/sturdy/_all_docs", fresh=True).json["rows"]) == want, 10))
                self.assertTrue(wait_for(lambda n=n: len(n.get("/sturdy/_changes", fresh=True).json["results"]) == want, 10))
                self.assertEqual(n.get("/sturdy/s3").status, 200)
            # _time_seq asks every copy; the stopped node's copies are listed as unavailable.
            shards = self.node.get("/sturdy/_shards").json["shards"]
            down_name = self.cluster.names[4]
            ts = self.node.get("/sturdy/_time_seq").json
            held = sorted(r for r, nodes in shards.items() if down_name in nodes)
            self.assertEqual(sorted(u["range"] for u in ts["unavailable"]), held)
            self.assertTrue(all(u["node"] == down_name for u in ts["unavailable"]))
            for r, nodes in shards.items():
                self.assertEqual(sorted(ts["time_seq"][r]), sorted(n for n in nodes if n != down_name))
                for bins in ts["time_seq"][r].values():
                    self.assertIn(len(bins), (1, 2))  # this 3-hour bin (two if the test crossed a boundary)
            r = self.node.delete("/sturdy/_time_seq")
            self.assertEqual((r.status, r.json["ok"], len(r.json["unavailable"])), (202, True, len(held)))
            # _revs_limit too: set on every live copy, the stopped node's listed.
            r = self.node.put("/sturdy/_revs_limit", 7)
            self.assertEqual((r.status, r.json["ok"]), (202, True))
            self.assertEqual(sorted(u["range"] for u in r.json["unavailable"]), held)
            self.assertTrue(all(u["node"] == down_name for u in r.json["unavailable"]))
            self.assertEqual(self.nodes[3].get("/sturdy/_revs_limit").json, 7)
        finally:
            down.start(port=down.port)
            names = sorted(self.cluster.names)
            for n in self.nodes:  # the next test wants all five
                self.assertTrue(wait_for(lambda n=n: n.get("/_membership", fresh=True).json["all_nodes"] == names, 20))


if __name__ == "__main__":
    main()
