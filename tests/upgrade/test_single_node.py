"""One data dir, two releases: v0.1.0 (before time-seq) and this one (issue 5 points 5a and 5b)."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from data_dir import DataDirTest  # noqa: E402
from harness import Node, main  # noqa: E402
from releases import binary  # noqa: E402

OLD = "v0.1.0"


class UpgradeDowngrade(DataDirTest):
    OLD = OLD

    def state(self, node, db):
        docs = {r["id"]: r["value"]["rev"] for r in node.get(f"/{db}/_all_docs").json["rows"]}
        changes = sorted(r["id"] for r in node.get(f"/{db}/_changes").json["results"])
        return docs, changes

    def test_a_data_dir_of_v010_opens_here_and_starts_time_seq_empty(self):
        old = self.run_node(self.old_bin)
        self.assertIn("0.1.0", old.get("/").json["vendor"]["version"])
        self.assertEqual(old.put("/legacy?q=2").status, 201)
        for i in range(20):
            old.put(f"/legacy/d{i}", {"i": i})
        old.delete(f"/legacy/d0?rev={old.get('/legacy/d0').json['_rev']}")
        before = self.state(old, "legacy")
        token = old.get("/legacy/_changes").json["last_seq"]
        old.stop()

        new = self.run_node()
        self.assertEqual(self.state(new, "legacy"), before)  # every document and the feed intact
        self.assertEqual(new.get("/legacy/d5").json["i"], 5)
        self.assertEqual(new.get(f"/legacy/_changes?since={token}").json["results"], [])  # old tokens work
        ts = new.get("/legacy/_time_seq").json["time_seq"]
        self.assertTrue(all(bins == [] for copies in ts.values() for bins in copies.values()))
        new.put("/legacy/first-new", {})  # the first commit: earlier changes show in a 1970 bin
        ts = new.get("/legacy/_time_seq").json["time_seq"]
        written = [bins for copies in ts.values() for bins in copies.values() if bins]
        self.assertEqual(len(written), 1)
        self.assertEqual(written[0][0][0], "1970-01-01T00:00:00Z")
        self.assertGreater(written[0][0][1], 0)
        # A time before any bin reads that range from 0: nothing is lost.
        ids = {r["id"] for r in new.get("/legacy/_changes?since=2025-09-01T00:00:00Z").json["results"]}
        self.assertEqual(ids, set(before[1]) | {"first-new"})

    def test_a_data_dir_with_bins_opens_in_v010_and_back(self):
        new = self.run_node()
        self.assertEqual(new.put("/modern?q=2").status, 201)
        for i in range(20):
            new.put(f"/modern/d{i}", {"i": i})
        bins_before = new.get("/modern/_time_seq").json
        before = self.state(new, "modern")
        new.stop()

        old = self.run_node(self.old_bin)
        self.assertEqual(self.state(old, "modern"), before)  # every document, _all_docs and _changes
        self.assertEqual(old.get("/modern/d7").json["i"], 7)
        self.assertEqual(old.put("/modern/by-old", {}).status, 201)  # v0.1.0 rewrites the header
        self.assertEqual(old.get("/modern").json["doc_count"], 21)
        old.stop()

        again = self.run_node()
        self.assertEqual(again.get("/modern").json["doc_count"], 21)
        after = again.get("/modern/_time_seq").json

        def times(ts):
            return {r: {n: [b[0] for b in bins] for n, bins in c.items()} for r, c in ts["time_seq"].items()}

        self.assertEqual(times(after), times(bins_before))  # intact: v0.1.0 kept the field it does not know
        ids = {r["id"] for r in again.get("/modern/_changes?since=2025-09-01T00:00:00Z").json["results"]}
        self.assertIn("by-old", ids)  # written by the old release: still in a time-based feed


    def test_a_data_dir_split_here_is_refused_by_older_releases_and_opens_here_again(self):
        new = self.run_node()
        new.put("/before?q=2")  # a database never split: the older releases could read it
        self.assertEqual(new.put("/splitdb?q=1").status, 201)
        new.post("/splitdb/_bulk_docs", {"docs": [{"_id": f"d{i}"} for i in range(50)]})
        r = new.post("/_reshard/jobs", {"type": "split", "db": "splitdb"})
        self.assertEqual(r.status, 201, r.data)
        job = r.json[0]["id"]
        for _ in range(200):
            if new.get(f"/_reshard/jobs/{job}").json["job_state"] == "completed":
                break
            time.sleep(0.05)
        self.assertEqual(new.get(f"/_reshard/jobs/{job}").json["job_state"], "completed")
        new.stop()
        # v0.2.0 and v0.1.0 would route by q alone: both stop at start, naming the catalog file.
        for tag in ("v0.1.0", "v0.2.0"):
            old = Node(data_dir=self.data, bin=binary(tag))
            with self.assertRaises(RuntimeError) as refused:
                old.start()
            self.assertIn("_dbs.lmdb: unreadable header", str(refused.exception), tag)
        again = self.run_node()
        self.assertEqual(again.get("/splitdb").json["doc_count"], 50)
        self.assertEqual(again.get("/splitdb").json["cluster"]["q"], 2)
        self.assertEqual(again.get("/before/_all_docs").status, 200)




class QueryEngineDowngrade(UpgradeDowngrade):
    """A data dir with 0.4's views, JSON indexes and purges, opened by v0.3.0 (which knows none of
    them) and written to there, then by this release again (issue 50 point 8): nothing of either
    release is lost, and the indexes catch up with what 0.3 wrote."""

    OLD = "v0.3.0"

    test_a_data_dir_of_v010_opens_here_and_starts_time_seq_empty = None
    test_a_data_dir_with_bins_opens_in_v010_and_back = None
    test_a_data_dir_split_here_is_refused_by_older_releases_and_opens_here_again = None

    def test_views_indexes_and_purges_survive_a_downgrade_to_v030(self):
        new = self.run_node()
        self.assertEqual(new.put("/q4?q=2").status, 201)
        new.post("/q4/_bulk_docs", {"docs": [{"_id": f"d{i:02d}", "n": i} for i in range(20)]})
        ddoc = {"views": {"by_n": {"map": "function(doc) { if (doc.n !== undefined) emit(doc.n, 1); }",
                                   "reduce": "_count"}}}
        self.assertEqual(new.put("/q4/_design/v", ddoc).status, 201)
        self.assertEqual(new.get("/q4/_design/v/_view/by_n").json["rows"][0]["value"], 20)
        self.assertEqual(new.post("/q4/_index", {"index": {"fields": ["n"]}, "name": "n", "ddoc": "nidx"}).status, 200)
        self.assertEqual(len(new.post("/q4/_find", {"selector": {"n": {"$gte": 15}}}).json["docs"]), 5)
        rev = new.get("/q4/d00").json["_rev"]
        self.assertEqual(new.post("/q4/_purge", {"d00": [rev]}).status, 201)
        new.stop()

        old = self.run_node(self.old_bin)
        self.assertIn("0.3.0", old.get("/").json["vendor"]["version"])
        self.assertEqual(old.get("/q4/d05").json["n"], 5)
        self.assertEqual(old.get("/q4/d00").status, 404)  # purged
        self.assertEqual(old.put("/q4/by-old", {"n": 100}).status, 201)
        rev = old.get("/q4/d01").json["_rev"]
        self.assertEqual(old.delete(f"/q4/d01?rev={rev}").status, 200)
        old.stop()

        again = self.run_node()
        self.assertEqual(again.get("/q4/d00").status, 404)
        infos = again.get("/q4/_purged_infos").json["purged_infos"]
        self.assertEqual([i["id"] for i in infos], ["d00"])
        # The view and the JSON index catch up with what 0.3 wrote: by-old in, d01 out.
        self.assertEqual(again.get("/q4/_design/v/_view/by_n").json["rows"][0]["value"], 19)
        keys = [r["key"] for r in again.get("/q4/_design/v/_view/by_n?reduce=false").json["rows"]]
        self.assertEqual(keys, list(range(2, 20)) + [100])
        found = again.post("/q4/_find", {"selector": {"n": {"$gte": 15}}, "use_index": ["nidx", "n"]}).json["docs"]
        self.assertEqual(sorted(d["n"] for d in found), [15, 16, 17, 18, 19, 100])


if __name__ == "__main__":
    main()