"""PouchDB (npm pouchdb-core 9 with its http, memory and replication plugins) replicates with
settee as it does with CouchDB: settee -> PouchDB -> settee and settee -> settee on another node,
with attachments (inline, by name, larger than one 64 KiB chunk), conflicts, deletions, design and
_local documents, and checkpoints that make a second pull move nothing (issue 11 point 6)."""
import base64
import json
import os
import subprocess

from harness import CLIENTS_DIR, CLIENTS_SRC, install_clients, main, Node, NodeTest



def b64(data):
    return base64.b64encode(data).decode()


class PouchDBReplication(NodeTest):
    @classmethod
    def setUpClass(cls):
        install_clients()
        super().setUpClass()
        cls.other = Node().start()

    @classmethod
    def tearDownClass(cls):
        cls.other.cleanup()
        super().tearDownClass()

    def seed(self, n):
        self.assertEqual(n.put("/src").status, 201)
        for i in range(5):
            self.assertEqual(n.put(f"/src/plain-{i}", {"i": i}).status, 201)
        big = bytes(range(256)) * 400  # 102,400 bytes: two chunks in settee's blob store
        r = n.put("/src/att-1", {"kind": "inline", "_attachments": {
            "a.txt": {"content_type": "text/plain", "data": b64(b"hello pouch")},
            "dir/big.bin": {"content_type": "application/octet-stream", "data": b64(big)}}})
        self.assertEqual(r.status, 201, r)
        r = n.request("PUT", "/src/att-2/by-name.txt", raw_body=b"first", headers={"Content-Type": "text/plain"})
        r = n.request("PUT", f"/src/att-2/by-name.txt?rev={r.json['rev']}", raw_body=b"second",
                      headers={"Content-Type": "text/plain"})
        self.assertEqual(r.status, 201, r)
        # Two branches (a conflict) and a deleted document.
        for h in ("aaa", "bbb"):
            b = {"_id": "conflicted", "_rev": f"1-{h}", "side": h,
                 "_attachments": {"s.txt": {"content_type": "text/plain", "data": b64(h.encode())}}}
            self.assertEqual(n.post("/src/_bulk_docs", {"docs": [b], "new_edits": False}).status, 201)
        r = n.put("/src/gone", {"x": 1})
        self.assertEqual(n.delete(f"/src/gone?rev={r.json['rev']}").status, 200)
        self.assertEqual(n.put("/src/_design/app", {"language": "query", "views": {}}).status, 201)
        self.assertEqual(n.put("/src/_local/not-replicated", {"x": 1}).status, 201)
        return big

    def leaves(self, n, db, doc_id):
        r = n.get(f"/{db}/{doc_id}?open_revs=all&revs=true&attachments=true")
        self.assertEqual(r.status, 200, r)
        out = {}
        for row in r.json:
            doc = row["ok"]
            atts = {k: (v["digest"], base64.b64decode(v["data"])) for k, v in doc.get("_attachments", {}).items()}
            out[doc["_rev"]] = (doc.get("_deleted", False), doc["_revisions"], atts)
        return out

    def test_replication_through_pouchdb_and_between_nodes(self):
        a, b = self.node, self.other
        big = self.seed(a)
        self.assertEqual(a.put("/dst").status, 201)
        self.assertEqual(b.put("/direct").status, 201)
        user, password = a.admin
        env = dict(os.environ, NODE_PATH=os.path.join(CLIENTS_DIR, "node_modules"))
        run = subprocess.run(
            ["node", os.path.join(CLIENTS_SRC, "pouchdb_replicate.js"), f"http://127.0.0.1:{a.port}/src",
             f"http://127.0.0.1:{a.port}/dst", f"http://127.0.0.1:{b.port}/direct", user, password],
            capture_output=True, text=True, env=env, timeout=300)
        self.assertEqual(run.returncode, 0, run.stderr[-3000:])
        out = json.loads(run.stdout)
        ids = ["_design/app", "att-1", "att-2", "conflicted", "gone"] + [f"plain-{i}" for i in range(5)]

        # settee -> PouchDB: every leaf revision (the deleted document's and both of the conflict's),
        # attachments with their bytes.
        revisions = len(ids) + 1
        self.assertEqual(out["pull"], {"ok": True, "docs_read": revisions, "docs_written": revisions,
                                       "doc_write_failures": 0, "errors": []})
        pulled = out["pulled"]
        self.assertEqual(sorted(pulled), sorted(i for i in ids if i != "gone"))  # allDocs hides deletions
        self.assertEqual(base64.b64decode(pulled["att-1"]["_attachments"]["dir/big.bin"]["data"]), big)
        self.assertEqual(base64.b64decode(pulled["att-2"]["_attachments"]["by-name.txt"]["data"]), b"second")
        self.assertEqual(pulled["att-1"]["_rev"], a.get("/src/att-1").json["_rev"])
        self.assertEqual(pulled["conflicted"]["_rev"], "1-bbb")  # CouchDB's winner, PouchDB agrees
        self.assertEqual(pulled["conflicted"]["_conflicts"], ["1-aaa"])
        self.assertEqual(out["pull_again"]["docs_written"], 0)  # the checkpoint held

        # PouchDB -> settee: the source's history plus PouchDB's own edits.
        self.assertEqual(out["push"]["ok"], True, out["push"])
        self.assertEqual(out["push"]["doc_write_failures"], 0, out["push"])
        for doc_id in ids:
            if doc_id in ("att-1", "plain-2"):
                continue
            with self.subTest(doc=doc_id):
                self.assertEqual(self.leaves(a, "dst", doc_id), self.leaves(a, "src", doc_id))
        att1 = a.get("/dst/att-1").json
        self.assertEqual(sorted(att1["_attachments"]), ["a.txt", "dir/big.bin", "from-pouch.txt"])
        self.assertEqual(att1["_attachments"]["from-pouch.txt"]["revpos"], 2)
        self.assertEqual(a.get("/dst/att-1/from-pouch.txt").data, b"written by PouchDB")
        self.assertEqual(a.get("/dst/att-1/dir/big.bin").data, big)
        self.assertEqual(a.get("/dst/pouch-new/p.bin").data, bytes([0, 1, 2, 255]))
        self.assertEqual(a.get("/dst/plain-2").json["reason"], "deleted")
        self.assertEqual(out["att_via_http"], "written by PouchDB")
        self.assertEqual(base64.b64decode(out["doc_via_http"]["_attachments"]["p.bin"]["data"]), bytes([0, 1, 2, 255]))

        # settee -> settee on another node, through PouchDB's replicator: the same leaves, bytes and digests.
        self.assertEqual(out["direct"]["docs_written"], revisions, out["direct"])
        for doc_id in ids:
            with self.subTest(doc=doc_id):
                self.assertEqual(self.leaves(b, "direct", doc_id), self.leaves(a, "src", doc_id))
        self.assertEqual(b.get("/direct/_local/not-replicated").status, 404)


    def client(self, script, db):
        """What tests/clients/<script> printed (JSON) against database `db` of this node."""
        user, password = self.node.admin
        env = dict(os.environ, NODE_PATH=os.path.join(CLIENTS_DIR, "node_modules"))
        run = subprocess.run(["node", os.path.join(CLIENTS_SRC, script), f"http://127.0.0.1:{self.node.port}/{db}",
                              user, password], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr[-3000:])
        return json.loads(run.stdout)

    def test_filters_and_validate_doc_update_as_pouchdb_sees_them(self):
        """Issue 30: PouchDB's own checks of filters and validate_doc_update against a remote
        database (tests/clients/pouchdb_design.js)."""
        n = self.node
        self.assertEqual(n.put("/jsf").status, 201)
        ddoc = {"filters": {"even": "function(doc) { return doc.n % 2 === 0; }",
                            "byq": "function(doc, req) { return doc.n === Number(req.query.n); }"},
                "validate_doc_update": "function(d) { if (d.bad) throw({forbidden: 'bad documents are refused'});"
                                       " if (d.secret) throw({unauthorized: 'no secrets'}); }"}
        self.assertEqual(n.put("/jsf/_design/app", ddoc).status, 201)
        self.assertEqual(n.post("/jsf/_bulk_docs", {"docs": [{"_id": f"d{i}", "n": i} for i in range(10)]}).status, 201)
        out = self.client("pouchdb_design.js", "jsf")
        self.assertEqual(out["changes_even"], ["d0", "d2", "d4", "d6", "d8"])
        self.assertEqual(out["changes_query"], ["d3"])
        self.assertEqual(out["changes_missing"]["status"], 404, out["changes_missing"])
        self.assertEqual(out["live"], ["e-20", "e-last"])
        self.assertEqual(out["filtered_pull"]["ok"], True, out["filtered_pull"])
        self.assertEqual(out["pulled"], ["d0", "d2", "d4", "d6", "d8", "e-20", "e-last"])
        self.assertEqual(out["put_forbidden"], {"status": 403, "name": "forbidden", "message": "bad documents are refused"})
        self.assertEqual(out["put_unauthorized"], {"status": 401, "name": "unauthorized", "message": "no secrets"})
        self.assertEqual(out["bulk"][0], {"ok": True, "id": "bulk-ok"})
        # A _bulk_docs row carries no status: PouchDB's generateErrorFromResponse makes it 500, as
        # against CouchDB (only `conflict` rows become 409).
        self.assertEqual(out["bulk"][1], {"id": "bulk-bad", "status": 500, "name": "forbidden",
                                          "message": "bad documents are refused"})
        self.assertEqual(out["push"], {"ok": True, "docs_read": 2, "docs_written": 1, "doc_write_failures": 1})
        self.assertEqual(out["denied"], 1)
        self.assertEqual(out["push_ok"], 1)
        self.assertEqual(out["push_bad"]["status"], 404)

    def test_views_as_pouchdbs_query_sees_them(self):
        """Issue 31: PouchDB's query() (pouchdb-mapreduce) against settee answers the rows its own
        memory database answers for the same documents and design document
        (tests/clients/pouchdb_views.js): collation, ranges, keys, skip/limit, include_docs, the
        built-in reduces and a JavaScript one, grouped every way."""
        n = self.node
        self.assertEqual(n.put("/pviews?q=4").status, 201)
        out = self.client("pouchdb_views.js", "pviews")
        self.assertEqual(len(out["results"]), 24)
        for entry in out["results"]:
            with self.subTest(view=entry["view"], opts=entry["opts"]):
                self.assertIsInstance(entry["settee"], list, entry["settee"])
                self.assertTrue(entry["settee"], entry)  # every query answers rows
                self.assertEqual(entry["settee"], entry["pouchdb"])
        self.assertEqual(out["results"][0]["settee_total_rows"], 22)
        self.assertEqual(out["missing"], {"status": 404, "name": "not_found"})

    def test_find_as_pouchdb_find_sees_it(self):
        """Issue 32: PouchDB's find() (pouchdb-find) against settee answers the documents its own
        memory database answers for the same selectors (tests/clients/pouchdb_find.js):
        operators, fields, skip/limit, a sort on _id; getIndexes() lists the _all_docs index,
        explain() shows it, and a sort no index serves is mango's 400. Then createIndex() makes
        JSON indexes on both: sorted and ranged queries answer alike; getIndexes(), explain()
        and deleteIndex() answer as CouchDB's."""
        n = self.node
        self.assertEqual(n.put("/pfind?q=4").status, 201)
        out = self.client("pouchdb_find.js", "pfind")
        self.assertEqual(len(out["results"]), 16)
        for entry in out["results"]:
            with self.subTest(query=entry["query"]):
                self.assertIsInstance(entry["settee"], list, entry["settee"])
                self.assertTrue(entry["settee"], entry)  # every query finds documents
                self.assertEqual(entry["settee"], entry["pouchdb"])
                # (a second line when many documents were examined per result, as CouchDB's)
                self.assertEqual(entry["warning"].split("\n")[0],
                                 "No matching index found, create an index to optimize query time.")
        self.assertEqual(out["indexes"]["indexes"], [{"ddoc": None, "name": "_all_docs", "type": "special",
                                                      "def": {"fields": [{"_id": "asc"}]}}])
        self.assertEqual(out["explain"]["index"]["name"], "_all_docs")
        self.assertEqual(out["sort_error"], {"status": 400, "error": "no_usable_index",
                                             "reason": "No index exists for this sort, try indexing by the sort fields."})
        # JSON indexes made through createIndex(): the same documents as PouchDB's own, in order.
        self.assertEqual(out["created"], [{"result": "created", "id": "_design/by-n", "name": "n"},
                                          {"result": "created", "id": "_design/by-type", "name": "type-n"}])
        self.assertEqual(out["created_again"], {"result": "exists", "id": "_design/by-n", "name": "n"})
        self.assertEqual(len(out["indexed"]), 7)
        for entry in out["indexed"]:
            with self.subTest(query=entry["query"]):
                self.assertIsInstance(entry["settee"], list, entry["settee"])
                self.assertTrue(entry["settee"], entry)
                self.assertEqual(entry["settee"], entry["pouchdb"])
                self.assertIsNone(entry.get("warning"))
        self.assertEqual([(i["ddoc"], i["name"]) for i in out["indexes_after"]["indexes"]],
                         [(None, "_all_docs"), ("_design/by-n", "n"), ("_design/by-type", "type-n")])
        self.assertEqual((out["explain_indexed"]["index"]["name"], out["explain_indexed"]["mrargs"]["start_key"]),
                         ("type-n", ["x", 3]))
        self.assertEqual(out["deleted"], {"ok": True})
        self.assertEqual([i["name"] for i in out["indexes_last"]["indexes"]], ["_all_docs", "type-n"])


if __name__ == "__main__":
    main()
