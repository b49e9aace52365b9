"""JavaScript in design documents (issue 30): functions compiled when a design document is saved,
in the sandboxed settee-js workers the node starts beside itself."""
import json
import os
import subprocess
import time

from harness import NodeTest, main


def worker_pids():
    out = subprocess.run(["pgrep", "-f", "settee-js --timeout-ms"], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


class CompileOnSave(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        assert cls.node.put("/js").status == 201

    def test_a_syntax_error_is_400_compilation_error_with_couchdbs_prefix(self):
        r = self.node.put("/js/_design/bad", {"views": {"v": {"map": "function(doc) { emit(doc._id "}}})
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["error"], "compilation_error")
        self.assertTrue(r.json["reason"].startswith("Compilation of the map function in the 'v' view failed: SyntaxError"),
                        r.json["reason"])
        self.assertTrue(r.json["reason"].endswith("(function(doc) { emit(doc._id )"), r.json["reason"])
        self.assertEqual(self.node.get("/js/_design/bad").status, 404)  # nothing was stored

    def test_sources_couchjs_takes_besides_an_expression(self):
        """Issue 51 point 0: a trailing `;`, statements before the function, a comment after it
        (PouchDB databases hold such design documents; CouchDB's couchjs takes them)."""
        self.assertEqual(self.node.put("/js-forms").status, 201)
        ddoc = {"views": {"semi": {"map": "function (doc) { emit(doc._id) };"},
                          "stmts": {"map": "var k = 'x';\nfunction(doc) { emit(k + doc._id, 1); }\n// done"},
                          "sum": {"map": "function(doc) { emit(doc._id, 2); };", "reduce": "function(k, v) { return sum(v); };"}},
                "validate_doc_update": "function(newDoc) { if (newDoc.no) throw({forbidden: 'no'}); };"}
        r = self.node.put("/js-forms/_design/f", ddoc)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(self.node.put("/js-forms/a", {"v": 1}).status, 201)
        self.assertError(self.node.put("/js-forms/b", {"no": True}), 403, "forbidden", "no")
        self.assertEqual([row["key"] for row in self.node.get("/js-forms/_design/f/_view/semi").json["rows"]], ["a"])
        self.assertEqual([row["key"] for row in self.node.get("/js-forms/_design/f/_view/stmts").json["rows"]], ["xa"])
        self.assertEqual(self.node.get("/js-forms/_design/f/_view/sum").json["rows"], [{"key": None, "value": 2}])

    def test_a_source_that_is_no_function_is_couchdbs_text(self):
        r = self.node.put("/js/_design/nofun", {"views": {"view": {"map": "// Invalid function"}}})
        self.assertError(r, 400, "compilation_error",
                         "Compilation of the map function in the 'view' view failed: "
                         "Expression does not eval to a function. (// Invalid function)")

    def test_reduces_and_vdus_are_compiled_on_save_filters_and_updates_when_called(self):
        bad = {"views": {"v": {"map": "function(doc){ emit(1, 1) }", "reduce": "function(k, v) { return sum(v) "}}}
        r = self.node.put("/js/_design/r", bad)
        self.assertEqual(r.status, 400)
        self.assertIn("Compilation of the reduce function in the 'v' view failed", r.json["reason"])
        r = self.node.put("/js/_design/vdu", {"validate_doc_update": "function(newDoc) { if ( "})
        self.assertEqual(r.status, 400)  # settee: CouchDB stores it and then refuses every write
        self.assertIn("Compilation of the validate_doc_update function failed", r.json["reason"])
        # Filters and update functions are stored as CouchDB stores them (issue 51 point 6: PouchDB
        # and couchapp tools hold such design documents) and fail when called.
        r = self.node.put("/js/_design/f", {"filters": {"f": "function(doc, req) { return doc.x "}})
        self.assertEqual(r.status, 201, r)
        r = self.node.get("/js/_changes?filter=f/f")
        self.assertEqual((r.status, r.json["error"]), (400, "compilation_error"))
        self.assertIn("Compilation of the filter 'f' function failed", r.json["reason"])
        r = self.node.put("/js/_design/u", {"updates": {"u": "function(doc, req) { return [doc, 'x' "}})
        self.assertEqual(r.status, 201, r)
        r = self.node.post("/js/_design/u/_update/u")
        self.assertEqual((r.status, r.json["error"]), (400, "compilation_error"))
        self.assertIn("Compilation of the update 'u' function failed", r.json["reason"])
        good = {"views": {"v": {"map": "function(doc){ emit(doc._id, 1) }", "reduce": "_sum"},
                          "w": {"map": "(doc) => { if (doc.t) emit(doc.t, null); } // arrow, trailing comment"}},
                "filters": {"f": "function(doc, req) { return doc.type === req.query.type; }"},
                "updates": {"u": "function(doc, req) { return [doc, 'ok']; }"}}
        self.assertEqual(self.node.put("/js/_design/good", good).status, 201)

    def test_a_function_that_runs_at_compile_time_cannot_hang_the_save(self):
        t0 = time.time()
        hang = "(function(){ while(true){} })(), function(doc){}"
        r = self.node.put("/js/_design/hang", {"views": {"v": {"map": hang}}})
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["error"], "compilation_error")
        self.assertLess(time.time() - t0, 30)
        good = {"views": {"v": {"map": "function(doc){ emit(1, 1) }"}}}
        self.assertEqual(self.node.put("/js/_design/after", good).status, 201)

    def test_bulk_docs_refuses_the_one_design_document_that_does_not_compile(self):
        r = self.node.post("/js/_bulk_docs", {"docs": [
            {"_id": "plain"},
            {"_id": "_design/broken", "views": {"v": {"map": "function( {"}}},
            {"_id": "_design/fine", "views": {"v": {"map": "function(doc) { emit(1, 1) }"}}},
        ]})
        self.assertEqual(r.status, 201)
        rows = r.json
        self.assertIn("rev", rows[0])
        self.assertEqual(rows[1]["error"], "compilation_error")
        self.assertIn("rev", rows[2])

    def test_other_languages_and_documents_without_functions_are_not_sent(self):
        mango = {"language": "query", "views": {"i": {"map": {"fields": {"a": "asc"}}, "reduce": "_count",
                                                      "options": {"def": {"fields": ["a"]}}}}}
        self.assertEqual(self.node.put("/js/_design/mango", mango).status, 201)
        self.assertEqual(self.node.put("/js/_design/plain", {"note": "no functions"}).status, 201)

    def test_show_list_and_rewrite_functions_are_501_naming_the_deprecation(self):
        for what, name in (("_show", "show"), ("_list", "list"), ("_rewrite", "rewrite")):
            r = self.node.get(f"/js/_design/good/{what}/x")
            self.assertEqual(r.status, 501)
            self.assertEqual(r.json["error"], "not_implemented")
            self.assertTrue(r.json["reason"].startswith(f"{name} functions are deprecated since CouchDB 3.0"), r.json)

    def test_workers_are_children_of_the_node_and_go_with_it(self):
        self.assertEqual(self.node.put("/js/_design/w", {"filters": {"f": "function(doc){ return 1 }"}}).status, 201)
        mine = {p for p in worker_pids() if os.path.exists(f"/proc/{p}/stat") and
                open(f"/proc/{p}/stat").read().split(")")[1].split()[1] == str(self.node.proc.pid)}
        self.assertGreaterEqual(len(mine), 1)
        for p in mine:
            env = open(f"/proc/{p}/environ", "rb").read()
            self.assertEqual(env, b"", "a worker gets no environment")
            fds = os.listdir(f"/proc/{p}/fd")
            self.assertLessEqual(len(fds), 4, f"a worker holds nothing of the node's but its pipes: {fds}")


VDU = """function(newDoc, oldDoc, userCtx, secObj) {
  if (newDoc._deleted) {
    if (oldDoc && oldDoc.locked) throw({forbidden: 'locked documents stay'});
    return;
  }
  if (newDoc.forbid) throw({forbidden: 'forbidden: ' + newDoc._id});
  if (newDoc.needs_role && userCtx.roles.indexOf(newDoc.needs_role) < 0) throw({unauthorized: 'needs ' + newDoc.needs_role});
  if (newDoc.type_error) return newDoc.nothing.here;
  if (newDoc.other) throw({other: 'something else'});
  if (newDoc.str) throw('a string');
  if (newDoc.check_old && (!oldDoc || oldDoc.v !== newDoc.v - 1)) throw({forbidden: 'v must grow by one'});
  if (newDoc.echo) throw({forbidden: JSON.stringify({n: newDoc, o: oldDoc, u: userCtx, s: secObj})});
}"""


class ValidateDocUpdate(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        assert cls.node.put("/vdu").status == 201
        assert cls.node.put("/vdu/_design/guard", {"validate_doc_update": VDU}).status == 201

    def test_put_post_delete_and_their_answers(self):
        n = self.node
        self.assertError(n.put("/vdu/a", {"forbid": True}), 403, "forbidden", "forbidden: a")
        self.assertEqual(n.get("/vdu/a").status, 404)
        self.assertError(n.put("/vdu/b", {"needs_role": "editor"}), 401, "unauthorized", "needs editor")
        self.assertError(n.post("/vdu", {"_id": "c", "forbid": 1}), 403, "forbidden", "forbidden: c")
        self.assertError(n.put("/vdu/o", {"other": 1}), 500, "unknown_error", "something else")
        self.assertError(n.put("/vdu/s", {"str": 1}), 500, "unknown_error", "a string")
        r = n.put("/vdu/t", {"type_error": 1})
        self.assertEqual(r.status, 500)
        self.assertIn("TypeError", r.json["reason"])
        r = n.put("/vdu/locked", {"locked": True})
        self.assertEqual(r.status, 201)
        self.assertError(n.delete(f"/vdu/locked?rev={r.json['rev']}"), 403, "forbidden", "locked documents stay")
        self.assertEqual(n.get("/vdu/locked").status, 200)
        fine = n.put("/vdu/fine", {"x": 1})
        self.assertEqual(fine.status, 201)
        self.assertEqual(n.delete(f"/vdu/fine?rev={fine.json['rev']}").status, 200)

    def test_arguments_are_couchdbs(self):
        n = self.node
        self.assertEqual(n.put("/vdu/_security", {"members": {"roles": ["readers"]}, "admins": {"names": ["boss"]}}).status, 200)
        first = n.put("/vdu/args", {"v": 1})
        r = n.put("/vdu/args", {"_rev": first.json["rev"], "v": 2, "echo": True})
        self.assertEqual(r.status, 403)
        seen = json.loads(r.json["reason"])
        self.assertEqual(seen["n"]["_id"], "args")
        self.assertEqual(seen["n"]["_rev"], first.json["rev"])  # the revision edited, as CouchDB before new_revs
        self.assertEqual(seen["n"]["_revisions"], {"start": 1, "ids": [first.json["rev"].split("-")[1]]})
        self.assertEqual(seen["n"]["v"], 2)
        self.assertEqual(seen["o"]["_id"], "args")
        self.assertEqual(seen["o"]["_rev"], first.json["rev"])
        self.assertEqual(seen["o"]["v"], 1)
        self.assertEqual(seen["u"]["db"], "vdu")
        self.assertEqual(seen["u"]["name"], self.node.admin_name if hasattr(self.node, "admin_name") else seen["u"]["name"])
        self.assertIn("_admin", seen["u"]["roles"])
        self.assertEqual(seen["s"], {"members": {"roles": ["readers"]}, "admins": {"names": ["boss"]}})
        # oldDoc is null for a new document
        r = n.put("/vdu/newone", {"echo": True})
        self.assertIsNone(json.loads(r.json["reason"])["o"])
        self.assertNotIn("_rev", json.loads(r.json["reason"])["n"])

    def test_old_doc_is_the_revision_the_edit_names(self):
        n = self.node
        r1 = n.put("/vdu/grow", {"v": 1})
        self.assertEqual(n.put("/vdu/grow", {"_rev": r1.json["rev"], "v": 2, "check_old": True}).status, 201)
        self.assertError(n.put("/vdu/grow", {"_rev": n.get("/vdu/grow").json["_rev"], "v": 5, "check_old": True}),
                         403, "forbidden", "v must grow by one")

    def test_bulk_docs_each_refusal_is_its_own_row_the_others_commit(self):
        r = self.node.post("/vdu/_bulk_docs", {"docs": [
            {"_id": "b1"}, {"_id": "b2", "forbid": 1}, {"_id": "b3"}, {"_id": "b4", "needs_role": "x"}]})
        self.assertEqual(r.status, 201)
        self.assertTrue(r.json[0]["ok"])
        self.assertEqual(r.json[1], {"id": "b2", "error": "forbidden", "reason": "forbidden: b2"})
        self.assertTrue(r.json[2]["ok"])
        self.assertEqual(r.json[3], {"id": "b4", "error": "unauthorized", "reason": "needs x"})
        self.assertEqual(self.node.get("/vdu/b2").status, 404)
        self.assertEqual(self.node.get("/vdu/b3").status, 200)

    def test_replicated_writes_are_validated_too(self):
        r = self.node.post("/vdu/_bulk_docs", {"new_edits": False, "docs": [
            {"_id": "rep1", "_rev": "1-aaa", "forbid": 1}, {"_id": "rep2", "_rev": "1-bbb"}]})
        self.assertEqual(r.status, 201)
        self.assertEqual(r.json, [{"id": "rep1", "error": "forbidden", "reason": "forbidden: rep1"}])
        self.assertEqual(self.node.get("/vdu/rep1").status, 404)
        self.assertEqual(self.node.get("/vdu/rep2").status, 200)

    def test_attachments_multipart_and_local_documents(self):
        n = self.node
        r = n.request("PUT", "/vdu/att/file.txt", raw_body="hi", headers={"Content-Type": "text/plain"})
        self.assertEqual(r.status, 201)  # a new document with an attachment passes this function
        self.assertEqual(n.put("/vdu/_local/x", {"forbid": True}).status, 201)  # never validated
        # An attachment written to a document the function guards: it sees the document as it
        # would become (locked: its deletion, and only that, is refused).
        locked = n.put("/vdu/latt", {"locked": True})
        r = n.request("PUT", f"/vdu/latt/a.txt?rev={locked.json['rev']}", raw_body="x", headers={"Content-Type": "text/plain"})
        self.assertEqual(r.status, 201)
        r = n.request("DELETE", f"/vdu/latt/a.txt?rev={r.json['rev']}")
        self.assertEqual(r.status, 200)  # removing an attachment is an edit, not a deletion
        forbidden = {"_id": "mp", "forbid": True, "_attachments": {"f.txt": {"follows": True, "content_type": "text/plain",
                                                                             "length": 2}}}
        body = (b"--xyz\r\nContent-Type: application/json\r\n\r\n" + json.dumps(forbidden).encode() +
                b"\r\n--xyz\r\nContent-Disposition: attachment; filename=\"f.txt\"\r\nContent-Length: 2\r\n\r\nhi"
                b"\r\n--xyz--")
        r = n.request("PUT", "/vdu/mp", raw_body=body, headers={"Content-Type": 'multipart/related; boundary="xyz"'})
        self.assertError(r, 403, "forbidden", "forbidden: mp")
        self.assertEqual(n.get("/vdu/mp").status, 404)

    def test_a_new_function_takes_effect_at_once_and_a_removed_one_stops(self):
        n = self.node
        self.assertEqual(n.put("/vdu2").status, 201)
        self.assertEqual(n.put("/vdu2/d1", {"n": 1}).status, 201)
        r = n.put("/vdu2/_design/x", {"validate_doc_update": "function(d){ if (d.n) throw({forbidden:'no n'}); }"})
        self.assertEqual(r.status, 201)
        self.assertError(n.put("/vdu2/d2", {"n": 1}), 403, "forbidden", "no n")
        r2 = n.put("/vdu2/_design/x", {"_rev": r.json["rev"],
                                       "validate_doc_update": "function(d){ if (d.m) throw({forbidden:'no m'}); }"})
        self.assertEqual(r2.status, 201)
        self.assertEqual(n.put("/vdu2/d2", {"n": 1}).status, 201)
        self.assertError(n.put("/vdu2/d3", {"m": 1}), 403, "forbidden", "no m")
        self.assertEqual(n.delete(f"/vdu2/_design/x?rev={r2.json['rev']}").status, 200)
        self.assertEqual(n.put("/vdu2/d3", {"m": 1}).status, 201)

    def test_only_design_documents_guard_writes(self):
        # A normal document with a validate_doc_update member is data: the functions are read from
        # the _design/ range only (once, a bad key range read every document, with its body, on
        # every cache refresh of every writer).
        n = self.node
        self.assertEqual(n.put("/vdu5").status, 201)
        refuse = "function(d){ throw({forbidden:'data is not code'}); }"
        for doc_id in ("A", "a", "zz"):  # before and after _design/ in id order
            self.assertEqual(n.put(f"/vdu5/{doc_id}", {"validate_doc_update": refuse}).status, 201)
        self.assertEqual(n.put("/vdu5/after", {"n": 1}).status, 201)
        guard = "function(d){ if (d.bad) throw({forbidden:'bad'}); }"
        self.assertEqual(n.put("/vdu5/_design/g", {"validate_doc_update": guard}).status, 201)
        self.assertEqual(n.put("/vdu5/after2", {"n": 1}).status, 201)
        self.assertError(n.put("/vdu5/after3", {"bad": 1}), 403, "forbidden", "bad")

    def test_a_hostile_validation_function_fails_writes_but_never_the_node(self):
        n = self.node
        self.assertEqual(n.put("/vdu3").status, 201)
        self.assertEqual(n.put("/vdu3/_design/h", {"validate_doc_update": "function(d){ if (d.spin) while(true){} }"}).status, 201)
        t0 = time.time()
        r = n.put("/vdu3/x", {"spin": 1})
        self.assertEqual(r.status, 500)
        self.assertEqual(r.json["error"], "timeout")
        self.assertLess(time.time() - t0, 20)
        self.assertEqual(n.put("/vdu3/y", {"ok": 1}).status, 201)
        self.assertEqual(n.get("/").status, 200)

    def test_a_reduce_that_never_returns_fails_its_queries_not_the_index(self):
        """The blocks' JavaScript partials are made as the index updates: a reduce that loops
        keeps none (one timeout), the map rows answer, the reduce query is 500 timeout."""
        n = self.node
        self.assertEqual(n.put("/spinreduce").status, 201)
        self.assertEqual(n.post("/spinreduce/_bulk_docs", {"docs": [{"i": i} for i in range(1500)]}).status, 201)
        ddoc = {"views": {"v": {"map": "function(d) { emit(d.i, 1); }", "reduce": "function(k, v) { while (true) {} }"}}}
        self.assertEqual(n.put("/spinreduce/_design/s", ddoc).status, 201)
        t0 = time.time()
        r = n.get("/spinreduce/_design/s/_view/v?reduce=false&limit=2")
        self.assertEqual(r.status, 200, r.json)
        self.assertEqual(r.json["total_rows"], 1500)
        self.assertLess(time.time() - t0, 30)
        r = n.get("/spinreduce/_design/s/_view/v?group=true&limit=1")
        self.assertEqual((r.status, r.json["error"]), (500, "timeout"))
        self.assertEqual(n.put("/spinreduce/after", {"i": 1}).status, 201)
        rows = n.get("/spinreduce/_design/s/_view/v?reduce=false&key=1").json["rows"]
        self.assertIn("after", [row["id"] for row in rows])




class UpdateHandlers(NodeTest):
    """POST|PUT /db/_design/d/_update/name[/docid], as chttpd_show and render.js runUpdate."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        n = cls.node
        assert n.put("/upd").status == 201
        updates = {
            "bump": "function(doc, req) {"
                    "  if (!doc) { if (req.id) return [{_id: req.id, n: 1}, 'created ' + req.id];"
                    "              return [null, {code: 400, json: {error: 'need an id'}}]; }"
                    "  doc.n += 1; doc.by = req.form.by || req.query.by || null;"
                    "  return [doc, {headers: {'X-Mine': 'yes', 'Content-Type': 'text/plain', 'X-Couch-Id': 'spoof'},"
                    "                body: 'n=' + doc.n}]; }",
            "echo": "function(doc, req) { return [null, {json: {doc: doc, id: req.id, uuid: req.uuid.length,"
                    " form: req.form, cookie: req.cookie, method: req.method, body: req.body, query: req.query,"
                    " path: req.path, user: req.userCtx.roles, sec: req.secObj, db: req.info.db_name}}]; }",
            "named": "function(doc, req) { throw(['error', 'not_found', 'nope']); }",
            "obj": "function(doc, req) { throw({error: 'teapot_error', reason: 'short and stout'}); }",
            "type": "function(doc, req) { return null.x; }",
            "noresp": "function(doc, req) { return [null, 42]; }",
            "split": "function(doc, req) { return [null, {headers: {'X-A': 'b\\r\\nX-Evil: 1'}, body: 'x'}]; }",
            "framing": "function(doc, req) { return [null, {headers: {'Content-Length': '1', 'Connection': 'close'},"
                       " body: 'four'}]; }",
            "b64": "function(doc, req) { return [null, {base64: 'aGVsbG8=', code: 202}]; }",
            "noid": "function(doc, req) { return [{n: 1}, 'x']; }",
            "design": "function(doc, req) { return [{_id: '_design/other'}, 'x']; }",
            "spin": "function(doc, req) { while (true) {} }",
            "peer": "function(doc, req) { return [null, req.peer]; }",
        }
        vdu = "function(d) { if (d.n > 3) throw({forbidden: 'too big'}); }"
        assert n.put("/upd/_design/app", {"updates": updates, "validate_doc_update": vdu}).status == 201

    def test_create_update_and_the_headers_couchdb_adds(self):
        n = self.node
        r = n.post("/upd/_design/app/_update/bump")
        self.assertEqual((r.status, r.json), (400, {"error": "need an id"}))
        r = n.put("/upd/_design/app/_update/bump/d1")
        self.assertEqual(r.status, 201)
        self.assertEqual(r.raw, "created d1")
        self.assertEqual(r.headers["content-type"], "text/html; charset=utf-8")
        self.assertEqual(r.headers["x-couch-id"], "d1")
        rev1 = r.headers["x-couch-update-newrev"]
        self.assertEqual(n.get("/upd/d1").json, {"_id": "d1", "_rev": rev1, "n": 1})
        r = n.request("PUT", "/upd/_design/app/_update/bump/d1?by=q", raw_body=b"by=form%20x",
                      headers={"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual((r.status, r.raw), (201, "n=2"))
        self.assertEqual(r.headers["content-type"], "text/plain")
        self.assertEqual(r.headers["x-mine"], "yes")
        self.assertEqual(r.headers["x-couch-id"], "d1")  # CouchDB's replaces the function's
        doc = n.get("/upd/d1").json
        self.assertEqual((doc["n"], doc["by"], doc["_rev"]), (2, "form x", r.headers["x-couch-update-newrev"]))
        self.assertEqual(n.post("/upd/_design/app/_update/bump/d1?by=q").status, 201)
        self.assertEqual(n.get("/upd/d1").json["by"], "q")

    def test_the_written_document_passes_validate_doc_update_and_conflicts_as_a_put(self):
        n = self.node
        self.assertEqual(n.put("/upd/v1", {"n": 3}).status, 201)
        self.assertError(n.post("/upd/_design/app/_update/bump/v1"), 403, "forbidden", "too big")
        self.assertEqual(n.get("/upd/v1").json["n"], 3)
        r = n.post("/upd/_design/app/_update/noid")
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["error"], "illegal_docid")

    def test_the_arguments_are_couchdbs(self):
        n = self.node
        self.assertEqual(n.put("/upd/e1", {"a": 1}).status, 201)
        self.assertEqual(n.put("/upd/_security", {"members": {"roles": ["_admin"]}, "admins": {"names": ["x"]}}).status, 200)
        r = n.request("POST", "/upd/_design/app/_update/echo/e1?k=v", raw_body=b"plain",
                      headers={"Content-Type": "text/plain", "Cookie": "a=1; b=two"})
        self.assertEqual(r.status, 200)
        self.assertEqual(r.headers["content-type"], "application/json")
        j = r.json
        self.assertEqual(j["doc"]["_id"], "e1")
        self.assertEqual(j["doc"]["_revisions"]["start"], 1)  # with its history, as couch_query_servers:json_doc
        self.assertEqual((j["id"], j["uuid"], j["method"], j["body"], j["query"]), ("e1", 32, "POST", "plain", {"k": "v"}))
        self.assertEqual((j["form"], j["cookie"]), ({}, {"a": "1", "b": "two"}))
        self.assertEqual(j["path"], ["upd", "_design", "app", "_update", "echo", "e1"])
        self.assertIn("_admin", j["user"])
        self.assertEqual(j["sec"]["admins"], {"names": ["x"]})
        self.assertEqual(j["db"], "upd")
        # A document that does not exist (or is deleted) is null, and req.id still names it.
        j = n.post("/upd/_design/app/_update/echo/missing/with/slash").json
        self.assertEqual((j["doc"], j["id"]), (None, "missing/with/slash"))
        j = n.post("/upd/_design/app/_update/echo").json
        self.assertEqual((j["doc"], j["id"]), (None, None))

    def test_errors_as_couchdb_gives_them(self):
        n = self.node
        self.assertError(n.post("/upd/_design/app/_update/named"), 404, "not_found", "nope")
        r = n.post("/upd/_design/app/_update/obj")
        self.assertEqual((r.status, r.json), (500, {"error": "teapot_error", "reason": "short and stout"}))
        r = n.post("/upd/_design/app/_update/type")
        self.assertEqual((r.status, r.json["error"]), (500, "render_error"))
        self.assertIn("TypeError", r.json["reason"])
        self.assertError(n.post("/upd/_design/app/_update/noresp"), 500, "render_error",
                         "undefined response from update function")
        self.assertError(n.post("/upd/_design/app/_update/nothere"), 404, "not_found", "missing json key: nothere")
        self.assertError(n.post("/upd/_design/none/_update/x"), 404, "not_found", "missing")
        self.assertError(n.post("/upd/_design/app/_update"), 404, "update_error", "Invalid path.")
        r = n.get("/upd/_design/app/_update/bump/d9")
        self.assertEqual((r.status, r.headers.get("allow")), (405, "POST,PUT,DELETE"))
        self.assertEqual(n.get("/upd/d9").status, 404)  # a GET never runs the function
        # DELETE runs it, as chttpd_show (issue 51 point 5); req.peer is the address alone.
        r = n.delete("/upd/_design/app/_update/echo/e9")
        self.assertEqual((r.status, r.json["method"], r.json["id"]), (200, "DELETE", "e9"))
        peer = n.post("/upd/_design/app/_update/peer").raw
        self.assertEqual(peer, "127.0.0.1")
        r = n.post("/upd/_design/app/_update/design")
        self.assertEqual(r.status, 201)  # the server admin may; a member could not (authorize_doc_write)

    def test_the_response_object_cannot_break_the_http_response(self):
        n = self.node
        r = n.post("/upd/_design/app/_update/split")
        self.assertEqual((r.status, r.json["error"]), (500, "external_response_error"))
        self.assertNotIn("x-evil", r.headers)
        r = n.post("/upd/_design/app/_update/framing")
        self.assertEqual((r.status, r.raw), (200, "four"))
        r = n.post("/upd/_design/app/_update/b64")
        self.assertEqual((r.status, r.raw, r.headers["content-type"]), (202, "hello", "application/binary"))
        t0 = time.time()
        r = n.post("/upd/_design/app/_update/spin")
        self.assertEqual((r.status, r.json["error"]), (500, "timeout"))
        self.assertLess(time.time() - t0, 20)
        self.assertEqual(n.post("/upd/_design/app/_update/b64").status, 202)


class Filters(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        n = cls.node
        assert n.put("/flt?q=4").status == 201
        ddoc = {"filters": {"byType": "function(doc, req) { return doc.type === req.query.type; }",
                            "mine": "function(doc, req) { return doc.owner === req.userCtx.name && req.method === 'GET' "
                                    "&& req.info.db_name === 'flt'; }",
                            "boom": "function(doc) { return doc.a.b === 1; }",
                            "deleted": "function(doc) { return doc._deleted === true; }"},
                "views": {"big": {"map": "function(doc) { if (doc.n > 50) emit(doc.n, null); }"}}}
        assert n.put("/flt/_design/app", ddoc).status == 201
        docs = [{"_id": f"d{i:03d}", "type": "x" if i % 3 == 0 else "y", "n": i, "owner": n.admin_name if hasattr(n, "admin_name") else "admin"}
                for i in range(100)]
        docs[7]["a"] = {"b": 1}
        assert n.post("/flt/_bulk_docs", {"docs": docs}).status == 201

    def ids(self, query, feed="normal"):
        r = self.node.get(f"/flt/_changes?feed={feed}&timeout=200&{query}")
        self.assertEqual(r.status, 200, r.raw[:300] if hasattr(r, "raw") else r.status)
        if feed == "continuous":
            rows = [json.loads(line) for line in r.raw.splitlines() if line.strip()]
            return sorted(row["id"] for row in rows if "id" in row)
        return sorted(row["id"] for row in r.json["results"])

    def test_a_design_documents_filter_on_every_feed_type(self):
        want = sorted(f"d{i:03d}" for i in range(100) if i % 3 == 0)
        for feed in ("normal", "longpoll", "continuous"):
            self.assertEqual(self.ids("filter=app/byType&type=x", feed), want, feed)
        self.assertEqual(self.ids("filter=app/byType&type=nothing"), [])

    def test_paging_with_a_filter_misses_nothing(self):
        got, since = [], "0"
        for _ in range(100):
            r = self.node.get(f"/flt/_changes?filter=app/byType&type=x&limit=5&since={since}").json
            got += [row["id"] for row in r["results"]]
            since = r["last_seq"]
            if not r["results"]:
                break
        self.assertEqual(sorted(got), sorted(f"d{i:03d}" for i in range(100) if i % 3 == 0))
        self.assertEqual(len(got), len(set(got)))

    def test_the_request_object_is_couchdbs(self):
        live = sorted(r["id"] for r in self.node.get("/flt/_all_docs").json["rows"] if not r["id"].startswith("_design/"))
        self.assertEqual(self.ids("filter=app/mine"), live)

    def test_a_posted_body_reaches_the_filter_parsed(self):
        n = self.node
        self.assertEqual(n.put("/flt3").status, 201)
        f = "function(doc, req) { return typeof req.body === 'object' && req.body.want === doc._id; }"
        self.assertEqual(n.put("/flt3/_design/b", {"filters": {"f": f}}).status, 201)
        self.assertEqual(n.post("/flt3/_bulk_docs", {"docs": [{"_id": "x"}, {"_id": "y"}]}).status, 201)
        r = n.post("/flt3/_changes?filter=b/f", {"want": "y"})
        self.assertEqual(r.status, 200, r.raw[:300])
        self.assertEqual([row["id"] for row in r.json["results"]], ["y"])

    def test_style_all_docs_asks_the_filter_for_every_leaf(self):
        # couch_changes:filter with style=all_docs: the filter sees each leaf of a conflicted document
        # and the row lists the leaves it wants (none: no row), as the _selector filter.
        n = self.node
        self.assertEqual(n.put("/flt4").status, 201)
        f = "function(doc) { return doc.keep === true; }"
        self.assertEqual(n.put("/flt4/_design/b", {"filters": {"f": f}}).status, 201)
        n.put("/flt4/c?new_edits=false", {"_rev": "1-aaaa", "keep": True})
        n.put("/flt4/c?new_edits=false", {"_rev": "1-zzzz", "keep": False})  # the winner
        n.put("/flt4/plain", {"keep": True})
        n.put("/flt4/other?new_edits=false", {"_rev": "1-aaaa", "keep": False})
        n.put("/flt4/other?new_edits=false", {"_rev": "1-bbbb", "keep": False})

        def rows(style):
            r = n.get(f"/flt4/_changes?filter=b/f&style={style}")
            self.assertEqual(r.status, 200, r.raw[:300])
            return {row["id"]: [c["rev"] for c in row["changes"]] for row in r.json["results"]}
        self.assertEqual(rows("all_docs"), {"c": ["1-aaaa"], "plain": [n.get("/flt4/plain").json["_rev"]]})
        self.assertEqual(sorted(rows("main_only")), ["plain"])  # the winner of c does not keep

    def test_a_filter_that_throws_fails_the_request_as_couchdbs(self):
        # couch_query_servers:filter_docs lets the query server's error through (issue 51 point 4).
        r = self.node.get("/flt/_changes?filter=app/boom")
        self.assertEqual(r.status, 500, r.raw[:300])
        self.assertEqual(r.json["error"], "render_error")
        self.assertIn("TypeError", r.json["reason"])
        self.assertIn("_design/app", r.json["reason"])

    def test_view_as_a_filter(self):
        self.assertEqual(self.ids("filter=_view&view=app/big"), sorted(f"d{i:03d}" for i in range(51, 100)))

    def test_deletions_reach_the_filter_as_deleted_documents(self):
        n = self.node
        rev = n.get("/flt/d001").json["_rev"]
        self.assertEqual(n.delete(f"/flt/d001?rev={rev}").status, 200)
        self.assertEqual(self.ids("filter=app/deleted"), ["d001"])

    def test_per_shard_feeds_take_the_filter_too(self):
        meta = self.node.get("/flt/_changes/_meta").json
        got = []
        for shard in meta["shards"]:
            sid = shard["id"] if isinstance(shard, dict) else shard
            r = self.node.get(f"/flt/_changes/{sid}?filter=app/byType&type=x")
            self.assertEqual(r.status, 200)
            got += [row["id"] for row in r.json["results"]]
        self.assertEqual(sorted(got), sorted(f"d{i:03d}" for i in range(100) if i % 3 == 0))

    def test_a_filter_that_loops_ends_its_page_not_the_node(self):
        n = self.node
        self.assertEqual(n.put("/flt2").status, 201)
        self.assertEqual(n.put("/flt2/_design/s", {"filters": {"spin": "function(doc) { if (doc.spin) while (true) {} return true; }"}}).status, 201)
        self.assertEqual(n.post("/flt2/_bulk_docs", {"docs": [{"_id": "a"}, {"_id": "b", "spin": True}, {"_id": "c"}]}).status, 201)
        r = n.get("/flt2/_changes?filter=s/spin")
        self.assertEqual(r.status, 200)
        self.assertEqual(sorted(row["id"] for row in r.json["results"]), ["_design/s", "a", "c"])


if __name__ == "__main__":
    main()
