"""Mango JSON indexes on one data dir run by release 0.4.0 and by this one, in turn (FORMAT.md "JSON
indexes"): this release keeps no table of each document's row, so 0.4.0, which finds a document's
old row through one, must not take this release's indexes for its own, nor the reverse. After each
switch the documents change at once, before any query; every answer is then compared with the
documents as written: no document twice, none under a value it no longer has, none missing."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from data_dir import DataDirTest  # noqa: E402
from harness import main, wait_until  # noqa: E402

OLD = "v0.4.0"
DB = "people"
SELECTOR = {"selector": {"v": {"$gte": 0}}, "use_index": ["vidx", "v"], "sort": [{"v": "asc"}], "limit": 10000,
            "execution_stats": True, "fields": ["_id", "v"]}


class JsonIndexesAcrossReleases(DataDirTest):
    OLD = OLD

    def setUp(self):
        super().setUp()
        self.model = {}  # id -> v
        self.revs = {}

    def write(self, node, values):
        """Sets each id's `v` (a new document or a new revision), in one _bulk_docs."""
        docs = []
        for doc_id, v in values.items():
            doc = {"_id": doc_id, "v": v}
            if doc_id in self.revs:
                doc["_rev"] = self.revs[doc_id]
            docs.append(doc)
        r = node.post(f"/{DB}/_bulk_docs", {"docs": docs})
        self.assertEqual(r.status, 201)
        for row in r.json:
            self.assertTrue(row.get("ok"), row)
            self.revs[row["id"]] = row["rev"]
        self.model.update(values)

    def want(self):
        return [{"_id": i, "v": v} for v, i in sorted((v, i) for i, v in self.model.items())]

    def check(self, node):
        """Once the index answers from its rows (every row examined is a document), it holds exactly
        the documents as written."""
        def from_rows():
            r = node.post(f"/{DB}/_find", SELECTOR).json
            return r["execution_stats"]["total_keys_examined"] == len(self.model) and r["docs"] == self.want()
        wait_until(from_rows, 60)
        r = node.post(f"/{DB}/_find", SELECTOR).json
        self.assertEqual(r["docs"], self.want())
        self.assertEqual(r["execution_stats"]["total_keys_examined"], len(self.model))

    def test_indexes_across_a_downgrade_to_v040_and_an_upgrade_again(self):
        new = self.run_node()
        self.assertEqual(new.put(f"/{DB}?q=2").status, 201)
        self.write(new, {f"d{i:03d}": i for i in range(120)})
        self.assertEqual(new.post(f"/{DB}/_index", {"index": {"fields": ["v"]}, "name": "v", "ddoc": "vidx"}).status,
                         200)
        self.write(new, {f"d{i:03d}": 500 + i for i in range(0, 120, 3)})
        self.check(new)
        new.stop()

        old = self.run_node(self.old_bin)
        self.assertIn("0.4.0", old.get("/").json["vendor"]["version"])
        self.write(old, {f"d{i:03d}": 1000 + i for i in range(0, 120, 2)})  # before any query
        self.write(old, {f"n{i:03d}": 2000 + i for i in range(10)})
        self.check(old)
        self.write(old, {f"d{i:03d}": 3000 + i for i in range(1, 120, 4)})
        self.check(old)
        old.stop()

        again = self.run_node()
        self.write(again, {f"d{i:03d}": 4000 + i for i in range(0, 120, 5)})  # before any query
        self.check(again)
        self.write(again, {f"n{i:03d}": 5000 + i for i in range(0, 10, 2)})
        self.check(again)


if __name__ == "__main__":
    main()
