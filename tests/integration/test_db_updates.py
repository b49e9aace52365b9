"""_db_updates on one node: the API of spec section 7 (every feed type and parameter, bad input), and
the guarantees of docs/api.md: created/deleted exactly once per instance and in order, updated after
every acknowledged write (coalesced), nothing lost to a kill -9, tokens that resume exactly."""
import json
import time

from harness import ClockedNodeTest, Node, NodeTest, main

ROW_KEYS = {"db_name", "type", "seq", "instance"}


def lines_of(raw):
    return [json.loads(line) for line in raw.split("\n") if line.strip()]


def fmt(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class DbUpdatesTest(NodeTest):
    def feed(self, query="", **kw):
        r = self.node.get("/_db_updates" + query, **kw)
        self.assertEqual(r.status, 200, r)
        return r.json

    def wait_for_row(self, since, db, kind, timeout=10):
        """Follows the feed from `since` (longpoll) until a row for `db` of `kind` arrives."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            res = self.feed(f"?feed=longpoll&timeout=2000&since={since}")
            for row in res["results"]:
                if row["db_name"] == db and row["type"] == kind:
                    return row
            since = res["last_seq"]
        self.fail(f"no {kind} row for {db}")

    def rows_for(self, db, since="0"):
        return [(r["type"], r["instance"]) for r in self.feed(f"?since={since}")["results"] if r["db_name"] == db]


class Api(DbUpdatesTest):
    def test_framing_and_rows(self):
        self.new_db("frame")
        r = self.node.get("/_db_updates")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.header("Content-Type"), "application/json")
        self.assertTrue(r.raw.startswith('{"results":[\n{"db_name":'), r.raw[:60])
        body, _, tail = r.raw.rpartition("\n],\n")
        self.assertRegex(tail, r'^"last_seq":"[0-9]+-[A-Za-z0-9_-]+"\}\n$')  # no "pending", as CouchDB
        rows = r.json["results"]
        for row in rows:
            self.assertEqual(set(row), ROW_KEYS, row)
            self.assertIn(row["type"], ("created", "updated", "deleted"))
        self.assertEqual(rows[-1]["seq"], r.json["last_seq"])
        self.assertIn(("created", self.node.get("/frame").json["instance_start_time"]), self.rows_for("frame"))
        self.assertEqual(body.count(",\r\n{"), len(rows) - 1)

    def test_etag(self):
        r1 = self.node.get("/_db_updates")
        self.assertEqual(self.node.get("/_db_updates", headers={"If-None-Match": r1.header("ETag")}).status, 304)
        self.new_db("etag-bump")
        self.assertNotEqual(self.node.get("/_db_updates").header("ETag"), r1.header("ETag"))

    def test_limit_and_resuming_from_every_row(self):
        for name in ("lim-a", "lim-b", "lim-c"):
            self.new_db(name)
        full = self.feed()["results"]
        self.assertGreaterEqual(len(full), 3)
        self.assertEqual(len(self.feed("?limit=2")["results"]), 2)
        self.assertEqual(self.feed("?limit=0")["results"], [])
        for k, row in enumerate(full):
            rest = self.feed(f"?since={row['seq']}")["results"]
            self.assertEqual([(r["db_name"], r["type"]) for r in rest],
                             [(r["db_name"], r["type"]) for r in full[k + 1:]])

    def test_descending(self):
        self.new_db("desc")
        asc = self.feed()["results"]
        desc = self.feed("?descending=true")["results"]
        self.assertEqual([(r["db_name"], r["type"]) for r in desc], [(r["db_name"], r["type"]) for r in asc][::-1])
        self.assertEqual(len(self.feed("?descending=true&limit=1")["results"]), 1)

    def test_since_now_then_a_new_database(self):
        now = self.feed("?since=now")
        self.assertEqual(now["results"], [])
        self.new_db("after-now")
        rows = self.feed(f"?since={now['last_seq']}")["results"]
        self.assertEqual([(r["db_name"], r["type"]) for r in rows], [("after-now", "created")])

    def test_continuous_limit_heartbeat_and_timeout(self):
        self.new_db("cont")
        r = self.node.get("/_db_updates?feed=continuous&limit=2&timeout=60000")
        self.assertEqual(r.status, 200)
        lines = lines_of(r.raw)
        self.assertEqual(len(lines), 3)  # N rows, then last_seq, at once (not after the timeout)
        self.assertEqual(set(lines[-1]), {"last_seq"})
        end = self.feed("?since=now")["last_seq"]
        beats = lines_of(self.node.raw_stream(f"/_db_updates?feed=continuous&since={end}&heartbeat=100"
                                              "&heartbeat_seq=true", seconds=0.45))
        self.assertGreaterEqual(len(beats), 2, beats)
        self.assertEqual(beats[0], {"seq": end, "changes": [], "id": None})
        plain = self.node.raw_stream(f"/_db_updates?feed=continuous&since={end}&heartbeat=100", seconds=0.35)
        self.assertTrue(plain.startswith("\n\n"), repr(plain))  # plain heartbeats are blank lines
        es = self.node.raw_stream(f"/_db_updates?feed=eventsource&since={end}&heartbeat=100", seconds=0.35)
        self.assertIn("event: heartbeat\ndata: \n\n", es)
        # Without a heartbeat, the timeout ends a continuous feed with its position.
        r = self.node.get(f"/_db_updates?feed=continuous&since={end}&timeout=200", fresh=True)
        self.assertEqual(lines_of(r.raw), [{"last_seq": end}])

    def test_longpoll_waits_for_a_row(self):
        end = self.feed("?since=now")["last_seq"]
        t0 = time.time()
        empty = self.feed(f"?feed=longpoll&since={end}&timeout=300")
        self.assertEqual(empty["results"], [])
        self.assertGreaterEqual(time.time() - t0, 0.25)
        self.new_db("longpolled")
        row = self.wait_for_row(end, "longpolled", "created")
        self.assertEqual(row["instance"], self.node.get("/longpolled").json["instance_start_time"])

    def test_eventsource(self):
        self.new_db("es")
        r = self.node.get("/_db_updates?feed=eventsource&limit=1&timeout=1000")
        self.assertEqual(r.header("Content-Type"), "text/event-stream")
        self.assertTrue(r.raw.startswith("data: {"), r.raw)
        event = r.raw.split("\n\n")[0].split("\n")
        row = json.loads(event[0][len("data: "):])
        self.assertEqual(json.loads(event[1][len("id: "):]), row["seq"])
        r2 = self.node.get("/_db_updates?feed=eventsource&limit=1&timeout=1000",
                           headers={"Last-Event-ID": row["seq"]}, fresh=True)
        row2 = json.loads(r2.raw.split("\n")[0][len("data: "):])
        self.assertNotEqual(row2["seq"], row["seq"])

    def test_bad_parameters_are_400(self):
        self.new_db("tok")
        changes_token = self.node.get("/tok/_changes").json["last_seq"]
        other = Node().start()  # another cluster's token
        try:
            foreign = other.get("/_db_updates").json["last_seq"]
        finally:
            other.cleanup()
        cases = {
            "feed=bogus": "Supported `feed` types: normal, continuous, longpoll, eventsource",
            "limit=-1": "invalid_integer",
            "limit=x": "invalid_integer",
            "limit=": "invalid_integer",
            "heartbeat=x": "invalid_integer",
            "heartbeat=-5": "invalid_integer",
            "timeout=soon": "invalid_integer",
            "timeout=-1": "invalid_integer",
            "descending=maybe": None,
            "heartbeat_seq=1": None,
            "descending=true&feed=continuous": "`descending=true` is only for feed=normal",
            "since=garbage": "`since` is not a _db_updates sequence issued by this cluster",
            "since=12-AAAA": "`since` is not a _db_updates sequence issued by this cluster",
            f"since={changes_token}": "`since` is not a _db_updates sequence issued by this cluster",
            "since=2020-13-45T99:99:99Z": "invalid_time_format",
        }
        for query, reason in cases.items():
            r = self.node.get(f"/_db_updates?{query}")
            if reason is None:  # booleans, as everywhere
                self.assertError(r, 400, "query_parse_error")
            else:
                self.assertError(r, 400, "bad_request", reason)
        # A token from another cluster names a node this one does not know.
        self.assertError(self.node.get(f"/_db_updates?since={foreign}"), 400, "bad_request",
                         "`since` is not a _db_updates sequence issued by this cluster")
        self.assertEqual(self.node.post("/_db_updates", {}).status, 405)

    def test_server_admins_only(self):
        self.assertError(self.node.get("/_db_updates", auth=False), 401, "unauthorized")
        self.node.put("/_users/org.couchdb.user:plain", {"name": "plain", "password": "pw", "roles": [],
                                                        "type": "user"})
        self.assertError(self.node.get("/_db_updates", user=("plain", "pw")), 403, "forbidden")


class Guarantees(DbUpdatesTest):
    def test_created_and_deleted_once_per_instance_in_order(self):
        start = self.feed("?since=now")["last_seq"]
        self.new_db("life")
        first = self.node.get("/life").json["instance_start_time"]
        self.assertEqual(self.node.delete("/life").status, 200)
        self.new_db("life")
        second = self.node.get("/life").json["instance_start_time"]
        self.assertNotEqual(first, second)
        self.assertEqual(self.rows_for("life", start),
                         [("created", first), ("deleted", first), ("created", second)])
        self.assertEqual(self.node.delete("/life").status, 200)
        self.assertEqual(self.rows_for("life", start)[-1], ("deleted", second))

    def test_updated_after_every_acknowledged_write_coalesced(self):
        self.new_db("busy")
        instance = self.node.get("/busy").json["instance_start_time"]
        before = self.feed("?since=now")["last_seq"]
        for i in range(300):
            self.assertEqual(self.node.put(f"/busy/d{i}", {"i": i}).status, 201)
        row = self.wait_for_row(before, "busy", "updated")
        self.assertEqual(row["instance"], instance)
        # Read after the burst: one row for the database, however many writes it had.
        time.sleep(0.2)
        self.assertEqual(self.rows_for("busy", before), [("updated", instance)])
        # A later write gives a row later than everything read so far.
        read = self.feed(f"?since={before}")["last_seq"]
        self.assertEqual(self.node.put("/busy/late", {}).status, 201)
        self.wait_for_row(read, "busy", "updated")

    def test_a_database_that_comes_and_goes_is_created_and_deleted_once(self):
        start = self.feed("?since=now")["last_seq"]
        self.new_db("brief")
        self.node.put("/brief/x", {})
        self.assertEqual(self.node.delete("/brief").status, 200)
        time.sleep(0.3)
        kinds = [k for k, _ in self.rows_for("brief", start)]
        self.assertEqual(kinds[0], "created")
        self.assertEqual(kinds.count("deleted"), 1)
        self.assertEqual(kinds.count("created"), 1)


class KillNine(NodeTest):
    """A write acknowledged just before a kill -9 still gets its `updated` row after the restart: the
    node finds its copies ahead of what the update log recorded. With the default settings the
    record follows a write within milliseconds; here it waits a minute, so every kill comes first."""

    @classmethod
    def setUpClass(cls):
        cls.node = Node(config="[db_updates]\ngather_ms = 60000\n").start()

    def test_acknowledged_write_before_sigkill_is_reported(self):
        node = self.node
        self.assertEqual(node.put("/k9?q=2").status, 201)
        for round_no in range(5):
            since = node.get("/_db_updates?since=now").json["last_seq"]
            self.assertEqual(node.put(f"/k9/r{round_no}", {}).status, 201)
            node.kill()  # at once: the update log has had no time to record it
            node.start()
            found = False
            deadline = time.time() + 10
            while not found and time.time() < deadline:
                res = node.get(f"/_db_updates?feed=longpoll&timeout=1000&since={since}").json
                found = any(r["db_name"] == "k9" and r["type"] == "updated" for r in res["results"])
            self.assertTrue(found, f"round {round_no}: no updated row for k9 after the restart")


    def test_a_clean_stop_records_what_was_marked_before_it_ends(self):
        # SIGTERM: the node closes its shards, records every marked database, syncs the record and
        # notes the clean stop, so the next start trusts the record without comparing every copy.
        node = self.node
        self.assertEqual(node.put("/term?q=2").status, 201)
        since = node.get("/_db_updates?since=now").json["last_seq"]
        self.assertEqual(node.put("/term/d", {}).status, 201)
        node.stop()
        with open(f"{node.data_dir}/_db_updates.boot") as f:
            self.assertTrue(f.read().endswith(" clean\n"))
        node.start()
        res = node.get(f"/_db_updates?since={since}").json  # at once: no recovery needed
        self.assertIn(("term", "updated"), [(r["db_name"], r["type"]) for r in res["results"]])
        with open(f"{node.data_dir}/_db_updates.boot") as f:
            self.assertTrue(f.read().endswith(" open\n"))


class AtTime(ClockedNodeTest):
    """since=<time> is exact to the second, through the node's injected clock."""

    def test_since_time(self):
        t0 = 2000000100
        made = {}
        for k, name in enumerate(["t-a", "t-b", "t-c"]):
            self.set_time(t0 + 10 * k)
            self.assertEqual(self.node.put(f"/{name}").status, 201)
            made[name] = t0 + 10 * k
        for probe in (t0 - 1, t0, t0 + 1, t0 + 10, t0 + 11, t0 + 20, t0 + 21):
            rows = self.node.get(f"/_db_updates?since={fmt(probe)}").json["results"]
            got = {r["db_name"] for r in rows if r["type"] == "created" and r["db_name"].startswith("t-")}
            self.assertEqual(got, {n for n, t in made.items() if t >= probe}, fmt(probe))


if __name__ == "__main__":
    main()
