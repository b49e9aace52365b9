"""Partitioned databases (issue 35 point 2, first slice): `PUT /db?partitioned=true` (props in the
database's info, surviving a kill -9), ids `partition:docid` validated with couch_partition's errors,
every document of a partition in the one range CRC32(partition) falls in (CouchDB's placement, also
after a split), `GET /db/_partition/p`, `/db/_partition/p/_all_docs` answered from that range, `_find` and
`_explain` of a partition, and
the errors CouchDB gives for the rest."""
import json
import os
import subprocess
import zlib

from harness import CLIENTS_DIR, CLIENTS_SRC, Node, NodeTest, OwnNodesTest, install_clients, main
from test_reshard import split, wait_for_jobs


def range_of(name):
    lo, hi = name.split("-")
    return int(lo, 16), int(hi, 16)


class Partitioned(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        assert cls.node.put("/parts?partitioned=true&q=8").status == 201
        for p, n in (("sensor-a", 5), ("sensor-b", 3), ("c", 1)):
            r = cls.node.post("/parts/_bulk_docs", {"docs": [{"_id": f"{p}:{i:03d}", "i": i} for i in range(n)]})
            assert r.status == 201, r

    def ids(self, listing):
        return [row["id"] for row in listing["rows"]]

    def test_created_partitioned_and_bad_parameters(self):
        self.assertEqual(self.node.get("/parts").json["props"], {"partitioned": True})
        self.assertEqual(self.node.put("/notparts?partitioned=false").status, 201)
        self.assertEqual(self.node.get("/notparts").json["props"], {})
        r = self.node.put("/bad?partitioned=yes")
        self.assertEqual((r.status, r.json["reason"]), (400, "`partitioned` parameter can only be set to true or false."))

    def test_ids_must_name_a_partition(self):
        for doc_id, error, reason in (
                ("nopartition", "illegal_docid", "Doc id must be of form partition:id"),
                (":x", "illegal_partition", "Partition must not be empty"),
                ("p:", "illegal_docid", "Document id must not be empty"),
                ("p:_x", "illegal_docid", "Only reserved document ids may start with underscore."),
                ("_p:x", "illegal_docid", "Only reserved document ids may start with underscore.")):
            r = self.node.put(f"/parts/{doc_id}", {})
            self.assertEqual((r.status, r.json), (400, {"error": error, "reason": reason}), doc_id)
        # A server-generated id names no partition; a batch with one bad id is refused whole.
        r = self.node.post("/parts", {"x": 1})
        self.assertEqual((r.status, r.json["reason"]), (400, "Doc id must be of form partition:id"))
        r = self.node.post("/parts/_bulk_docs", {"docs": [{"_id": "ok:1"}, {"_id": "bad"}]})
        self.assertEqual((r.status, r.json["error"]), (400, "illegal_docid"))
        self.assertEqual(self.node.get("/parts/ok:1").status, 404)
        # Design and local documents name none.
        self.assertEqual(self.node.put("/parts/_design/d", {"views": {}}).status, 201)
        self.assertEqual(self.node.put("/parts/_local/l", {"x": 1}).status, 201)

    def test_a_partition_lives_in_the_range_of_its_crc32(self):
        for p in ("sensor-a", "sensor-b", "c"):
            h = zlib.crc32(p.encode())
            for doc_id in (f"{p}:000", f"{p}:zzz"):
                lo, hi = range_of(self.node.get(f"/parts/_shards/{doc_id}").json["range"])
                self.assertTrue(lo <= h <= hi, (doc_id, hex(h)))

    def test_partition_info_and_all_docs(self):
        self.assertEqual(self.node.put("/parts/sensor-b:gone", {}).status, 201)
        rev = self.node.get("/parts/sensor-b:gone").json["_rev"]
        self.assertEqual(self.node.delete(f"/parts/sensor-b:gone?rev={rev}").status, 200)
        info = self.node.get("/parts/_partition/sensor-b").json
        self.assertEqual({k: info[k] for k in ("db_name", "partition", "doc_count", "doc_del_count")},
                         {"db_name": "parts", "partition": "sensor-b", "doc_count": 3, "doc_del_count": 1})
        self.assertGreater(info["sizes"]["external"], 0)
        listing = self.node.get("/parts/_partition/sensor-a/_all_docs").json
        self.assertEqual(self.ids(listing), [f"sensor-a:{i:03d}" for i in range(5)])
        desc = self.node.get("/parts/_partition/sensor-a/_all_docs?descending=true&limit=2&include_docs=true").json
        self.assertEqual(self.ids(desc), ["sensor-a:004", "sensor-a:003"])
        self.assertEqual(desc["rows"][0]["doc"]["i"], 4)
        bounded = self.node.get('/parts/_partition/sensor-a/_all_docs?start_key="sensor-a:001"&end_key="sensor-a:003"')
        self.assertEqual(self.ids(bounded.json), ["sensor-a:001", "sensor-a:002", "sensor-a:003"])
        keys = self.node.post("/parts/_partition/sensor-a/_all_docs", {"keys": ["sensor-a:002", "c:000"]}).json
        self.assertEqual(keys["rows"][0]["id"], "sensor-a:002")
        self.assertEqual(keys["rows"][1], {"key": "c:000", "error": "not_found"})  # another partition's
        r = self.node.get('/parts/_partition/sensor-a/_all_docs?start_key="c:000"')
        self.assertEqual(r.status, 400, r)

    def test_find_and_explain_in_a_partition(self):
        r = self.node.post("/parts/_partition/sensor-a/_find", {"selector": {"i": {"$gte": 3}}})
        self.assertEqual(r.status, 200, r)
        self.assertEqual([d["_id"] for d in r.json["docs"]], ["sensor-a:003", "sensor-a:004"])
        # Pages of a partition's scan, through its bookmark, stay in the partition.
        first = self.node.post("/parts/_partition/sensor-b/_find", {"selector": {}, "limit": 2}).json
        rest = self.node.post("/parts/_partition/sensor-b/_find",
                              {"selector": {}, "limit": 5, "bookmark": first["bookmark"]}).json
        self.assertEqual([d["_id"] for d in first["docs"] + rest["docs"]], [f"sensor-b:{i:03d}" for i in range(3)])
        # With a JSON index too (the partition's documents only).
        self.assertEqual(self.node.post("/parts/_index", {"index": {"fields": ["i"]}, "name": "by-i"}).status, 200)
        r = self.node.post("/parts/_partition/c/_find", {"selector": {"i": {"$gte": 0}}, "sort": ["i"]})
        self.assertEqual([d["_id"] for d in r.json["docs"]], ["c:000"])
        explain = self.node.post("/parts/_partition/c/_explain", {"selector": {"i": {"$gte": 0}}}).json
        self.assertEqual((explain["index"]["name"], explain["opts"]["partition"]), ("by-i", "c"))
        # The body's `partition` on the database's own _find (mango's option) is the same query.
        r = self.node.post("/parts/_find", {"selector": {"i": {"$gte": 3}}, "partition": "sensor-a"})
        self.assertEqual([d["_id"] for d in r.json["docs"]], ["sensor-a:003", "sensor-a:004"])
        r = self.node.post("/parts/_partition/c/_find", {"selector": {}, "partition": "sensor-a"})
        self.assertEqual(r.status, 400, r)
        r = self.node.post("/parts/_find", {"selector": {}, "partition": "_bad"})
        self.assertEqual((r.status, r.json["error"]), (400, "illegal_partition"))

    def test_partition_request_errors(self):
        for path, status, error, reason in (
                ("/parts/_partition", 400, "bad_request", "invalid_partition_req"),
                ("/parts/_partition/_x", 400, "illegal_partition", "Partition must not start with an underscore"),
                ("/parts/_partition/a/junk", 400, "bad_request", "invalid_partition_req"),
                ("/notparts2/_partition/a", 400, "bad_request", "database is not partitioned")):
            if path.startswith("/notparts2"):
                self.node.put("/notparts2")
            r = self.node.get(path)
            self.assertEqual((r.status, r.json), (status, {"error": error, "reason": reason}), path)
        r = self.node.get("/parts/_partition/a/_design/d/_show/s")
        self.assertEqual((r.status, r.json["reason"]), (400, "invalid_partition_req"))

    def test_views_of_a_partition(self):
        n = self.node
        self.assertEqual(n.put("/pviews?partitioned=true&q=4").status, 201)
        docs = [{"_id": f"{p}:{i:02d}", "i": i, "tag": "odd" if i % 2 else "even"}
                for p in ("alpha", "beta", "gamma") for i in range(12)]
        self.assertEqual(n.post("/pviews/_bulk_docs", {"docs": docs}).status, 201)
        views = {"by_i": {"map": "function(d){ emit(d.i, d.tag); }", "reduce": "_count"},
                 "by_tag": {"map": "function(d){ emit([d.tag, d.i], 1); }", "reduce": "_sum"}}
        self.assertEqual(n.put("/pviews/_design/p", {"views": views}).status, 201)
        self.assertEqual(n.put("/pviews/_design/g", {"views": views, "options": {"partitioned": False}}).status, 201)
        base = "/pviews/_partition/beta/_design/p/_view"
        rows = n.get(f"{base}/by_i?reduce=false").json
        self.assertEqual([r["id"] for r in rows["rows"]], [f"beta:{i:02d}" for i in range(12)])
        self.assertEqual((rows["total_rows"], rows["offset"]), (12, 0))  # the partition's rows
        ranged = n.get(f"{base}/by_i?reduce=false&startkey=3&endkey=7&inclusive_end=false").json
        self.assertEqual([r["key"] for r in ranged["rows"]], [3, 4, 5, 6])
        self.assertEqual(ranged["offset"], 3)
        desc = n.get(f"{base}/by_i?reduce=false&descending=true&limit=2&skip=1&include_docs=true").json
        self.assertEqual([(r["key"], r["doc"]["_id"]) for r in desc["rows"]], [(10, "beta:10"), (9, "beta:09")])
        self.assertEqual(desc["offset"], 1)
        keys = n.post(f"{base}/by_i?reduce=false", {"keys": [5, 1, 99]}).json
        self.assertEqual([r["id"] for r in keys["rows"]], ["beta:05", "beta:01"])
        self.assertEqual(n.get(f"{base}/by_i").json["rows"], [{"key": None, "value": 12}])
        self.assertEqual(n.get(f"{base}/by_i?startkey=10").json["rows"], [{"key": None, "value": 2}])
        grouped = n.get(f"{base}/by_tag?group_level=1").json["rows"]
        self.assertEqual(grouped, [{"key": ["even"], "value": 6}, {"key": ["odd"], "value": 6}])
        # couch_mrview's rules: a partitioned view answers partitions only; a global one, no partition.
        self.assertError(n.get("/pviews/_design/p/_view/by_i"), 400, "query_parse_error",
                         "`partition` parameter is mandatory for queries to this view.")
        self.assertError(n.get("/pviews/_partition/beta/_design/g/_view/by_i"), 400, "query_parse_error",
                         "`partition` parameter is not supported in this design doc")
        self.assertEqual(n.get("/pviews/_design/g/_view/by_i").json["rows"], [{"key": None, "value": 36}])
        # ?partition= names the partition as the path does (issue 51 point 6, couch_mrview_http).
        self.assertEqual(n.get("/pviews/_design/p/_view/by_i?reduce=false&partition=beta").json, rows)
        self.assertError(n.get(f"{base}/by_i?partition=gamma"), 400, "bad_request",
                         "Conflicting value for `partition` in query string")
        self.assertError(n.get("/pviews/_design/p/_view/by_i?partition=_x"), 400, "illegal_partition",
                         "Partition must not start with an underscore")
        # A change reaches the partition's view; a purge leaves it.
        rev = n.put("/pviews/beta:new", {"i": 100, "tag": "odd"}).json["rev"]
        self.assertEqual(n.get(f"{base}/by_i?startkey=100&reduce=false").json["rows"][0]["id"], "beta:new")
        self.assertEqual(n.post("/pviews/_purge", {"beta:new": [rev]}).status, 201)
        self.assertEqual(n.get(f"{base}/by_i?startkey=100&reduce=false").json["rows"], [])
        self.assertEqual(n.get("/pviews/_partition/gamma/_design/p/_view/by_i").json["rows"][0]["value"], 12)


class PartitionedThroughSplitAndKill(OwnNodesTest):
    def test_a_split_keeps_each_partition_whole_and_a_kill_keeps_the_props(self):
        node = Node().start()
        self.addCleanup(node.cleanup)
        self.assertEqual(node.put("/pk?partitioned=true&q=1").status, 201)
        parts = [f"p{k}" for k in range(12)]
        r = node.post("/pk/_bulk_docs", {"docs": [{"_id": f"{p}:{i}"} for p in parts for i in range(10)]})
        self.assertEqual(r.status, 201, r)
        wait_for_jobs(node, split(self, node, "pk", range="00000000-ffffffff"))
        shards = node.get("/pk/_shards").json["shards"]
        self.assertEqual(len(shards), 2)
        for p in parts:
            h = zlib.crc32(p.encode())
            lo, hi = range_of(node.get(f"/pk/_shards/{p}:0").json["range"])
            self.assertTrue(lo <= h <= hi, p)
            self.assertEqual(len(node.get(f"/pk/_partition/{p}/_all_docs").json["rows"]), 10, p)
            self.assertEqual(node.get(f"/pk/_partition/{p}").json["doc_count"], 10, p)
        self.assertEqual(node.put("/pk/p3:new", {}).status, 201)
        node.kill()
        node.start()
        self.assertEqual(node.get("/pk").json["props"], {"partitioned": True})
        self.assertEqual(node.put("/pk/nopartition", {}).status, 400)
        self.assertEqual(len(node.get("/pk/_partition/p3/_all_docs").json["rows"]), 11)


class NanoPartitions(NodeTest):
    """nano 10, Apache CouchDB's Node.js client, on a partitioned database (tests/clients/nano_partitions.js)."""

    @classmethod
    def setUpClass(cls):
        install_clients()
        super().setUpClass()

    def test_nano_partition_calls_and_purge(self):
        user, password = self.node.admin
        env = dict(os.environ, NODE_PATH=os.path.join(CLIENTS_DIR, "node_modules"))
        run = subprocess.run(["node", os.path.join(CLIENTS_SRC, "nano_partitions.js"), f"http://127.0.0.1:{self.node.port}",
                              user, password, "nanoparts"], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr[-3000:])
        out = json.loads(run.stdout)
        self.assertEqual(out["create"], {"ok": True})
        self.assertEqual(out["props"], {"partitioned": True})
        self.assertEqual(out["written"], 10)
        self.assertEqual(out["info"], {"partition": "red", "doc_count": 6, "doc_del_count": 0})
        self.assertEqual(out["list"], [[f"blue:{i}", 10 + i] for i in range(4)])
        self.assertEqual(out["find"], ["red:3", "red:4", "red:5"])
        self.assertEqual(out["view"], {"total_rows": 6, "offset": 1, "keys": [1, 2, 3, 4]})
        self.assertEqual(out["view_count"], 4)
        self.assertEqual(out["global_view"], {"statusCode": 400, "error": "query_parse_error",
                                              "reason": "`partition` parameter is mandatory for queries to this view."})
        self.assertEqual(out["purge"]["purge_seq"], None)
        self.assertEqual(list(out["purge"]["purged"]), ["red:0"])
        self.assertEqual((out["after_purge"], out["info_after"], out["purged_infos"]), (404, 5, ["red:0"]))


if __name__ == "__main__":
    main()
