"""Bounded feeds (issue 35 point 3, a settee extension): `until=<seq|token|now|time>` on `_changes`
in every feed type, on one shard's feed and (a time or now) on `_db_updates`. A feed gives the
changes up to and including its bound, exact to the second for a time; a live feed ends once it
passed the bound (at once when it already has, or when the bound's second is over), with its
last_seq where it stopped."""
import http.client
import json
import threading
import time
import urllib.parse

from harness import ClockedNodeTest, main, wait_until
from test_reshard import split, wait_for_jobs


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class Until(ClockedNodeTest):
    def changes(self, db, **params):
        r = self.node.get(f"/{db}/_changes?" + urllib.parse.urlencode(params))
        self.assertEqual(r.status, 200, r)
        return r.json

    def ids(self, feed):
        return [row["id"] for row in feed["results"]]

    def follow(self, path):
        """Reads a continuous feed (with heartbeats every 100 ms) on a thread of its own: (rows so
        far, the thread), once its first heartbeat came (the feed is open on the node)."""
        lines, beats = [], []

        def read():
            conn = http.client.HTTPConnection("127.0.0.1", self.node.port, timeout=60)
            conn.request("GET", path + "&heartbeat=100", headers=self.node.auth_header())
            r = conn.getresponse()
            for line in r:
                if line.strip():
                    lines.append(json.loads(line))
                else:
                    beats.append(1)
            conn.close()

        t = threading.Thread(target=read, daemon=True)
        t.start()
        self.assertTrue(wait_until(lambda: beats or not t.is_alive()))
        return lines, t

    def test_a_token_bounds_the_feed_and_a_window_between_two_tokens(self):
        self.assertEqual(self.node.put("/ut1?q=4").status, 201)
        for i in range(10):
            self.assertEqual(self.node.put(f"/ut1/d{i}", {}).status, 201)
        everything = self.changes("ut1")["results"]
        fifth, eighth = everything[4]["seq"], everything[7]["seq"]
        upto = self.changes("ut1", until=fifth)
        self.assertEqual(self.ids(upto), [row["id"] for row in everything[:5]])
        self.assertEqual(upto["last_seq"], fifth)
        window = self.changes("ut1", since=fifth, until=eighth)
        self.assertEqual(self.ids(window), [row["id"] for row in everything[5:8]])
        self.assertEqual(window["last_seq"], eighth)
        self.assertEqual(self.ids(self.changes("ut1", since=eighth, until=fifth)), [])  # a bound behind since
        # The bound holds in a longpoll and a continuous feed too: they end at once, never waiting.
        self.assertEqual(self.ids(self.changes("ut1", feed="longpoll", since=fifth, until=eighth)),
                         [row["id"] for row in everything[5:8]])
        r = self.node.get("/ut1/_changes?feed=continuous&" + urllib.parse.urlencode({"until": fifth}))
        lines = [json.loads(line) for line in r.raw.splitlines() if line.strip()]
        self.assertEqual([x["id"] for x in lines[:-1]], [row["id"] for row in everything[:5]])
        self.assertEqual(lines[-1]["last_seq"], fifth)

    def test_now_is_where_the_feed_started(self):
        self.assertEqual(self.node.put("/ut2").status, 201)
        self.assertEqual(self.node.put("/ut2/a", {}).status, 201)
        r = self.node.get("/ut2/_changes?feed=longpoll&since=now&until=now&timeout=60000")
        self.assertEqual((r.status, r.json["results"]), (200, []))  # at once, not after the timeout
        lines, reader = self.follow("/ut2/_changes?feed=continuous&until=now")
        reader.join(30)
        self.assertFalse(reader.is_alive())
        self.assertEqual([x.get("id") for x in lines], ["a", None])

    def test_a_time_is_exact_to_the_second_and_a_live_feed_ends_when_it_passes(self):
        t = self.START + 1000
        self.set_time(t)
        self.assertEqual(self.node.put("/ut3").status, 201)
        self.assertEqual(self.node.put("/ut3/at0", {}).status, 201)
        self.set_time(t + 1)
        self.assertEqual(self.node.put("/ut3/at1a", {}).status, 201)
        self.assertEqual(self.node.put("/ut3/at1b", {}).status, 201)
        self.set_time(t + 2)
        self.assertEqual(self.node.put("/ut3/at2", {}).status, 201)
        self.assertEqual(self.ids(self.changes("ut3", until=iso(t + 1))), ["at0", "at1a", "at1b"])
        self.assertEqual(self.ids(self.changes("ut3", since=iso(t + 1), until=iso(t + 1))), ["at1a", "at1b"])
        # A continuous feed bounded by a time to come: it follows writes until one is past its bound.
        lines, reader = self.follow(f"/ut3/_changes?feed=continuous&since=now&until={iso(t + 5)}")
        self.set_time(t + 4)
        self.assertEqual(self.node.put("/ut3/at4", {}).status, 201)
        self.assertTrue(wait_until(lambda: [x.get("id") for x in lines] == ["at4"]))
        self.set_time(t + 6)
        self.assertEqual(self.node.put("/ut3/at6", {}).status, 201)  # past the bound: ends the feed
        reader.join(30)
        self.assertFalse(reader.is_alive())
        self.assertEqual([x.get("id") for x in lines], ["at4", None])
        # One bounded by a time that passes with no write at all ends too, once the second is over.
        lines, reader = self.follow(f"/ut3/_changes?feed=continuous&since=now&until={iso(t + 7)}")
        self.set_time(t + 8)
        reader.join(30)
        self.assertFalse(reader.is_alive())
        self.assertEqual(len(lines), 1)
        self.assertIn("last_seq", lines[0])

    def test_one_shards_feed_takes_a_seq_of_the_shard(self):
        self.assertEqual(self.node.put("/ut4?q=2").status, 201)
        for i in range(12):
            self.assertEqual(self.node.put(f"/ut4/s{i}", {}).status, 201)
        shard = self.node.get("/ut4/_changes/_meta").json["shards"][0]["id"]
        rows = self.node.get(f"/ut4/_changes/{shard}").json["results"]
        self.assertGreaterEqual(len(rows), 3)
        upto = self.node.get(f"/ut4/_changes/{shard}?until={rows[1]['seq']}").json
        self.assertEqual([r["id"] for r in upto["results"]], [r["id"] for r in rows[:2]])
        self.assertEqual(upto["last_seq"], rows[1]["seq"])

    def test_db_updates_until_a_time(self):
        t = self.START + 2000
        self.set_time(t)
        self.assertEqual(self.node.put("/ut5a").status, 201)
        self.set_time(t + 3)
        self.assertEqual(self.node.put("/ut5b").status, 201)
        rows = self.node.get(f"/_db_updates?since={iso(t)}&until={iso(t + 1)}").json["results"]
        # (Other tests' databases may have `updated` rows of that time: marks are logged when flushed.)
        self.assertEqual([(r["db_name"], r["type"]) for r in rows if r["db_name"].startswith("ut5")],
                         [("ut5a", "created")])
        rows = self.node.get(f"/_db_updates?since={iso(t)}&until={iso(t + 3)}").json["results"]
        self.assertEqual([(r["db_name"], r["type"]) for r in rows if r["db_name"].startswith("ut5")],
                         [("ut5a", "created"), ("ut5b", "created")])
        # A live feed until now ends once this second is over.
        lines, reader = self.follow("/_db_updates?feed=continuous&since=now&until=now")
        self.set_time(t + 5)
        reader.join(30)
        self.assertFalse(reader.is_alive())
        self.assertIn("last_seq", lines[-1])

    def test_db_updates_until_a_token(self):
        self.assertEqual(self.node.put("/ut8a").status, 201)
        self.assertEqual(self.node.put("/ut8a/d", {}).status, 201)
        self.assertEqual(self.node.put("/ut8b").status, 201)
        bound = self.node.get("/_db_updates").json["last_seq"]
        self.assertEqual(self.node.put("/ut8c").status, 201)
        self.assertEqual(self.node.put("/ut8a/e", {}).status, 201)
        upto = self.node.get(f"/_db_updates?until={bound}").json
        mine = [(r["db_name"], r["type"]) for r in upto["results"] if r["db_name"].startswith("ut8")]
        self.assertEqual([m for m in mine if m[1] != "updated"], [("ut8a", "created"), ("ut8b", "created")])
        self.assertNotIn("ut8c", [m[0] for m in mine])
        self.assertEqual(upto["last_seq"], bound)
        after = self.node.get(f"/_db_updates?since={bound}").json["results"]
        self.assertIn(("ut8c", "created"), [(r["db_name"], r["type"]) for r in after])
        # A live feed bounded by a token it has reached ends at once, also with nothing new.
        r = self.node.get(f"/_db_updates?feed=continuous&since={bound}&until={bound}&timeout=20000")
        self.assertEqual(r.status, 200)
        self.assertIn("last_seq", r.raw)
        self.assertNotIn("ut8c", r.raw)

    def test_a_token_made_before_a_split_bounds_the_feed_after_it(self):
        self.assertEqual(self.node.put("/ut7?q=1").status, 201)
        for i in range(6):
            self.assertEqual(self.node.put(f"/ut7/b{i}", {}).status, 201)
        bound = self.changes("ut7")["last_seq"]
        wait_for_jobs(self.node, split(self, self.node, "ut7", range="00000000-ffffffff"))
        for i in range(3):
            self.assertEqual(self.node.put(f"/ut7/a{i}", {}).status, 201)
        self.assertEqual(len(self.node.get("/ut7/_shards").json["shards"]), 2)
        self.assertEqual(sorted(self.ids(self.changes("ut7", until=bound))), [f"b{i}" for i in range(6)])
        self.assertEqual(sorted(self.ids(self.changes("ut7", since=bound))), [f"a{i}" for i in range(3)])

    def test_bad_bounds(self):
        self.assertEqual(self.node.put("/ut6").status, 201)
        for query, reason in (("until=garbage", "Malformed sequence supplied in 'until' parameter."),
                              ("until=", "`until` must be a seq, a token, now or a time"),
                              ("until=now&descending=true", "`until` bounds ascending feeds only"),
                              ("until=2026-13-45T99:00:00Z", "invalid_time_format")):
            r = self.node.get(f"/ut6/_changes?{query}")
            self.assertEqual((r.status, r.json), (400, {"error": "bad_request", "reason": reason}), query)
        r = self.node.get("/_db_updates?until=5")
        self.assertEqual(r.status, 400, r)


if __name__ == "__main__":
    main()
