"""_purge (issue 35 point 1) on one node, as CouchDB's chttpd_db and couch_db_updater answer it:
purged leaves leave the document (a document without leaves leaves _changes, _all_docs, views and
Mango indexes; one with leaves left moves to a new seq), the requests kept (_purged_infos, within
_purged_infos_limit), every error; through a kill -9 and a split; and replication's rules (a purge
is not replicated; a checkpointed replication does not bring a purged document back, a new one
does)."""
from harness import Node, NodeTest, OwnNodesTest, main
from test_reshard import split, wait_for_jobs

BRANCH = "2-" + "b" * 32


def conflicted(node, db, doc_id):
    """A document with two leaves: its own 2- revision and BRANCH beside it. Returns (own, first)."""
    first = node.put(f"/{db}/{doc_id}", {"v": 1}).json["rev"]
    own = node.put(f"/{db}/{doc_id}", {"v": 2, "_rev": first}).json["rev"]
    r = node.post(f"/{db}/_bulk_docs", {"new_edits": False, "docs": [
        {"_id": doc_id, "_rev": BRANCH, "_revisions": {"start": 2, "ids": ["b" * 32, first.split("-")[1]]},
         "v": "branch"}]})
    assert r.status == 201, r
    return own, first


class Purge(NodeTest):
    def test_a_whole_document_leaves_every_listing_and_a_partial_one_moves_to_a_new_seq(self):
        n = self.node
        self.assertEqual(n.put("/p1?q=4").status, 201)
        gone = n.put("/p1/gone", {"secret": "x"}).json["rev"]
        own, _ = conflicted(n, "p1", "two")
        self.assertEqual(n.put("/p1/stays", {}).status, 201)
        before = n.get("/p1/_changes").json["last_seq"]
        r = n.post("/p1/_purge", {"gone": [gone], "two": [BRANCH, "9-nothere"], "absent": ["1-" + "0" * 32]})
        self.assertEqual((r.status, r.json), (201, {"purge_seq": None,
                                                    "purged": {"gone": [gone], "two": [BRANCH], "absent": []}}))
        self.assertError(n.get("/p1/gone"), 404, "not_found", "missing")
        self.assertError(n.get(f"/p1/gone?rev={gone}"), 404, "not_found", "missing")
        self.assertEqual(n.get("/p1/two?conflicts=true").json, {"_id": "two", "_rev": own, "v": 2})
        ids = [row["id"] for row in n.get("/p1/_all_docs").json["rows"]]
        self.assertEqual(ids, ["stays", "two"])
        changes = n.get("/p1/_changes").json["results"]
        self.assertEqual(sorted(c["id"] for c in changes), ["stays", "two"])
        # The document purged in part is a change again (CouchDB gives it a new update seq).
        after = n.get(f"/p1/_changes?since={before}").json["results"]
        self.assertEqual([(c["id"], c["changes"]) for c in after], [("two", [{"rev": own}])])
        info = n.get("/p1").json
        self.assertEqual((info["doc_count"], info["doc_del_count"], info["purge_seq"]), (2, 0, "3"))
        # Purging the same revision again removes nothing; a non-leaf is never purged.
        r = n.post("/p1/_purge", {"two": [own.replace("2-", "1-")]})
        self.assertEqual(r.json["purged"], {"two": []})
        infos = n.get("/p1/_purged_infos").json["purged_infos"]
        self.assertEqual(sorted((i["id"], tuple(i["revs"])) for i in infos),
                         sorted([("gone", (gone,)), ("two", (BRANCH, "9-nothere")), ("absent", ("1-" + "0" * 32,)),
                                 ("two", (own.replace("2-", "1-"),))]))
        # A purged id can be written again from scratch.
        self.assertEqual(n.put("/p1/gone", {"again": True}).status, 201)

    def test_views_and_mango_indexes_lose_the_purged_rows(self):
        n = self.node
        self.assertEqual(n.put("/p2?q=2").status, 201)
        self.assertEqual(n.put("/p2/_design/d", {"views": {"by_v": {"map": "function(d){ emit(d.v, 1); }",
                                                                    "reduce": "_count"}}}).status, 201)
        self.assertEqual(n.post("/p2/_index", {"index": {"fields": ["v"]}, "name": "v-idx", "ddoc": "m"}).status, 200)
        revs = {}
        for i in range(6):
            revs[f"d{i}"] = n.put(f"/p2/d{i}", {"v": i}).json["rev"]
        own, _ = conflicted(n, "p2", "c")  # v=2 wins (2- own vs 2-bbb: "b" sorts first? by hash)
        view = n.get("/p2/_design/d/_view/by_v?reduce=false").json
        self.assertEqual(len(view["rows"]), 7)
        self.assertEqual(n.get("/p2/_design/d/_info").json["view_index"]["purge_seq"], 0)
        r = n.post("/p2/_purge", {"d1": [revs["d1"]], "d4": [revs["d4"]], "c": [BRANCH]})
        self.assertEqual(r.status, 201)
        view = n.get("/p2/_design/d/_view/by_v?reduce=false").json
        self.assertEqual(sorted(row["id"] for row in view["rows"]), ["c", "d0", "d2", "d3", "d5"])
        self.assertEqual([row for row in view["rows"] if row["id"] == "c"][0]["key"], 2)
        self.assertEqual(n.get("/p2/_design/d/_view/by_v").json["rows"][0]["value"], 5)
        self.assertEqual(n.get("/p2/_design/d/_info").json["view_index"]["purge_seq"], 3)
        found = n.post("/p2/_find", {"selector": {"v": {"$gte": 0}}, "use_index": ["m", "v-idx"],
                                     "execution_stats": True}).json
        self.assertEqual(sorted(d["_id"] for d in found["docs"]), ["c", "d0", "d2", "d3", "d5"])
        self.assertEqual(found["execution_stats"]["total_keys_examined"], 5)  # the index's rows: none left over
        # Mango's indexes are in the copies' own transactions: their _info has every purge applied.
        self.assertEqual(n.get("/p2/_design/m/_info").json["view_index"]["purge_seq"], 3)

    def test_limits_and_errors(self):
        n = self.node
        self.assertEqual(n.put("/p3?q=1").status, 201)
        rev = n.put("/p3/a", {}).json["rev"]
        self.assertEqual(n.get("/p3/_purged_infos_limit").raw, "1000\n")
        self.assertEqual(n.put("/p3/_purged_infos_limit", 2).json, {"ok": True})
        self.assertEqual(n.get("/p3/_purged_infos_limit").json, 2)
        for bad in (0, -1, "5", 1.5, None):
            self.assertError(n.put("/p3/_purged_infos_limit", bad), 400, "bad_request",
                             "`purge_infos_limit` must be positive integer")
        for i in range(4):
            n.post("/p3/_purge", {f"x{i}": ["1-" + "0" * 32]})
        self.assertEqual([i["id"] for i in n.get("/p3/_purged_infos").json["purged_infos"]], ["x2", "x3"])
        self.assertError(n.post("/p3/_purge", {"a": "junk"}), 400, "bad_request", "Invalid rev format")
        self.assertError(n.post("/p3/_purge", {"a": [1]}), 400, "bad_request", "Invalid rev format")
        self.assertError(n.post("/p3/_purge", {"a": {"x": 1}}), 400, "bad_request", "Invalid rev format")
        self.assertError(n.post("/p3/_purge", [rev]), 400, "bad_request", "Request body must be a JSON object")
        self.assertError(n.post("/p3/_purge", raw_body="{", headers={"Content-Type": "application/json"}), 400,
                         "bad_request")
        self.assertError(n.post("/p3/_purge", {f"i{k}": [] for k in range(101)}), 400, "bad_request",
                         "Exceeded maximum number of documents.")
        self.assertError(n.post("/p3/_purge", {"a": [f"1-{k:032x}" for k in range(1001)]}), 400, "bad_request",
                         "Exceeded maximum number of revisions.")
        r = n.post("/p3/_purge", raw_body='{"a":[]}', headers={"Content-Type": "text/plain"})
        self.assertEqual(r.status, 415)
        self.assertEqual(n.get("/p3/_purge").status, 405)
        self.assertEqual(n.request("DELETE", "/p3/_purged_infos").status, 405)
        self.assertEqual(n.post("/p3/_purge", {"a": [rev]}, auth=False).status, 401)
        self.assertEqual(n.get("/p3/_purged_infos", auth=False).status, 401)
        self.assertEqual(n.get("/p3/a").status, 200)  # nothing purged by the refused requests
        self.assertError(n.post("/nodb/_purge", {}), 404, "not_found")


class PurgeDurable(OwnNodesTest):
    def test_a_purge_survives_kill_9_and_a_split(self):
        node = Node().start()
        self.addCleanup(node.cleanup)
        self.assertEqual(node.put("/pk?q=1").status, 201)
        revs = {}
        for i in range(40):
            revs[f"k{i:02d}"] = node.put(f"/pk/k{i:02d}", {"i": i}).json["rev"]
        purged = {f"k{i:02d}": [revs[f"k{i:02d}"]] for i in range(0, 40, 4)}
        self.assertEqual(node.post("/pk/_purge", purged).status, 201)
        node.kill()
        node.start()
        self.assertEqual(node.get("/pk").json["doc_count"], 30)
        self.assertEqual(node.get("/pk/k00").status, 404)
        self.assertEqual(len(node.get("/pk/_purged_infos").json["purged_infos"]), 10)
        # A split: each child keeps what its range had (no purged document comes back) and the
        # purge requests of its documents; a purge after the split reaches the children.
        wait_for_jobs(node, split(self, node, "pk", range="00000000-ffffffff"))
        self.assertEqual(len(node.get("/pk/_shards").json["shards"]), 2)
        self.assertEqual(node.get("/pk").json["doc_count"], 30)
        ids = [row["id"] for row in node.get("/pk/_all_docs").json["rows"]]
        self.assertEqual(ids, sorted(f"k{i:02d}" for i in range(40) if i % 4))
        infos = node.get("/pk/_purged_infos").json["purged_infos"]
        self.assertEqual(sorted(i["id"] for i in infos), sorted(purged))
        self.assertEqual(node.post("/pk/_purge", {"k01": [revs["k01"]]}).json["purged"], {"k01": [revs["k01"]]})
        self.assertEqual(node.get("/pk").json["doc_count"], 29)


class PurgeAndReplication(NodeTest):
    def replicate(self, body):
        r = self.node.post("/_replicate", body)
        self.assertEqual(r.status, 200, r)
        return r.json

    def test_purges_are_not_replicated_and_checkpoints_keep_a_purged_document_away(self):
        n = self.node
        for db in ("rsrc", "rtgt"):
            self.assertEqual(n.put(f"/{db}").status, 201)
        rev = n.put("/rsrc/a", {"v": 1}).json["rev"]
        self.assertEqual(n.put("/rsrc/b", {"v": 1}).status, 201)
        self.assertEqual(self.replicate({"source": "rsrc", "target": "rtgt"})["history"][0]["docs_written"], 2)
        # Purged on the target: the next run resumes from its checkpoint and does not bring it back.
        self.assertEqual(n.post("/rtgt/_purge", {"a": [rev]}).status, 201)
        self.assertEqual(n.put("/rsrc/c", {}).status, 201)
        out = self.replicate({"source": "rsrc", "target": "rtgt"})
        self.assertEqual(out["history"][0]["docs_written"] - out["history"][1]["docs_written"], 1)  # counted on
        self.assertEqual(n.get("/rtgt/a").status, 404)
        # Purged on the source: the target keeps its copy (purges are not replicated).
        brev = n.get("/rsrc/b").json["_rev"]
        self.assertEqual(n.post("/rsrc/_purge", {"b": [brev]}).status, 201)
        self.assertTrue(self.replicate({"source": "rsrc", "target": "rtgt"})["no_changes"])
        self.assertEqual(n.get("/rtgt/b").status, 200)
        # A replication without checkpoints reads the source from the start: the revision the
        # target purged comes back (CouchDB's rule).
        self.replicate({"source": "rsrc", "target": "rtgt", "use_checkpoints": False})
        self.assertEqual(n.get("/rtgt/a").json["_rev"], rev)


if __name__ == "__main__":
    main()
