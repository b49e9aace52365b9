"""POST /_replicate (issue 33): one-shot and continuous replications between databases of a node,
named locally or by URL, with CouchDB's answers (history, _local_id, no_changes, errors), its
checkpoint documents on both sides, resumption from them, filters (doc_ids, selector, a JavaScript
filter with query_params), since_seq as a seq and as a time, create_target, conflicts, deletions and
attachments copied exactly, cancel, and /_scheduler/jobs and /_active_tasks while a continuous
replication runs."""
import base64
import json
import time
import urllib.parse

from harness import ClockedNodeTest, Node, NodeTest, OwnNodesTest, main, wait_until


class Replicate(NodeTest):
    def url(self, db, user=None):
        user = user or self.node.admin
        return f"http://{user[0]}:{urllib.parse.quote(user[1])}@127.0.0.1:{self.node.port}/{db}"

    def replicate(self, body, status=200):
        r = self.node.post("/_replicate", body)
        self.assertEqual(r.status, status, r)
        return r.json

    def fill(self, db, docs):
        r = self.node.post(f"/{db}/_bulk_docs", {"docs": docs})
        self.assertEqual(r.status, 201, r)
        return r.json

    def everything(self, db):
        """Every document with all its leaf revisions, their histories and attachments' data."""
        out = {}
        for row in self.node.get(f"/{db}/_all_docs").json["rows"]:
            r = self.node.get(f"/{db}/{urllib.parse.quote(row['id'], safe='')}?open_revs=all&revs=true"
                              "&attachments=true", headers={"Accept": "application/json"})
            self.assertEqual(r.status, 200, r)
            out[row["id"]] = sorted((json.dumps(x["ok"], sort_keys=True) for x in r.json if "ok" in x))
        changes = self.node.get(f"/{db}/_changes?style=all_docs").json["results"]
        deleted = sorted(c["id"] for c in changes if c.get("deleted"))
        return out, deleted

    def test_one_shot_copies_documents_conflicts_deletions_and_attachments_exactly(self):
        self.new_db("src1")
        self.fill("src1", [{"_id": f"d{i:03d}", "n": i} for i in range(120)])
        # A conflict (two leaves), a deleted document and one with an attachment.
        r = self.node.post("/src1/_bulk_docs", {"new_edits": False, "docs": [
            {"_id": "c1", "_rev": "1-aaaa", "side": "a"}, {"_id": "c1", "_rev": "1-bbbb", "side": "b"}]})
        self.assertEqual(r.status, 201, r)
        rev = self.node.get("/src1/d001").json["_rev"]
        self.assertEqual(self.node.delete(f"/src1/d001?rev={rev}").status, 200)
        att = base64.b64encode(b"hello attachment " * 100).decode()
        self.assertEqual(self.node.put("/src1/withatt", {"_attachments": {
            "a.txt": {"content_type": "text/plain", "data": att}}}).status, 201)
        out = self.replicate({"source": "src1", "target": "tgt1", "create_target": True})
        self.assertTrue(out["ok"])
        self.assertEqual(out["replication_id_version"], 4)
        self.assertEqual(len(out["session_id"]), 32)
        [h] = out["history"]
        self.assertEqual(set(h), {"session_id", "start_time", "end_time", "start_last_seq", "end_last_seq",
                                  "recorded_seq", "missing_checked", "missing_found", "docs_read", "docs_written",
                                  "doc_write_failures", "bulk_get_docs", "bulk_get_attempts"})
        self.assertEqual(h["start_last_seq"], 0)
        self.assertEqual(h["end_last_seq"], out["source_last_seq"])
        self.assertEqual(h["docs_written"], 123)  # 119 live + 1 deleted + 2 conflict leaves + 1 with an attachment
        self.assertEqual(h["doc_write_failures"], 0)
        self.assertRegex(h["start_time"], r"^[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT$")
        self.assertEqual(self.everything("src1"), self.everything("tgt1"))
        # Nothing new: no_changes, as CouchDB answers a replication with nothing to do.
        self.assertEqual(self.replicate({"source": "src1", "target": "tgt1", "create_target": True}),
                         {"ok": True, "no_changes": True})

    def test_checkpoints_on_both_sides_and_resumption_from_them(self):
        self.new_db("src2")
        self.new_db("tgt2")
        self.fill("src2", [{"_id": f"a{i:03d}"} for i in range(50)])
        first = self.replicate({"source": self.url("src2"), "target": self.url("tgt2")})
        # The replication id: the same request continuous names it (+continuous).
        cont = self.replicate({"source": self.url("src2"), "target": self.url("tgt2"), "continuous": True}, 202)
        self.replicate({"source": self.url("src2"), "target": self.url("tgt2"), "continuous": True, "cancel": True})
        rep_id = cont["_local_id"].split("+")[0]
        self.assertRegex(rep_id, r"^[0-9a-f]{32}$")
        for db in ("src2", "tgt2"):
            log = self.node.get(f"/{db}/_local/{rep_id}").json
            self.assertEqual(log["session_id"], first["session_id"], db)
            self.assertEqual(log["source_last_seq"], first["source_last_seq"], db)
            self.assertEqual(log["replication_id_version"], 4)
            self.assertEqual(log["history"], first["history"])
        self.fill("src2", [{"_id": f"b{i:03d}"} for i in range(7)])
        second = self.replicate({"source": self.url("src2"), "target": self.url("tgt2")})
        self.assertEqual(second["history"][0]["start_last_seq"], first["source_last_seq"])
        # Figures count on from the checkpoint's, as CouchDB's: 7 read in this session.
        self.assertEqual(second["history"][0]["docs_read"], first["history"][0]["docs_read"] + 7)
        self.assertEqual(second["history"][1], first["history"][0])
        # The other side's checkpoint lost: the session ids differ, the histories still share one.
        log = self.node.get(f"/tgt2/_local/{rep_id}").json
        log["session_id"] = "elsewhere"
        self.assertEqual(self.node.put(f"/tgt2/_local/{rep_id}", log).status, 201)
        self.fill("src2", [{"_id": "c000"}])
        third = self.replicate({"source": self.url("src2"), "target": self.url("tgt2")})
        self.assertEqual(third["history"][0]["start_last_seq"], second["source_last_seq"])
        # Counted on from the newest entry below the common one (CouchDB's History): the first session's.
        self.assertEqual(third["history"][0]["docs_read"], first["history"][0]["docs_read"] + 1)
        self.assertEqual(self.node.get("/tgt2").json["doc_count"], 58)

    def test_the_id_ignores_passwords_and_how_credentials_come(self):
        self.new_db("src3")
        self.new_db("tgt3")
        user = self.node.admin
        basic = "Basic " + base64.b64encode(f"{user[0]}:{user[1]}".encode()).decode()
        plain = f"http://127.0.0.1:{self.node.port}"
        forms = [{"source": self.url("src3"), "target": self.url("tgt3")},
                 {"source": {"url": f"{plain}/src3", "headers": {"Authorization": basic}},
                  "target": {"url": f"{plain}/tgt3", "auth": {"basic": {"username": user[0], "password": user[1]}}}}]
        ids = []
        for body in forms:
            r = self.replicate(dict(body, continuous=True), 202)
            ids.append(r["_local_id"])
            self.replicate({"replication_id": r["_local_id"], "cancel": True})
        self.assertEqual(ids[0], ids[1])
        self.assertTrue(ids[0].endswith("+continuous"))
        # A filter is part of the id.
        r = self.replicate(dict(forms[0], continuous=True, doc_ids=["x"]), 202)
        self.assertNotEqual(r["_local_id"], ids[0])
        self.replicate({"replication_id": r["_local_id"], "cancel": True})

    def test_filters_doc_ids_selector_and_javascript(self):
        self.new_db("src4")
        self.fill("src4", [{"_id": f"k{i:02d}", "kind": "even" if i % 2 == 0 else "odd", "n": i} for i in range(20)])
        self.assertEqual(self.node.put("/src4/_design/f", {"filters": {
            "kind": "function(doc, req) { return doc.kind === req.query.kind; }"}}).status, 201)

        def ids(db):
            return sorted(r["id"] for r in self.node.get(f"/{db}/_all_docs").json["rows"])

        self.replicate({"source": "src4", "target": "t4ids", "create_target": True, "doc_ids": ["k03", "k05", "nope"]})
        self.assertEqual(ids("t4ids"), ["k03", "k05"])
        self.replicate({"source": "src4", "target": "t4sel", "create_target": True, "selector": {"n": {"$gte": 17}}})
        self.assertEqual(ids("t4sel"), ["k17", "k18", "k19"])
        self.replicate({"source": "src4", "target": "t4js", "create_target": True, "filter": "f/kind",
                        "query_params": {"kind": "odd"}})
        self.assertEqual(ids("t4js"), [f"k{i:02d}" for i in range(1, 20, 2)])
        r = self.node.post("/_replicate", {"source": "src4", "target": "t4js", "filter": "f/missing"})
        self.assertEqual(r.status, 500, r)
        # The source's own filters by name, their arguments in query_params.
        self.replicate({"source": "src4", "target": "t4design", "create_target": True, "filter": "_design"})
        self.assertEqual(ids("t4design"), ["_design/f"])
        self.replicate({"source": "src4", "target": "t4bids", "create_target": True, "filter": "_doc_ids",
                        "query_params": {"doc_ids": ["k01", "k02"]}})
        self.assertEqual(ids("t4bids"), ["k01", "k02"])
        self.replicate({"source": "src4", "target": "t4bsel", "create_target": True, "filter": "_selector",
                        "query_params": {"selector": {"n": {"$lt": 2}}}})
        self.assertEqual(ids("t4bsel"), ["k00", "k01"])

    def test_since_seq_as_a_seq(self):
        self.new_db("src5")
        self.fill("src5", [{"_id": f"early{i}"} for i in range(5)])
        since = self.node.get("/src5/_changes").json["last_seq"]
        self.fill("src5", [{"_id": f"late{i}"} for i in range(3)])
        self.replicate({"source": "src5", "target": "t5", "create_target": True, "since_seq": since})
        self.assertEqual(sorted(r["id"] for r in self.node.get("/t5/_all_docs").json["rows"]),
                         ["late0", "late1", "late2"])

    def test_create_target_params(self):
        self.new_db("src6")
        self.fill("src6", [{"_id": "x"}])
        self.replicate({"source": "src6", "target": "t6", "create_target": True, "create_target_params": {"q": 1}})
        self.assertEqual(len(self.node.get("/t6/_shards").json["shards"]), 1)
        self.assertEqual(self.node.get("/t6/x").status, 200)

    def test_continuous_follows_writes_shows_in_scheduler_and_tasks_and_cancels(self):
        self.new_db("src7")
        r = self.replicate({"source": self.url("src7"), "target": "t7", "create_target": True, "continuous": True}, 202)
        rep_id = r["_local_id"]
        self.assertTrue(rep_id.endswith("+continuous+create_target"), rep_id)
        self.assertEqual(self.replicate({"source": self.url("src7"), "target": "t7", "create_target": True,
                                         "continuous": True}, 202)["_local_id"], rep_id)  # joins it
        for i in range(3):
            self.assertEqual(self.node.put(f"/src7/live{i}", {"i": i}).status, 201)
        self.assertTrue(wait_until(lambda: self.node.get("/t7/live2").status == 200))
        jobs = self.node.get("/_scheduler/jobs").json
        [job] = [j for j in jobs["jobs"] if j["id"] == rep_id]
        self.assertEqual(job["source"], f"http://127.0.0.1:{self.node.port}/src7/")  # no credentials
        self.assertNotIn(self.node.admin[1], json.dumps(jobs))
        self.assertEqual(self.node.get(f"/_scheduler/jobs/{urllib.parse.quote(rep_id)}").json["id"], rep_id)
        self.assertTrue(wait_until(lambda: any(
            t["type"] == "replication" and t["replication_id"] == rep_id and t["docs_written"] >= 3
            for t in self.node.get("/_active_tasks").json)))
        r = self.node.post("/_replicate", {"replication_id": rep_id, "cancel": True})
        self.assertEqual((r.status, r.json), (200, {"ok": True, "_local_id": rep_id}))
        self.assertFalse(any(j["id"] == rep_id for j in self.node.get("/_scheduler/jobs").json["jobs"]))
        self.assertEqual(self.node.get(f"/_scheduler/jobs/{urllib.parse.quote(rep_id)}").status, 404)
        r = self.node.post("/_replicate", {"replication_id": rep_id, "cancel": True})
        self.assertEqual((r.status, r.json), (404, {"error": "not found"}))

    def test_documents_the_target_refuses_are_counted_and_the_rest_written(self):
        self.new_db("src9")
        self.new_db("t9")
        self.assertEqual(self.node.put("/t9/_design/v", {"validate_doc_update": (
            "function(doc) { if (doc.bad) throw({forbidden: 'no bad docs'}); }")}).status, 201)
        self.fill("src9", [{"_id": f"g{i}", "bad": i % 3 == 0} for i in range(9)])
        # A document as deep as a PUT takes still fits in the _bulk_docs around it.
        deep = ('{"x":' * 995 + '{}' + '}' * 995).encode()
        r = self.node.request("PUT", "/src9/deep", raw_body=deep, headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 201, r)
        out = self.replicate({"source": "src9", "target": "t9"})
        self.assertEqual(out["history"][0]["doc_write_failures"], 3)
        self.assertEqual(out["history"][0]["docs_written"], 7)
        self.assertEqual(sorted(r["id"] for r in self.node.get("/t9/_all_docs").json["rows"]),
                         ["_design/v", "deep", "g1", "g2", "g4", "g5", "g7", "g8"])

    def test_errors_as_couchdb_gives_them(self):
        self.new_db("src8")
        port = self.node.port
        r = self.node.post("/_replicate", {"source": "missing8", "target": "src8"})
        self.assertEqual((r.status, r.json), (500, {"error": "db_not_found",
                                                     "reason": f"could not open http://127.0.0.1:{port}/missing8/"}))
        r = self.node.post("/_replicate", {"source": self.url("src8", ("admin", "wrong")), "target": "x8"})
        self.assertEqual((r.status, r.json["error"]), (500, "unauthorized"), r)
        self.assertNotIn("wrong", json.dumps(r.json))
        r = self.node.post("/_replicate", {"source": "http://127.0.0.1:1/nothing", "target": "src8",
                                           "retries_per_request": 0})
        self.assertEqual((r.status, r.json["error"]), (500, "db_not_found"), r)
        for body, reason in [({"source": "src8", "target": "x", "continuous": "yes"},
                              "parameter `continuous` must be a boolean"),
                             ({"source": "src8", "target": "x", "doc_ids": ["a"], "selector": {}},
                              "`doc_ids`,`filter`,`selector` are mutually exclusive"),
                             ({"source": "src8", "target": "x", "doc_ids": "a"}, "parameter `doc_ids` must be an array"),
                             ({"source": "src8", "target": "x", "selector": []},
                              "parameter `selector` must be a JSON object"),
                             ({"target": "x"}, "Missing replicator database"),
                             ({"source": "src8", "target": "x", "query_params": 3},
                              "parameter `query_params` must be an object")]:
            self.assertError(self.node.post("/_replicate", body), 400, "bad_request", reason)
        r = self.node.post("/_replicate", {"source": "ftp://h/db", "target": "x"})
        self.assertEqual((r.status, r.json["error"]), (400, "bad_request"), r)
        self.assertTrue(r.json["reason"].startswith("source has an invalid url"), r)
        r = self.node.request("POST", "/_replicate", raw_body=b'{"source":"src8","target":"x"}',
                              headers={"Content-Type": "text/plain"})
        self.assertEqual(r.status, 415, r)
        self.assertEqual(self.node.get("/_replicate").status, 405)
        # Server admins only (CouchDB's chttpd_auth_request requires admin for /_replicate).
        self.assertEqual(self.node.post("/_replicate", {"source": "src8", "target": "x"}, auth=False).status, 401)


class ReplicateThroughAKill(OwnNodesTest):
    def test_a_replication_posted_again_after_kill_9_resumes_from_its_checkpoint(self):
        node = Node().start()
        self.addCleanup(node.cleanup)
        self.assertEqual(node.put("/ksrc").status, 201)
        for b in range(0, 3000, 500):
            self.assertEqual(node.post("/ksrc/_bulk_docs", {"docs": [{"_id": f"k{i:05d}"} for i in range(b, b + 500)]})
                             .status, 201)
        # One document a batch: thousands of round trips, so the kill after the first checkpoint
        # comes part way through.
        body = {"source": "ksrc", "target": "ktgt", "create_target": True, "continuous": True,
                "worker_processes": 1, "worker_batch_size": 1, "checkpoint_interval": 100}
        r = node.post("/_replicate", body)
        self.assertEqual(r.status, 202, r)
        rep_id = r.json["_local_id"].split("+")[0]

        def checkpointed():  # on both sides (the source's is written first)
            logs = [node.get(f"/{db}/_local/{rep_id}") for db in ("ksrc", "ktgt")]
            return all(r.status == 200 and r.json["source_last_seq"] != 0 for r in logs)
        self.assertTrue(wait_until(checkpointed))
        node.kill()
        node.start()
        log = node.get(f"/ksrc/_local/{rep_id}").json
        written_before = node.get("/ktgt").json["doc_count"]
        self.assertLess(written_before, 3000)  # it was stopped part way
        r = node.post("/_replicate", body)
        self.assertEqual(r.status, 202, r)
        # ~3,000 one-document batches, each a commit on both sides: under a loaded machine (CI's other
        # tests beside it) this takes well over 30 s; waited for as a state, never slept.
        self.assertTrue(wait_until(lambda: node.get("/ktgt").json["doc_count"] == 3000, seconds=180))
        self.assertTrue(wait_until(lambda: len(node.get(f"/ksrc/_local/{rep_id}").json["history"]) == 2),
                        (log, node.get(f"/ksrc/_local/{rep_id}").json, node.get(f"/ktgt/_local/{rep_id}").json))
        newest = node.get(f"/ksrc/_local/{rep_id}").json["history"][0]
        self.assertEqual(newest["start_last_seq"], log["source_last_seq"])  # from the checkpoint, not 0
        # Figures count on from the checkpoint's, as CouchDB's: what this session read is the difference.
        previous = node.get(f"/ksrc/_local/{rep_id}").json["history"][1]
        self.assertLessEqual(newest["docs_read"] - previous["docs_read"], 3000 - written_before + 2)
        rows = node.get("/ktgt/_all_docs?conflicts=true&include_docs=true").json["rows"]
        self.assertFalse([row["id"] for row in rows if "_conflicts" in row["doc"]])
        node.post("/_replicate", dict(body, cancel=True))


class ReplicateWithAClock(ClockedNodeTest):
    def test_since_seq_as_a_time_is_exact_to_the_second(self):
        n = self.node
        self.assertEqual(n.put("/hist").status, 201)
        t = self.START
        for hour in range(5):  # one document an hour
            self.set_time(t + hour * 3600)
            self.assertEqual(n.put(f"/hist/h{hour}", {"hour": hour}).status, 201)
        self.set_time(t + 3 * 3600 + 1)  # one second after h3
        self.assertEqual(n.put("/hist/h3b", {}).status, 201)
        self.set_time(t + 5 * 3600)
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t + 3 * 3600 + 1))
        r = n.post("/_replicate", {"source": "hist", "target": "recent", "create_target": True, "since_seq": since})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(sorted(row["id"] for row in n.get("/recent/_all_docs").json["rows"]), ["h3b", "h4"])

    def test_a_replication_started_with_a_session_cookie_outlives_the_cookie(self):
        n = self.node
        self.set_time(self.START + 86400)
        self.assertEqual(n.put("/sess").status, 201)
        r = n.request("POST", "/_session", body={"name": n.admin[0], "password": n.admin[1]}, auth=False)
        self.assertEqual(r.status, 200, r)
        cookie = {"Cookie": r.header("set-cookie").split(";")[0]}
        r = n.request("POST", "/_replicate", body={"source": "sess", "target": "sesscopy", "create_target": True,
                                                   "continuous": True}, auth=False, headers=cookie)
        self.assertEqual(r.status, 202, r)
        rep_id = r.json["_local_id"]
        self.addCleanup(lambda: n.post("/_replicate", {"replication_id": rep_id, "cancel": True}))
        self.assertEqual(n.put("/sess/before", {}).status, 201)
        self.assertTrue(wait_until(lambda: n.get("/sesscopy/before").status == 200))
        # An hour later the cookie has expired (600 s); the replication signs in afresh and goes on.
        self.set_time(self.START + 86400 + 3600)
        self.assertIsNone(n.request("GET", "/_session", auth=False, headers=cookie).json["userCtx"]["name"])
        self.assertEqual(n.put("/sess/after", {}).status, 201)
        self.assertTrue(wait_until(lambda: n.get("/sesscopy/after").status == 200))
        job = n.get(f"/_scheduler/jobs/{urllib.parse.quote(rep_id)}").json
        self.assertIsNone(job["info"]["error"], job)


if __name__ == "__main__":
    main()
