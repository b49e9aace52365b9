"""_changes: every feed type, its parameters and framing, resuming, live notification, disconnects."""
import http.client
import json
import socket
import threading
import time

from harness import Node, NodeTest, main


def rows_of_continuous(raw):
    return [json.loads(line) for line in raw.split("\n") if line.strip()]


class ChangesNormal(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        n = cls.node
        assert n.put("/ch?q=3").status == 201
        for i in range(10):
            assert n.put(f"/ch/d{i}", {"i": i}).status == 201
        rev = n.get("/ch/d3").json["_rev"]
        n.put("/ch/d3", {"_rev": rev, "i": 33})              # d3 moves to the end
        rev = n.get("/ch/d4").json["_rev"]
        n.delete(f"/ch/d4?rev={rev}")                        # d4 deleted
        n.put("/ch/d5?new_edits=false", {"_rev": "1-zzzz", "conflict": True})  # d5 conflicted
        n.put("/ch/_design/app", {"views": {}})
        # One shard: rows come out in exact commit order.
        assert n.put("/ch1?q=1").status == 201
        for doc_id in ["a", "b", "c"]:
            n.put(f"/ch1/{doc_id}", {})
        rev = n.get("/ch1/a").json["_rev"]
        n.put("/ch1/a", {"_rev": rev, "v": 2})

    def test_framing_is_byte_exact(self):
        r = self.node.get("/ch/_changes?limit=2")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.raw.startswith('{"results":[\n{"seq":"'), r.raw[:40])
        body, _, tail = r.raw.rpartition("\n],\n")
        self.assertRegex(tail, r'^"last_seq":"[0-9]+-[A-Za-z0-9_-]+","pending":[0-9]+\}\n$')
        self.assertEqual(body.count(",\r\n{"), 1)
        empty = self.node.get("/ch/_changes?since=now")
        self.assertTrue(empty.raw.startswith('{"results":[\n\n],\n"last_seq":"'), empty.raw)
        self.assertEqual(empty.json["pending"], 0)

    def test_etag_and_head(self):
        r1 = self.node.get("/ch1/_changes")
        r2 = self.node.get("/ch1/_changes")
        self.assertEqual(r1.header("ETag"), r2.header("ETag"))
        self.assertEqual(self.node.get("/ch1/_changes", headers={"If-None-Match": r1.header("ETag")}).status, 304)
        self.assertNotEqual(self.node.get("/ch1/_changes?limit=1").header("ETag"), r1.header("ETag"))
        self.node.put("/ch1/etag-bump", {})
        self.assertNotEqual(self.node.get("/ch1/_changes").header("ETag"), r1.header("ETag"))
        h = self.node.request("HEAD", "/ch1/_changes")
        self.assertEqual((h.status, h.raw), (200, ""))

    def test_one_row_per_document_latest_last(self):
        res = self.node.get("/ch/_changes").json
        ids = [row["id"] for row in res["results"]]
        self.assertEqual(len(ids), len(set(ids)))
        self.assertEqual(len(ids), 11)
        ordered = [r["id"] for r in self.node.get("/ch1/_changes").json["results"]]
        self.assertEqual(ordered[:3], ["b", "c", "a"])  # a was updated last
        deleted = [row for row in res["results"] if row["id"] == "d4"][0]
        self.assertTrue(deleted["deleted"])
        self.assertEqual(set(deleted), {"seq", "id", "changes", "deleted"})
        self.assertEqual(res["pending"], 0)
        self.assertEqual(res["last_seq"], res["results"][-1]["seq"])

    def test_limit_pending_and_resume(self):
        first = self.node.get("/ch/_changes?limit=4").json
        self.assertEqual(len(first["results"]), 4)
        self.assertEqual(first["pending"], 7)
        rest = self.node.get("/ch/_changes?since=" + first["last_seq"]).json
        self.assertEqual(len(rest["results"]), 7)
        all_ids = [r["id"] for r in first["results"] + rest["results"]]
        self.assertEqual(sorted(all_ids), sorted(r["id"] for r in self.node.get("/ch/_changes").json["results"]))
        # Any row's seq is a valid since, quoted or not.
        mid = first["results"][1]["seq"]
        after = self.node.get(f'/ch/_changes?since="{mid}"').json
        self.assertEqual(len(after["results"]), 9)
        self.assertEqual(self.node.get("/ch/_changes?limit=0").json["results"], [])

    def test_style_include_docs_conflicts(self):
        rows = {r["id"]: r for r in self.node.get("/ch/_changes?style=all_docs").json["results"]}
        self.assertEqual(len(rows["d5"]["changes"]), 2)
        self.assertEqual(len(rows["d1"]["changes"]), 1)
        rows = {r["id"]: r for r in self.node.get("/ch/_changes?include_docs=true&conflicts=true").json["results"]}
        self.assertEqual(rows["d3"]["doc"]["i"], 33)
        self.assertTrue(rows["d4"]["doc"]["_deleted"])
        self.assertIn("_conflicts", rows["d5"]["doc"])
        self.assertNotIn("_conflicts", rows["d1"]["doc"])

    def test_descending(self):
        res = self.node.get("/ch1/_changes?descending=true&limit=2").json
        self.assertEqual([r["id"] for r in res["results"]], ["a", "c"])
        self.assertEqual(len(self.node.get("/ch/_changes?descending=true").json["results"]), 11)
        # Resuming ascending from a descending last_seq never skips a change.
        self.node.put("/ch1/d", {})
        later = self.node.get("/ch1/_changes?since=" + res["last_seq"]).json
        self.assertIn("d", [r["id"] for r in later["results"]])

    def test_filters(self):
        res = self.node.get('/ch/_changes?filter=_doc_ids&doc_ids=["d1","d4","nope"]').json
        self.assertEqual(sorted(r["id"] for r in res["results"]), ["d1", "d4"])
        res = self.node.post("/ch/_changes?filter=_doc_ids", {"doc_ids": ["d2"]}).json
        self.assertEqual([r["id"] for r in res["results"]], ["d2"])
        res = self.node.get("/ch/_changes?filter=_design").json
        self.assertEqual([r["id"] for r in res["results"]], ["_design/app"])
        res = self.node.post("/ch/_changes?filter=_selector", {"selector": {"i": {"$gte": 7}}}).json
        self.assertEqual(sorted(r["id"] for r in res["results"]), ["d3", "d7", "d8", "d9"])  # d3 is 33 now
        res = self.node.post("/ch/_changes?filter=_selector&include_docs=true",
                             {"selector": {"$or": [{"_id": "d1"}, {"conflict": True}]}}).json
        self.assertEqual(sorted(r["id"] for r in res["results"]), ["d1", "d5"])
        # style=all_docs: each leaf matched on its own, only the matching ones listed (couch_changes:filter);
        # d5's winner is 1-zzzz {"conflict":true}, its other leaf {"i":5}.
        loser = [c["rev"] for c in self.node.get("/ch/_changes?style=all_docs&filter=_doc_ids&doc_ids=[\"d5\"]").json[
            "results"][0]["changes"] if c["rev"] != "1-zzzz"]
        self.assertEqual(len(loser), 1)
        for sel, style, want in (({"i": 5}, "all_docs", loser), ({"conflict": True}, "all_docs", ["1-zzzz"]),
                                 ({"i": 5}, "main_only", None), ({"i": {"$gte": 0}}, "all_docs", loser),
                                 ({"nope": 1}, "all_docs", None)):
            res = self.node.post(f"/ch/_changes?filter=_selector&style={style}", {"selector": sel}).json["results"]
            got = [[c["rev"] for c in r["changes"]] for r in res if r["id"] == "d5"]
            self.assertEqual(got, [want] if want else [], (sel, style))
        res = self.node.post("/ch/_changes?filter=_selector&style=all_docs", {"selector": {"i": {"$gte": 7}}}).json
        self.assertEqual(sorted(r["id"] for r in res["results"]), ["d3", "d7", "d8", "d9"])
        self.assertError(self.node.post("/ch/_changes?filter=_selector", {"selector": [1]}), 400, "bad_request",
                         "Selector error: expected a JSON object")
        self.assertError(self.node.post("/ch/_changes?filter=_selector", {"selector": {"a": {"$nope": 1}}}),
                         400, "invalid_operator", "Invalid operator: $nope")
        self.assertError(self.node.post("/ch/_changes?filter=_selector", {}), 400, "bad_request",
                         "Selector must be specified in POST payload")

    def test_seq_interval(self):
        # fabric_view_changes: a row has its seq when the limit left (CouchDB's default
        # 1000000000000000 counting down) is a multiple of the interval.
        def marked(query):
            return [r["seq"] is not None for r in self.node.get("/ch/_changes?" + query).json["results"][:6]]
        self.assertEqual(marked("seq_interval=3"), [(10**15 - k) % 3 == 0 for k in range(6)])
        self.assertEqual(marked("seq_interval=3"), [False, True, False, False, True, False])
        self.assertEqual(marked("seq_interval=2"), [True, False, True, False, True, False])  # each pair's first
        self.assertEqual(marked("seq_interval=4&limit=6"), [False, False, True, False, False, False])

    def test_bad_parameters(self):
        cases = [
            ("feed=bogus", 400, "Supported `feed` types: normal, continuous, live, longpoll, eventsource"),
            ("since=garbage", 400, "Malformed sequence supplied in 'since' parameter."),
            ("since=5", 400, "Malformed sequence supplied in 'since' parameter."),
            ("since=1-AAAA", 400, "Malformed sequence supplied in 'since' parameter."),
            ("limit=x", 400, "The limit parameter should be a non-negative integer"),
            ("limit=-1", 400, "The limit value should be a non-negative integer"),
            ("heartbeat=x", 400, "Invalid heartbeat value. Expecting a positive integer value (in milliseconds)."),
            ("heartbeat=0", 400, "The heartbeat value should be a positive integer (in milliseconds)."),
            ("timeout=-5", 400, None),
            ("seq_interval=0", 400, "invalid_seq_interval"),
            ("style=weird", 400, None),
            ("descending=maybe", 400, None),
            ("filter=_doc_ids&doc_ids=notjson", 400, "`doc_ids` filter parameter is not a list of doc ids."),
            ("filter=_doc_ids&doc_ids={}", 400, "`doc_ids` filter parameter is not a list of doc ids."),
            ("filter=_bogus", 400, "unknown builtin filter name"),
            ("filter=nofilter", 400, "`filter` must be of the form `designname/filtername`"),
            ("filter=_selector", 400, "Selector must be specified in POST payload"),
        ]
        for query, status, reason in cases:
            r = self.node.get("/ch/_changes?" + query)
            self.assertEqual(r.status, status, (query, r))
            if reason:
                self.assertEqual(r.json["reason"], reason, query)
        self.assertError(self.node.delete("/ch/_changes"), 405, "method_not_allowed")
        self.assertError(self.node.get("/nodb/_changes"), 404, "not_found", "Database does not exist.")
        # A token from another database (other shard uuids) starts over: more rows, never fewer.
        self.node.put("/other")
        self.node.put("/other/x", {})
        token = self.node.get("/other/_changes").json["last_seq"]
        self.assertEqual(len(self.node.get("/ch/_changes?since=" + token).json["results"]), 11)


class ChangesLive(NodeTest):
    config = "[chttpd]\nserver_threads = 40\n"  # fewer handler threads than live feeds below

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        assert cls.node.put("/live?q=2").status == 201

    def write_soon(self, doc_id, delay=0.3):
        def go():
            time.sleep(delay)
            Node.request(self.writer(), "PUT", f"/live/{doc_id}", {"v": 1})
        threading.Thread(target=go).start()

    def writer(self):
        w = Node.__new__(Node)
        w.__dict__.update(self.node.__dict__)
        w.conn = None
        return w

    def test_longpoll_waits_for_a_change(self):
        since = self.node.get("/live/_changes?since=now").json["last_seq"]
        self.write_soon("lp1")
        t0 = time.time()
        r = self.node.get(f"/live/_changes?feed=longpoll&since={since}&timeout=10000")
        self.assertLess(time.time() - t0, 5)
        self.assertEqual([x["id"] for x in r.json["results"]], ["lp1"])
        t0 = time.time()
        r = self.node.get("/live/_changes?feed=longpoll&since=now&timeout=300")
        self.assertGreaterEqual(time.time() - t0, 0.25)
        self.assertEqual(r.json["results"], [])

    def test_continuous_limit_ends_the_feed(self):
        for i in range(3):
            self.node.put(f"/live/c{i}", {})
        r = self.node.get("/live/_changes?feed=continuous&limit=2")
        lines = rows_of_continuous(r.raw)
        self.assertEqual(len(lines), 3)
        self.assertIn("last_seq", lines[-1])
        self.assertGreater(lines[-1]["pending"], 0)
        self.assertEqual(self.node.get("/live/_changes?feed=live&limit=1").status, 200)
        # The largest waits a client can ask for are cut, not added to the clock (the fuzz found
        # heartbeat=9223372036854775807 overflowing the deadline: undefined behaviour, reported by
        # the sanitizer build, which fails a test on any report).
        big = 9223372036854775807
        for feed in ("continuous", "longpoll", "eventsource"):
            r = self.node.get(f"/live/_changes?feed={feed}&limit=1&heartbeat={big}&timeout={big}")
            self.assertEqual(r.status, 200, (feed, r))

    def test_continuous_timeout_and_live_rows(self):
        since = self.node.get("/live/_changes?since=now").json["last_seq"]
        self.write_soon("ct1", 0.2)
        r = self.node.get(f"/live/_changes?feed=continuous&since={since}&timeout=1000")
        lines = rows_of_continuous(r.raw)
        self.assertEqual(lines[0]["id"], "ct1")
        self.assertEqual(set(lines[-1]), {"last_seq", "pending"})

    def test_heartbeats(self):
        r = self.node.raw_stream("/live/_changes?feed=continuous&since=now&heartbeat=100", seconds=0.55)
        self.assertGreaterEqual(r.count("\n"), 3)
        self.assertEqual(r.strip(), "")
        r = self.node.raw_stream("/live/_changes?feed=continuous&since=now&heartbeat=100&heartbeat_seq=true", seconds=0.35)
        beats = rows_of_continuous(r)
        self.assertGreaterEqual(len(beats), 2)
        self.assertEqual(set(beats[0]), {"seq", "changes", "id"})
        self.assertIsNone(beats[0]["id"])
        r = self.node.raw_stream("/live/_changes?feed=eventsource&since=now&heartbeat=100", seconds=0.35)
        self.assertIn("event: heartbeat\ndata: \n\n", r)

    def test_eventsource_and_last_event_id(self):
        self.node.put("/live/es1", {})
        r = self.node.get("/live/_changes?feed=eventsource&limit=100&timeout=200")
        self.assertEqual(r.header("Content-Type"), "text/event-stream")
        events = [e for e in r.raw.split("\n\n") if e]
        first = events[0].split("\n")
        self.assertTrue(first[0].startswith("data: {"))
        self.assertTrue(first[1].startswith('id: "'))
        last_id = json.loads(events[-1].split("\n")[1][4:])
        self.node.put("/live/es2", {})
        r = self.node.get("/live/_changes?feed=eventsource&timeout=200", headers={"Last-Event-ID": last_id})
        self.assertEqual([json.loads(e.split("\n")[0][6:])["id"] for e in r.raw.split("\n\n") if e], ["es2"])

    def test_feeds_beyond_the_thread_count_and_disconnects_free_them(self):
        # Five times as many live feeds as handler threads (40): a listener holds no thread. Before
        # the event-driven front, the 31st got 503 (and the 97th, with default settings).
        base = self.node.get("/_node/_local/_system").json
        socks = []
        auth = self.node.auth_header()["Authorization"]
        for _ in range(200):
            s = socket.create_connection(("127.0.0.1", self.node.port))
            s.sendall(f"GET /live/_changes?feed=continuous&since=now&heartbeat=60000 HTTP/1.1\r\nHost: x\r\n"
                      f"Authorization: {auth}\r\n\r\n".encode())
            socks.append(s)
        deadline = time.time() + 10
        while self.node.get("/_node/_local/_system").json["live_feeds"] < base["live_feeds"] + 200:
            self.assertLess(time.time(), deadline, "200 feeds did not all start")
            time.sleep(0.05)
        r = self.node.get("/live/_changes?feed=continuous&since=now&limit=0", fresh=True)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.node.get("/_up", fresh=True).status, 200)
        # Workers start while a burst of requests keeps the others busy, never more than
        # server_threads (40 here; 8 of them stay): 200 feeds, at most 40 handler threads.
        self.assertLess(self.node.get("/_node/_local/_system").json["threads"], base["threads"] - 8 + 40 + 2)
        # A write reaches every one of them, then they go away and free their feed.
        self.assertEqual(self.node.put("/live/for-all", {"v": 1}).status, 201)
        for s in socks:
            s.settimeout(10)
            got = b""
            while b"for-all" not in got:
                chunk = s.recv(65536)
                self.assertTrue(chunk, "a listener was closed before the write reached it")
                got += chunk
            s.close()
        # A closed listener's feed ends at its next write or heartbeat: make a write.
        self.assertEqual(self.node.put("/live/after", {"v": 1}).status, 201)
        deadline = time.time() + 10
        while self.node.get("/_node/_local/_system").json["live_feeds"] > base["live_feeds"]:
            self.assertLess(time.time(), deadline, "closed listeners still hold feeds")
            time.sleep(0.05)


class ChangesDisconnect(NodeTest):
    def test_client_leaving_mid_stream(self):
        self.new_db("big")
        pad = "x" * 500
        for start in range(0, 20000, 1000):
            docs = [{"_id": f"b{i:06d}", "pad": pad} for i in range(start, start + 1000)]
            self.assertEqual(self.node.post("/big/_bulk_docs", {"docs": docs}).status, 201)
        auth = self.node.auth_header()["Authorization"]
        for feed in ["normal", "continuous", "eventsource"]:
            for _ in range(5):
                s = socket.create_connection(("127.0.0.1", self.node.port))
                s.sendall(f"GET /big/_changes?feed={feed}&include_docs=true HTTP/1.1\r\nHost: x\r\n"
                          f"Authorization: {auth}\r\n\r\n".encode())
                self.assertTrue(s.recv(4096))
                s.close()  # gone with megabytes still to send
        time.sleep(1.5)
        self.assertEqual(self.node.get("/_up", fresh=True).status, 200)
        r = self.node.get("/big/_changes?limit=5", fresh=True)
        self.assertEqual(len(r.json["results"]), 5)
        self.assertEqual(r.json["pending"], 19995)


class ChangesWhenDbIsDeleted(NodeTest):
    def test_open_feeds_end_and_do_not_block_the_delete(self):
        self.new_db("doomed")
        self.node.put("/doomed/a", {})
        results = {}

        def listen(kind):
            w = Node.__new__(Node)
            w.__dict__.update(self.node.__dict__)
            w.conn = None
            results[kind] = w.get(f"/doomed/_changes?feed={kind}&since=now&heartbeat=10000&timeout=30000")

        threads = [threading.Thread(target=listen, args=(k,)) for k in ["continuous", "longpoll", "eventsource"]]
        for t in threads:
            t.start()
        time.sleep(0.5)
        t0 = time.time()
        self.assertEqual(self.node.delete("/doomed").status, 200)
        self.assertLess(time.time() - t0, 5)
        for t in threads:
            t.join(timeout=10)
        self.assertEqual(sorted(results), ["continuous", "eventsource", "longpoll"])
        self.assertIn("last_seq", results["continuous"].raw)
        self.assertEqual(results["longpoll"].json["results"], [])
        self.assertError(self.node.get("/doomed/_changes"), 404, "not_found", "Database does not exist.")


class ChangesResume(NodeTest):
    def test_paging_during_writes_misses_nothing_and_repeats_nothing(self):
        self.new_db("resume", q=4)
        total = 300
        stop = threading.Event()

        def writer():
            w = Node.__new__(Node)
            w.__dict__.update(self.node.__dict__)
            w.conn = None
            for start in range(0, total, 10):
                w.post("/resume/_bulk_docs", {"docs": [{"_id": f"r{i:04d}"} for i in range(start, start + 10)]})
            stop.set()

        t = threading.Thread(target=writer)
        t.start()
        seen, since, pages = [], "0", []
        deadline = time.time() + 60
        while time.time() < deadline:
            writes_done = stop.is_set()  # read before the request: the last write may land during it
            res = self.node.get(f"/resume/_changes?limit=7&since={since}").json
            pages.append((since, [(r["id"], r["seq"]) for r in res["results"]], res["last_seq"]))
            seen += [r["id"] for r in res["results"]]
            since = res["last_seq"]
            if writes_done and not res["results"] and res["pending"] == 0:
                break
        t.join()
        twice = {i for i in seen if seen.count(i) > 1}
        # Seen once in a fresh clone's run under load (303 rows for 300): the pages that carried a
        # repeated change, to find where the position went back.
        self.assertEqual(twice, set(), "delivered twice; the pages with them (since, rows, last_seq): " +
                         json.dumps([p for p in pages if any(i in twice for i, _ in p[1])]))
        self.assertEqual(sorted(seen), [f"r{i:04d}" for i in range(total)])


class ManyListeners(NodeTest):
    # The default configuration (96 live feeds at most before the event-driven front).
    LISTENERS = 2000

    def test_two_thousand_continuous_listeners_all_get_the_write(self):
        import resource
        import selectors
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < 2 * self.LISTENERS and hard > soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        self.new_db("many")
        since = self.node.get("/many/_changes?since=now").json["last_seq"]
        auth = self.node.auth_header()["Authorization"]
        sel = selectors.DefaultSelector()
        received = {}
        for i in range(self.LISTENERS):
            s = socket.create_connection(("127.0.0.1", self.node.port))
            s.sendall(f"GET /many/_changes?feed=continuous&since={since}&heartbeat=5000 HTTP/1.1\r\n"
                      f"Host: x\r\nAuthorization: {auth}\r\n\r\n".encode())
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, i)
            received[i] = b""
        time.sleep(1.0)
        t0 = time.time()
        self.assertEqual(self.node.put("/many/the-write", {"x": 1}, fresh=True).status, 201)
        done = set()
        deadline = time.time() + 30
        while len(done) < self.LISTENERS and time.time() < deadline:
            for key, _ in sel.select(timeout=0.5):
                try:
                    chunk = key.fileobj.recv(65536)
                except BlockingIOError:
                    continue
                received[key.data] += chunk
                if b"the-write" in received[key.data]:
                    done.add(key.data)
        elapsed = time.time() - t0
        for key in list(sel.get_map().values()):
            key.fileobj.close()
        self.assertEqual(len(done), self.LISTENERS, f"only {len(done)} listeners got the write")
        print(f"\n  {self.LISTENERS} listeners notified in {elapsed * 1000:.0f} ms")
        time.sleep(1.5)
        self.assertEqual(self.node.get("/_up", fresh=True).status, 200)


if __name__ == "__main__":
    main()
