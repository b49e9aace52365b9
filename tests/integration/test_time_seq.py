"""GET/DELETE /db/_time_seq on one node: shapes, auth, statuses (spec/time_seq.md section 7)."""
import calendar
import json
import re
import time

from harness import ClockedNodeTest, Node, NodeTest, main


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
        self.assertError(self.node.get("/tsr/_time_seq", auth=False), 401, "unauthorized")  # admin-only by default
        self.assertEqual(self.node.put("/tsr/_security", {}).status, 200)
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



class ClockFaults(ClockedNodeTest):
    """The node's clock is a file the test writes (SETTEE_CLOCK_FILE): time jumps back, to 2050 and
    back, falls below min_time, and the bins are reset; no change a since=<time> feed should contain
    is ever missing from it (spec/time_seq.md sections 3 and 5; issue 5 point 6)."""

    START = 1893456000  # 2030-01-01T00:00:00Z

    def write_at(self, db, t, doc_id):
        self.set_time(t)
        self.assertEqual(self.node.put(f"/{db}/{doc_id}", {}).status, 201)
        self.committed[doc_id] = t

    def check_every_since(self, db):
        """For every instant that matters, the feed holds every change committed at or after it."""
        instants = sorted(set(self.committed.values()))
        probes = {t + d for t in instants for d in (-1, 0, 1)} | {parse("1999-01-01T00:00:00Z")}
        for t in sorted(probes):
            r = self.node.get(f"/{db}/_changes?since={fmt(t)}")
            self.assertEqual(r.status, 200, r)
            got = {row["id"] for row in r.json["results"]}
            should = {d for d, at in self.committed.items() if at >= t}
            self.assertEqual(should - got, set(), f"since={fmt(t)} misses changes")

    def test_backwards_2050_and_back_below_min_time_then_reset(self):
        self.committed = {}
        self.new_db("clocky", q=2)
        t0 = parse("2030-01-01T00:00:00Z")
        self.write_at("clocky", t0, "a")
        self.write_at("clocky", t0 + 7 * 3600, "b")
        self.write_at("clocky", t0 + 3600, "back")  # the clock went back 6 hours
        self.write_at("clocky", parse("2050-06-01T12:00:00Z"), "future")  # jump ahead ...
        self.write_at("clocky", t0 + 10 * 3600, "returned")  # ... and back
        self.write_at("clocky", parse("2020-01-01T00:00:00Z"), "ancient")  # below min_time: not in bins
        self.check_every_since("clocky")
        bins = [b for copies in self.node.get("/clocky/_time_seq").json["time_seq"].values()
                for b in copies["settee@127.0.0.1"]]
        self.assertTrue(all(b[0] < "2051" for b in bins))
        self.assertTrue(any(b[0].startswith("2050-06-01") for b in bins))  # the jump made a bin

        self.assertEqual(self.node.delete("/clocky/_time_seq").json, {"ok": True})
        self.check_every_since("clocky")  # no bins at all: every range from 0, still exact
        # New bins in every range (several ids: both ranges get some) must not hide what came before
        # the reset: "future" (2050) is still at or after any time up to 2050 (issue 14: a reset forgot
        # the truth and since=<2040> started after it).
        for i in range(6):
            self.write_at("clocky", t0 + 20 * 3600, f"after-reset-{i}")
        self.write_at("clocky", t0 + 20 * 3600, "after-reset")
        shards = self.node.get("/clocky/_time_seq").json["time_seq"]
        self.assertTrue(all(copies["settee@127.0.0.1"] for copies in shards.values()), shards)
        self.check_every_since("clocky")
        # Exact: each range's leading run of older changes is skipped (a, b, back were committed
        # before anything at or after the time in every range); "future" (2050) is after it.
        exact = {r["id"] for r in self.node.get(f"/clocky/_changes?since={fmt(t0 + 20 * 3600)}").json["results"]}
        self.assertLessEqual({"after-reset", "future"}, exact)
        self.assertEqual(exact & {"a", "b", "back"}, set())


class SplitLineage(ClockedNodeTest):
    """After splits every child keeps its parent's bins (since=<time> stays right), GET /db/_time_seq
    says what each copy inherited, and the database's histogram counts each change once (issue 53:
    the page showed 450,002 changes for 300,002 after one split)."""

    START = 1893456000  # 2030-01-01T00:00:00Z, a bin boundary

    def bulk_at(self, db, t, prefix, n):
        self.set_time(t)
        r = self.node.post(f"/{db}/_bulk_docs", {"docs": [{"_id": f"{prefix}{i}"} for i in range(n)]})
        self.assertEqual(r.status, 201, r)

    def split(self, db, **what):
        r = self.node.post("/_reshard/jobs", {"type": "split", "db": db, **what})
        self.assertEqual(r.status, 201, r)
        ids = [j["id"] for j in r.json]
        deadline = time.time() + 60
        while time.time() < deadline:
            jobs = {j["id"]: j for j in self.node.get("/_reshard/jobs").json["jobs"]}
            if all(jobs[i]["job_state"] == "completed" for i in ids):
                return
            self.assertFalse(any(jobs[i]["job_state"] == "failed" for i in ids), jobs)
            time.sleep(0.05)
        self.fail(f"split not done: {self.node.get('/_reshard/jobs').json}")

    def test_two_rounds_of_splits_count_each_change_once(self):
        t0 = self.START
        db = self.new_db("lineage", q=1)
        self.bulk_at(db, t0, "a", 100)
        self.bulk_at(db, t0 + 3 * 3600, "b", 50)
        plain = self.node.get(f"/{db}/_time_seq").json
        self.assertEqual(sorted(plain), ["time_seq"])  # never split: CouchDB's shape alone
        self.split(db)
        self.bulk_at(db, t0 + 6 * 3600, "c", 30)
        self.split(db, range="00000000-7fffffff")
        self.bulk_at(db, t0 + 9 * 3600, "d", 20)

        ts = self.node.get(f"/{db}/_time_seq").json
        node = "settee@127.0.0.1"
        self.assertEqual(sorted(ts["time_seq"]), ["00000000-3fffffff", "40000000-7fffffff", "80000000-ffffffff"])
        want = [[fmt(t0), 100], [fmt(t0 + 3 * 3600), 50], [fmt(t0 + 6 * 3600), 30], [fmt(t0 + 9 * 3600), 20]]
        self.assertEqual(ts["database"], want)
        # Each copy's own list keeps the parent's bins: added up they overcount, which is why the
        # database's list is there.
        naive = sum(n for copies in ts["time_seq"].values() for _, n in copies[node])
        self.assertEqual(naive, 3 * 150 + self.written_to_first_half(db, "c") + 30 + 20)
        # What each copy inherited: the same bins, the counts from before its split.
        self.assertEqual(sorted(ts["inherited"]), sorted(ts["time_seq"]))
        for rng, copies in ts["inherited"].items():
            mine, inherited = copies[node], ts["time_seq"][rng][node]
            self.assertEqual([t for t, _ in mine], [t for t, _ in inherited])
            self.assertEqual(mine[:2], want[:2])  # the first parent's 150, in every range
            self.assertEqual(mine[-1][1], 0)  # the last bin came after every split
        # since=<time> answers as before the splits.
        for at, prefix in ((t0 + 3 * 3600, "b"), (t0 + 6 * 3600, "c"), (t0 + 9 * 3600, "d")):
            got = {r["id"][0] for r in self.node.get(f"/{db}/_changes?since={fmt(at)}").json["results"]}
            self.assertEqual(got, set("abcd"[("abcd".index(prefix)):]), fmt(at))

    def written_to_first_half(self, db, prefix):
        """Documents of `prefix` in range 00000000-7fffffff (the range that split again)."""
        shards = self.node.get(f"/{db}/_shards").json["shards"]
        count = 0
        for i in range(30):
            r = self.node.get(f"/{db}/_shards/{prefix}{i}").json["range"]
            count += r < "80000000"
        self.assertIn("80000000-ffffffff", shards)
        return count


def parse(text):
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))


if __name__ == "__main__":
    main()
