"""Per-shard changes feeds (spec 11.3, seed 003): GET /db/_changes/_meta lists a database's shards,
and GET|POST /db/_changes/<shard id> serves one shard with the _changes parameters. N consumers,
one per shard, together see every change exactly once."""
import http.client
import json
import threading
import time

from harness import NodeTest, main


class ShardFeeds(NodeTest):
    def call(self, method, path, body=None):
        return self.node.call(method, path, body)

    def meta(self, db, since=None):
        r = self.node.get(f"/{db}/_changes/_meta" + (f"?since={since}" if since else ""))
        self.assertEqual(r.status, 200, r.data)
        return r.json

    def test_meta_lists_every_shard_with_its_range_and_no_lineage_yet(self):
        self.new_db("metaq4", q=4)
        m = self.meta("metaq4")
        ranges = list(self.node.get("/metaq4/_shards").json["shards"])
        self.assertEqual([s["range"] for s in m["shards"]], ranges)
        created = self.node.get("/metaq4").json["instance_start_time"]
        for s in m["shards"]:
            self.assertEqual(s["id"], f"{s['range']}.{created}")
            self.assertEqual((s["state"], s["parents"], s["children"], s["start_seq"], s["end_seq"]),
                             ("open", [], [], 0, None))
        # `since` is the token of now: a clustered _changes from it has nothing yet.
        self.assertEqual(self.node.get(f"/metaq4/_changes?since={m['since']}").json["results"], [])
        # A re-created database has new shard ids (ids are never reused).
        self.node.delete("/metaq4")
        time.sleep(1.1)  # instance_start_time is in seconds
        self.new_db("metaq4", q=4)
        self.assertTrue(set(s["id"] for s in m["shards"]).isdisjoint(s["id"] for s in self.meta("metaq4")["shards"]))

    def test_meta_takes_since_and_refuses_a_bad_one(self):
        self.new_db("metasince")
        self.assertEqual(self.node.put("/metasince/a", {}).status, 201)
        token = self.node.get("/metasince/_changes").json["last_seq"]
        for since in ("0", "now", token, "2026-01-01T00:00:00Z"):
            self.assertEqual(len(self.meta("metasince", since)["shards"]), 2, since)
        self.assertError(self.node.get("/metasince/_changes/_meta?since=garbage"), 400, "bad_request")
        self.assertError(self.node.get("/metasince/_changes/_meta?since=2026-13-01T00:00:00Z"), 400, "bad_request")
        self.assertEqual(self.node.request("POST", "/metasince/_changes/_meta", {}).status, 405)

    def test_shard_feeds_partition_the_changes_with_integer_seqs(self):
        self.new_db("part", q=4)
        ids = [f"doc{i}" for i in range(60)]
        self.assertEqual(self.node.post("/part/_bulk_docs", {"docs": [{"_id": i} for i in ids]}).status, 201)
        self.assertEqual(self.node.put("/part/doc0", {"_rev": self.node.get("/part/doc0").json["_rev"]}).status, 201)
        seen = []
        for s in self.meta("part")["shards"]:
            r = self.node.get(f"/part/_changes/{s['id']}").json
            seqs = [row["seq"] for row in r["results"]]
            self.assertTrue(all(isinstance(q, int) for q in seqs), seqs)
            self.assertEqual(seqs, sorted(seqs))
            self.assertEqual(r["last_seq"], seqs[-1] if seqs else 0)
            self.assertEqual(r["pending"], 0)
            seen += [row["id"] for row in r["results"]]
            # The shard's documents are those the clustered feed says live in its range.
            for row in r["results"]:
                self.assertEqual(self.node.get(f"/part/_shards/{row['id']}").json["range"], s["range"])
        self.assertEqual(sorted(seen), sorted(ids))  # each document once, at its latest change

    def test_since_limit_descending_include_docs_and_filters(self):
        self.new_db("opts", q=1)
        for i in range(5):
            self.assertEqual(self.node.put(f"/opts/d{i}", {"i": i}).status, 201)
        shard = self.meta("opts")["shards"][0]["id"]
        url = f"/opts/_changes/{shard}"
        page = self.node.get(url + "?limit=2").json
        self.assertEqual([r["id"] for r in page["results"]], ["d0", "d1"])
        self.assertEqual((page["last_seq"], page["pending"]), (2, 3))
        rest = self.node.get(url + f"?since={page['last_seq']}").json
        self.assertEqual([r["id"] for r in rest["results"]], ["d2", "d3", "d4"])
        self.assertEqual([r["id"] for r in self.node.get(url + "?descending=true&limit=2").json["results"]],
                         ["d4", "d3"])
        self.assertEqual(self.node.get(url + "?since=now").json, {"results": [], "last_seq": 5, "pending": 0})
        docs = self.node.get(url + "?include_docs=true&since=4").json["results"]
        self.assertEqual(docs[0]["doc"]["i"], 4)
        r = self.node.request("POST", url + "?filter=_doc_ids", {"doc_ids": ["d1", "d3"]})
        self.assertEqual([row["id"] for row in r.json["results"]], ["d1", "d3"])
        r = self.node.request("POST", url + "?filter=_selector", {"selector": {"i": {"$gt": 2}}})
        self.assertEqual([row["id"] for row in r.json["results"]], ["d3", "d4"])
        self.assertEqual([row["id"] for row in self.node.get(url + "?since=2000-01-01T00:00:00Z").json["results"]],
                         ["d0", "d1", "d2", "d3", "d4"])

    def test_bad_shard_ids_and_bad_since(self):
        self.new_db("badshard")
        shard = self.meta("badshard")["shards"][0]["id"]
        for bad in ("nope", "00000000-7fffffff", shard + "0", "00000000-ffffffff.1"):
            self.assertError(self.node.get(f"/badshard/_changes/{bad}"), 404, "not_found")
        for since in ("abc", "-1", "1.5", "18446744073709551616", self.node.get("/badshard/_changes").json["last_seq"]):
            self.assertError(self.node.get(f"/badshard/_changes/{shard}?since={since}"), 400, "bad_request")
        self.assertError(self.node.get(f"/badshard/_changes/{shard}?feed=sideways"), 400, "bad_request")
        self.assertEqual(self.node.request("PUT", f"/badshard/_changes/{shard}", {}).status, 405)
        self.assertError(self.node.get("/nodb/_changes/_meta"), 404, "not_found")

    def test_longpoll_and_continuous_wake_on_their_shard(self):
        self.new_db("live", q=2)
        shards = self.meta("live")["shards"]
        # A document for each shard.
        by_range = {}
        i = 0
        while len(by_range) < 2:
            rng = self.node.get(f"/live/_shards/w{i}").json["range"]
            by_range.setdefault(rng, f"w{i}")
            i += 1
        first = shards[0]
        got = {}

        def longpoll():
            got["r"] = self.call("GET", f"/live/_changes/{first['id']}?feed=longpoll&since=now&timeout=10000")[1]

        t = threading.Thread(target=longpoll)
        t.start()
        time.sleep(0.3)
        other = [r for r in by_range if r != first["range"]][0]
        self.assertEqual(self.node.put(f"/live/{by_range[other]}", {}).status, 201)  # the other shard
        time.sleep(0.3)
        self.assertTrue(t.is_alive())  # still waiting: nothing on its shard
        self.assertEqual(self.node.put(f"/live/{by_range[first['range']]}", {}).status, 201)
        t.join(10)
        self.assertEqual([r["id"] for r in got["r"]["results"]], [by_range[first["range"]]])

        conn = http.client.HTTPConnection("127.0.0.1", self.node.port, timeout=10)
        conn.request("GET", f"/live/_changes/{first['id']}?feed=continuous&since=0&limit=1",
                     headers=self.node.auth_header())
        resp = conn.getresponse()
        lines = [json.loads(line) for line in resp.read().decode().splitlines() if line.strip()]
        conn.close()
        self.assertEqual([r["id"] for r in lines[:-1]], [by_range[first["range"]]])
        self.assertEqual(lines[-1], {"last_seq": 1, "pending": 0})

    def test_parallel_consumers_see_every_change_exactly_once(self):
        # One consumer per shard resumes from its own last seq while writers run; together they
        # see each document revision once.
        self.new_db("par", q=4)
        shards = [s["id"] for s in self.meta("par")["shards"]]
        stop = threading.Event()
        written, seen, lock = [], [], threading.Lock()

        def writer(w):
            for i in range(40):
                doc = f"w{w}-{i}"
                st, r = self.call("PUT", f"/par/{doc}", {"i": i})
                self.assertEqual(st, 201)
                st, r2 = self.call("PUT", f"/par/{doc}", {"_rev": r["rev"], "i": i, "again": True})
                self.assertEqual(st, 201)
                with lock:
                    written.extend([(doc, r["rev"]), (doc, r2["rev"])])

        def consumer(shard):
            since = 0
            while True:
                done = stop.is_set()
                r = self.call("GET", f"/par/_changes/{shard}?since={since}&style=all_docs&limit=7")[1]
                with lock:
                    for row in r["results"]:
                        seen.append((row["id"], row["changes"][0]["rev"]))
                since = r["last_seq"]
                if done and not r["results"]:
                    return
                if not r["results"]:
                    time.sleep(0.05)

        writers = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
        consumers = [threading.Thread(target=consumer, args=(s,)) for s in shards]
        for t in writers + consumers:
            t.start()
        for t in writers:
            t.join(60)
        stop.set()
        for t in consumers:
            t.join(60)
        # A revision superseded before its shard was read shows only as the newer one: every
        # document's latest revision is seen, none twice, and nothing that was not written.
        self.assertEqual(len(seen), len(set(seen)), "a change was seen twice")
        self.assertTrue(set(seen) <= set(written))
        latest = {}
        for doc, rev in written:
            if rev.startswith("2-"):
                latest[doc] = rev
        self.assertEqual({d for d, r in seen if latest[d] == r}, set(latest))


if __name__ == "__main__":
    main()
