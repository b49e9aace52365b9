"""GET/DELETE /db/_time_seq on one node: shapes, auth, statuses (spec/time_seq.md section 7)."""
import re

from harness import NodeTest, main

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


if __name__ == "__main__":
    main()
