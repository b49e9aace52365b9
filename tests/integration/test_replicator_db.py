"""Documents of `_replicator` (issue 33 point 3): a document starts its replication; a one-shot
one records its end in the document as CouchDB 3 does (`_replication_state` "completed" with
`_replication_stats`); a continuous one runs until the document is edited (restarted as the new
one) or deleted (stopped); documents that describe no replication are refused with CouchDB's 403
`forbidden`; two documents of one replication: the second fails, saying which started it; an
endpoint that cannot be opened makes the document's replication crash and retry, and
`/_scheduler/docs` shows every state with credentials stripped."""
import json
import urllib.parse

from harness import NodeTest, main, wait_until


class ReplicatorDocuments(NodeTest):
    def url(self, db):
        user = self.node.admin
        return f"http://{user[0]}:{urllib.parse.quote(user[1])}@127.0.0.1:{self.node.port}/{db}"

    def put_doc(self, doc_id, body, status=201):
        r = self.node.put(f"/_replicator/{doc_id}", body)
        self.assertEqual(r.status, status, r)
        return r.json

    def sched(self, doc_id):
        r = self.node.get(f"/_scheduler/docs/_replicator/{doc_id}")
        return r.json if r.status == 200 else None

    def fill(self, db, n, prefix="d"):
        r = self.node.post(f"/{db}/_bulk_docs", {"docs": [{"_id": f"{prefix}{i:03d}"} for i in range(n)]})
        self.assertEqual(r.status, 201, r)

    def test_a_one_shot_document_runs_once_and_records_its_end(self):
        self.new_db("rd1")
        self.fill("rd1", 25)
        self.put_doc("once", {"source": self.url("rd1"), "target": self.url("rd1copy"), "create_target": True})
        self.assertTrue(wait_until(lambda: self.node.get("/_replicator/once").json.get("_replication_state")
                                   == "completed"))
        doc = self.node.get("/_replicator/once").json
        self.assertEqual(doc["_replication_stats"]["docs_written"], 25)
        # couch_replicator_scheduler_job:rep_stats and the start time, as CouchDB records them.
        self.assertEqual(list(doc["_replication_stats"]), [
            "revisions_checked", "missing_revisions_found", "docs_read", "docs_written", "changes_pending",
            "doc_write_failures", "bulk_get_docs", "bulk_get_attempts", "checkpointed_source_seq", "start_time"])
        self.assertEqual(doc["_replication_stats"]["revisions_checked"], 25)
        self.assertRegex(doc["_replication_stats"]["start_time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertRegex(doc["_replication_state_time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertEqual(self.node.get("/rd1copy").json["doc_count"], 25)
        # An ended document answers from what it recorded (couch_replicator:info_from_doc): no job id,
        # the recorded stats as info, their start time apart.
        row = self.sched("once")
        self.assertEqual(list(row), ["doc_id", "database", "id", "source", "target", "state", "error_count", "info",
                                     "start_time", "last_updated"])
        self.assertEqual((row["state"], row["database"], row["doc_id"], row["id"]), ("completed", "_replicator", "once", None))
        self.assertEqual((row["info"]["docs_written"], row["start_time"], row["last_updated"]),
                         (25, doc["_replication_stats"]["start_time"], doc["_replication_state_time"]))
        self.assertNotIn("start_time", row["info"])
        self.assertEqual(row["source"], f"http://127.0.0.1:{self.node.port}/rd1/")
        self.assertEqual([d["doc_id"] for d in self.node.get("/_scheduler/docs?states=completed").json["docs"]],
                         ["once"])
        self.assertEqual(self.node.get("/_scheduler/docs?states=RUNNING,crashing").json["docs"], [])
        self.assertError(self.node.get("/_scheduler/docs?limit=-1"), 400, "query_parse_error",
                         'Invalid value for positive integer: "-1"')
        self.assertError(self.node.get("/_scheduler/jobs?skip=-2"), 400, "query_parse_error",
                         "skip not in range of [0,infinity]")
        self.assertError(self.node.get("/_scheduler/docs?states=done"), 400, "query_parse_error",
                         "Unknown states [done]. Choose from: [initializing,error,running,pending,crashing,completed,"
                         "failed]")
        self.assertNotIn(self.node.admin[1], str(self.node.get("/_scheduler/docs").json))
        # It does not run again: a write to the source stays there.
        self.fill("rd1", 1, prefix="late")
        self.assertFalse(wait_until(lambda: self.node.get("/rd1copy/late000").status == 200, seconds=2))

    def test_a_continuous_document_follows_edits_and_deletion(self):
        self.new_db("rd2")
        self.fill("rd2", 3)
        rev = self.put_doc("live", {"source": self.url("rd2"), "target": self.url("rd2a"), "create_target": True,
                                    "continuous": True})["rev"]
        # At once, before the processor took it: the document itself, state null (couch_replicator:doc).
        self.assertIn(self.sched("live")["state"], (None, "initializing", "pending", "running"))
        self.assertTrue(wait_until(lambda: (self.sched("live") or {}).get("state") == "running"))
        self.assertEqual(list(self.sched("live"))[-2:], ["source_proxy", "target_proxy"])  # a scheduled job's row
        self.node.put("/rd2/fresh", {})
        self.assertTrue(wait_until(lambda: self.node.get("/rd2a/fresh").status == 200))
        jobs = self.node.get("/_scheduler/jobs").json["jobs"]
        [job] = [j for j in jobs if j["doc_id"] == "live"]
        self.assertEqual(job["database"], "_replicator")
        # Edited: the new target gets everything, the old replication stops.
        rev = self.put_doc("live", {"_rev": rev, "source": self.url("rd2"), "target": self.url("rd2b"),
                                    "create_target": True, "continuous": True})["rev"]
        self.assertTrue(wait_until(lambda: self.node.get("/rd2b/fresh").status == 200))
        self.assertTrue(wait_until(lambda: [j["target"] for j in self.node.get("/_scheduler/jobs").json["jobs"]
                                            if j["doc_id"] == "live"] == [f"http://127.0.0.1:{self.node.port}/rd2b/"]))
        # Deleted: nothing runs any more.
        self.assertEqual(self.node.delete(f"/_replicator/live?rev={rev}").status, 200)
        self.assertTrue(wait_until(lambda: not [j for j in self.node.get("/_scheduler/jobs").json["jobs"]
                                                if j["doc_id"] == "live"]))
        self.assertIsNone(self.sched("live"))

    def test_documents_that_describe_no_replication_are_refused(self):
        for body in ({"source": "rd3", "target": self.url("x")},  # a local name: nothing would log it in
                     {"source": self.url("a"), "target": self.url("b"), "doc_ids": ["x"], "selector": {}},
                     {"source": "ftp://h/db", "target": self.url("b")},
                     {"target": self.url("b")}):
            r = self.node.put("/_replicator/bad", body)
            self.assertEqual((r.status, r.json["error"]), (403, "forbidden"), (body, r))
        # In _bulk_docs, per document (as CouchDB's validation function): the others are written.
        r = self.node.post("/_replicator/_bulk_docs", {"docs": [
            {"_id": "b1", "source": "x", "target": "y"},
            {"_id": "b2", "source": self.url("rd3"), "target": self.url("rd3copy"), "create_target": True}]})
        self.assertEqual(r.status, 201, r)
        self.assertEqual((r.json[0]["id"], r.json[0]["error"]), ("b1", "forbidden"), r)
        self.assertTrue(r.json[1]["ok"], r)
        self.assertEqual(self.node.get("/_replicator/b1").status, 404)
        self.assertEqual(self.node.delete(f"/_replicator/b2?rev={r.json[1]['rev']}").status, 200)
        r = self.node.post("/_replicator", {"source": "x", "target": "y"})
        self.assertEqual(r.status, 403, r)
        self.assertEqual(self.node.get("/_replicator/bad").status, 404)
        # Design documents and deletions are not replications, and pass.
        self.assertEqual(self.node.put("/_replicator/_design/mine", {"views": {}}).status, 201)

    def test_two_documents_of_one_replication_and_an_endpoint_that_is_not_there(self):
        self.new_db("rd4")
        body = {"source": self.url("rd4"), "target": self.url("rd4copy"), "create_target": True, "continuous": True}
        self.put_doc("first", body)
        self.assertTrue(wait_until(lambda: (self.sched("first") or {}).get("state") == "running"))
        self.put_doc("second", body)
        self.assertTrue(wait_until(lambda: self.node.get("/_replicator/second").json.get("_replication_state")
                                   == "failed"))
        reason = self.node.get("/_replicator/second").json["_replication_state_reason"]
        self.assertIn("already started, triggered by document `first`", reason)
        self.assertEqual(self.sched("second")["state"], "failed")
        # A source that does not exist: the document's replication crashes and retries (it stands
        # until edited), its error shown.
        self.put_doc("nowhere", {"source": self.url("rd4missing"), "target": self.url("rd4copy")})
        self.assertTrue(wait_until(lambda: (self.sched("nowhere") or {}).get("state") == "crashing"))
        self.assertIn("could not open", self.sched("nowhere")["info"]["error"])
        self.assertNotIn("_replication_state", self.node.get("/_replicator/nowhere").json)
        self.new_db("rd4missing")  # it appears: the next retry runs it to its end
        self.assertTrue(wait_until(lambda: self.node.get("/_replicator/nowhere").json.get("_replication_state")
                                   == "completed", seconds=60))

    def test_users_write_their_own_documents_and_read_others_without_credentials(self):
        for name in ("rbob", "reve"):
            self.assertEqual(self.node.put(f"/_users/org.couchdb.user:{name}", {
                "name": name, "password": name + "pw", "roles": [], "type": "user"}).status, 201)
        bob, eve = ("rbob", "rbobpw"), ("reve", "revepw")
        secret = {"source": "http://rbob:hunter2@127.0.0.1:1/a",
                  "target": {"url": "http://127.0.0.1:1/b", "headers": {"Authorization": "Basic c2VjcmV0"},
                             "auth": {"basic": {"username": "u", "password": "p"}}}}
        r = self.node.request("PUT", "/_replicator/bobs", body=secret, user=bob)
        self.assertEqual(r.status, 201, r)
        mine = self.node.request("GET", "/_replicator/bobs", user=bob).json
        self.assertEqual((mine["owner"], mine["source"], mine["target"]), ("rbob", secret["source"], secret["target"]))
        # Another user sees it without credentials (also as open_revs), and not as multipart.
        seen = self.node.request("GET", "/_replicator/bobs", user=eve).json
        self.assertEqual((seen["source"], seen["target"]), ("http://127.0.0.1:1/a", {"url": "http://127.0.0.1:1/b"}))
        leaves = self.node.request("GET", "/_replicator/bobs?open_revs=all", user=eve,
                                   headers={"Accept": "application/json"}).json
        self.assertNotIn("hunter2", json.dumps(leaves))
        self.assertEqual(self.node.request("GET", "/_replicator/bobs?open_revs=all", user=eve,
                                           headers={"Accept": "multipart/mixed"}).status, 403)
        # ... cannot change or delete it, nor write a document in another's name.
        refused = {"error": "forbidden", "reason": "Can't update replication documents from other users."}
        r = self.node.request("PUT", "/_replicator/bobs", body=dict(secret, _rev=mine["_rev"]), user=eve)
        self.assertEqual((r.status, r.json), (403, refused))
        r = self.node.request("DELETE", f"/_replicator/bobs?rev={mine['_rev']}", user=eve)
        self.assertEqual((r.status, r.json), (403, refused))
        r = self.node.request("PUT", "/_replicator/evil", body=dict(secret, owner="rbob"), user=eve)
        self.assertEqual((r.status, r.json), (403, refused))
        # Listings, feeds and bulk reads of _replicator are for server admins.
        for method, path, body in (("GET", "/_replicator/_all_docs?include_docs=true", None),
                                   ("GET", "/_replicator/_changes?include_docs=true", None),
                                   ("POST", "/_replicator/_bulk_get", {"docs": [{"id": "bobs"}]}),
                                   ("POST", "/_replicator/_bulk_docs", {"docs": [{"_id": "x"}]}),
                                   ("GET", "/_scheduler/docs", None)):
            r = self.node.request(method, path, body=body, user=eve)
            self.assertEqual(r.status, 403, (path, r))
            self.assertNotIn("hunter2", r.raw)
        # The server admin's own documents (no owner) are no user's to change.
        self.put_doc("admins", {"source": "http://admin:pw@127.0.0.1:1/a", "target": "http://127.0.0.1:1/b"})
        self.assertEqual(self.node.request("GET", "/_replicator/admins", user=eve).json["source"],
                         "http://127.0.0.1:1/a")
        r = self.node.request("DELETE", f"/_replicator/admins?rev={self.node.get('/_replicator/admins').json['_rev']}",
                              user=bob)
        self.assertEqual((r.status, r.json), (403, refused))
        # Their own: deleted by them.
        r = self.node.request("DELETE", f"/_replicator/bobs?rev={mine['_rev']}", user=bob)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.node.delete(f"/_replicator/admins?rev={self.node.get('/_replicator/admins').json['_rev']}")
                         .status, 200)

    def test_a_crashing_replication_backs_off_exponentially(self):
        self.put_doc("backoff", {"source": self.url("rd6missing"), "target": self.url("rd6copy")})
        self.addCleanup(lambda: self.node.delete(f"/_replicator/backoff?rev={self.node.get('/_replicator/backoff').json['_rev']}"))

        def crashes():
            job = [j for j in self.node.get("/_scheduler/jobs").json["jobs"] if j["doc_id"] == "backoff"]
            return sorted(h["timestamp"] for h in job[0]["history"] if h["type"] == "crashed") if job else []
        self.assertTrue(wait_until(lambda: len(crashes()) >= 4, 60))
        # The jobs framework's backoff: 1 s, then 2 s, then 4 s (each at least that, in whole seconds).
        t = crashes()
        gaps = [b - a for a, b in zip(t, t[1:])]
        self.assertGreaterEqual(gaps[1], 1, t)
        self.assertGreaterEqual(gaps[2], 3, t)
        self.assertEqual(self.sched("backoff")["state"], "crashing")
        self.assertGreaterEqual(self.sched("backoff")["error_count"], 4)


if __name__ == "__main__":
    main()
