"""GET/DELETE /db/_time_seq on one node: shapes, auth, statuses (spec/time_seq.md section 7)."""
import json
import re
import time

from harness import NodeTest, main


def fmt(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))

TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


class TimeSeqEndpoint(NodeTest):
    def test_histogram_per_range_and_node_then_reset(self):
        self.new_db("ts", q=2)
        empty = self.node.get("/ts/_time_seq").json
        self.assertEqual(empty, {"time_seq": {"00000000-7fffffff": {"settee@127.0.0.1": []},
                                              "80000000-ffffffff": {"settee@127.0.0.1": []}}})
        for i in range(10):
            self.node.put(f"/ts/d{i}", {})
        hist = self.node.get("/ts/_time_seq").json["time_seq"]
        self.assertEqual(sorted(hist), ["00000000-7fffffff", "80000000-ffffffff"])
        total = 0
        for copies in hist.values():
            bins = copies["settee@127.0.0.1"]
            self.assertIn(len(bins), (1, 2))  # this 3-hour bin (two if the test crossed a boundary)
            for b in bins:
                self.assertRegex(b[0], TIME)
                total += b[1]
        self.assertEqual(total, 10)

        self.assertEqual(self.node.delete("/ts/_time_seq").json, {"ok": True})
        for copies in self.node.get("/ts/_time_seq").json["time_seq"].values():
            self.assertEqual(copies["settee@127.0.0.1"], [])
        self.node.put("/ts/after", {})  # the first commit after a reset: earlier changes in a 1970 bin
        lists = [copies["settee@127.0.0.1"] for copies in self.node.get("/ts/_time_seq").json["time_seq"].values()]
        written = [bins for bins in lists if bins]
        self.assertEqual(len(written), 1)  # only the range that got the write has a bin again
        bins = written[0]
        self.assertEqual((bins[0][0], bins[-1][1]), ("1970-01-01T00:00:00Z", 1))
        self.assertGreater(bins[0][1], 0)
        self.assertEqual(self.node.get("/ts").json["doc_count"], 11)  # documents untouched

    def test_rules(self):
        self.new_db("tsr")
        self.assertError(self.node.get("/nope/_time_seq"), 404, "not_found", "Database does not exist.")
        r = self.node.put("/tsr/_time_seq", {})
        self.assertError(r, 405, "method_not_allowed", "Only GET,DELETE allowed")
        self.assertEqual(r.header("Allow"), "GET,DELETE")
        self.assertError(self.node.delete("/tsr/_time_seq", auth=False), 401, "unauthorized")
        self.assertEqual(self.node.get("/tsr/_time_seq", auth=False).status, 200)  # a public database



class ChangesSinceTime(NodeTest):
    def ids(self, path):
        r = self.node.get(path)
        self.assertEqual(r.status, 200, r)
        return [row["id"] for row in r.json["results"]], r.json

    def test_exact_to_the_second_by_default_whole_bin_on_request(self):
        self.new_db("when", q=2)
        for i in range(5):
            self.node.put(f"/when/a{i}", {})
        a_time = int(time.time())
        while int(time.time()) == a_time:  # the next second begins
            time.sleep(0.02)
        t = int(time.time())
        for i in range(5):
            self.node.put(f"/when/b{i}", {})
        ids, body = self.ids(f"/when/_changes?since={fmt(t)}")
        self.assertEqual(sorted(ids), [f"b{i}" for i in range(5)])  # exactly what came at or after t
        self.assertEqual(body["pending"], 0)
        # Resuming from that last_seq behaves like any token.
        self.assertEqual(self.ids(f"/when/_changes?since={body['last_seq']}")[0], [])
        binned, _ = self.ids(f"/when/_changes?since={fmt(t)}&time_precision=bin")
        same_bin = a_time // 10800 == t // 10800
        self.assertEqual(sorted(binned), sorted([f"a{i}" for i in range(5)] * same_bin + [f"b{i}" for i in range(5)]))
        # Every feed type takes a time.
        r = self.node.get(f"/when/_changes?feed=continuous&limit=5&since={fmt(t)}")
        self.assertEqual(sorted(json.loads(l)["id"] for l in r.raw.splitlines()[:5]),
                         [f"b{i}" for i in range(5)])
        ids, _ = self.ids(f"/when/_changes?feed=longpoll&since={fmt(t)}")
        self.assertEqual(len(ids), 5)
        r = self.node.get("/when/_changes?feed=eventsource&limit=1", headers={"Last-Event-ID": fmt(t)})
        self.assertIn('"id":"b', r.raw)

    def test_far_past_future_and_bad_times(self):
        for q in (1, 8):
            self.new_db(f"far{q}", q=q)
            for i in range(6):
                self.node.put(f"/far{q}/d{i}", {})
            ids, body = self.ids(f"/far{q}/_changes?since=2999-01-01T00:00:00Z")
            self.assertEqual((ids, body["pending"]), ([], 0))
            ids, _ = self.ids(f"/far{q}/_changes?since=2025-01-01T04:05:00Z")  # before the first bin
            self.assertEqual(sorted(ids), [f"d{i}" for i in range(6)])
            ids, _ = self.ids(f"/far{q}/_changes?since=1969-12-31T23:59:59Z")  # before 1970: since=0
            self.assertEqual(len(ids), 6)
            ids, _ = self.ids(f"/far{q}/_changes?since=2025-01-01T00:00:00Z&descending=true")
            # descending ignores the time: from the end backwards, as since=now does
            self.assertEqual(ids, self.ids(f"/far{q}/_changes?since=now&descending=true")[0])
            self.assertEqual(len(ids), 6)
        for bad in ("2025-13-01T00:00:00Z", "2025-02-30T00:00:00Z", "2025-01-01T24:00:00Z", "2025-01-01T00:00:60Z"):
            self.assertError(self.node.get(f"/far1/_changes?since={bad}"), 400, "bad_request", "invalid_time_format")
        self.assertError(self.node.get("/far1/_changes?since=2025-01-01T00:00:00"), 400, "bad_request",
                         "Malformed sequence supplied in 'since' parameter.")
        self.assertError(self.node.get("/far1/_changes?since=2025-01-01T00:00:00Z&time_precision=day"), 400,
                         "bad_request", "`time_precision` must be `exact` or `bin`")


if __name__ == "__main__":
    main()
