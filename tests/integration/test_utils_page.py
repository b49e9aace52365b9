"""The data browser at /_utils/ (issue 55, first panes) in a real headless browser (Debian's chromium
through playwright-core, tests/clients/utils_page.js), driven as a user drives it: sign in (a wrong
password said so, Enter signs in), the databases paged by 20 with their document counts, a bad
database name refused with the node's own reason, a database named with a slash created with q=2
and opened, a document created, edited and saved through the JSON editor, invalid JSON refused
without a request, a conflict shown with a reload that then saves, a 10 MB document refused with the
node's 413, the documents paged and found by id prefix, a document and the database deleted (its
name typed again first), a missing database's 404 shown, signing out; then a database's security,
revs_limit (a bad one refused by the node) and compaction, a conflict resolved by keeping the losing
leaf, a file attached and downloaded, local documents listed apart. The node's state is checked
after each. Nothing is loaded from outside the node, no script error. SETTEE_SCREENSHOTS=<dir>
keeps a screenshot of each pane."""
import json
import os
import subprocess
import tempfile

from harness import CLIENTS_DIR, CLIENTS_SRC, NodeTest, install_clients, main


class DataBrowser(NodeTest):
    @classmethod
    def setUpClass(cls):
        install_clients()
        super().setUpClass()

    def test_the_page_is_served_as_couchdbs_utils(self):
        n = self.node
        r = n.get("/_utils", auth=False)
        self.assertEqual((r.status, r.header("Location")), (301, f"http://127.0.0.1:{n.port}/_utils/"))
        for path in ("/_utils/", "/_utils/index.html"):
            r = n.get(path, auth=False)
            self.assertEqual(r.status, 200, path)
            self.assertTrue(r.header("Content-Type").startswith("text/html"), path)
            self.assertIn("default-src 'self'", r.header("Content-Security-Policy"))
            self.assertIn('src="/_utils/utils.js"', r.raw)
        modules = ["utils.js", "api.js", "page.js", "databases.js", "documents.js", "queries.js", "flows.js", "users.js"]
        for path, kind in ([(f"/_utils/{m}", "text/javascript") for m in modules] +
                           [("/_utils/page.css", "text/css"), ("/_settee/page.css", "text/css")]):
            r = n.get(path, auth=False)
            self.assertEqual(r.status, 200, path)
            self.assertTrue(r.header("Content-Type").startswith(kind), (path, r.header("Content-Type")))
        self.assertError(n.get("/_utils/nothing.js", auth=False), 404, "not_found")
        self.assertError(n.get("/_utils/settee.html", auth=False), 404, "not_found")  # a page, not a file of this one
        self.assertError(n.get("/_utils/a/b", auth=False), 404, "not_found")
        self.assertEqual(n.request("POST", "/_utils/", {}, auth=False).status, 405)

    def browse(self, scenario, user=None):
        n = self.node
        user = user or n.admin
        shots = os.environ.get("SETTEE_SCREENSHOTS") or tempfile.mkdtemp(prefix="settee-utils-")
        r = subprocess.run(["node", os.path.join(CLIENTS_SRC, "utils_page.js"), scenario, f"http://127.0.0.1:{n.port}",
                            user[0], user[1], shots],
                           capture_output=True, text=True, timeout=180,
                           env=dict(os.environ, NODE_PATH=os.path.join(CLIENTS_DIR, "node_modules")))
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        out = json.loads(r.stdout.strip().splitlines()[-1])
        self.assertEqual(out["errors"], [])
        self.assertEqual(out["outside"], [])
        self.assertTrue(out["signedOut"])
        return out

    def test_security_revs_limit_compaction_conflicts_attachments_local_documents(self):
        n = self.node
        self.assertEqual(n.put("/library").status, 201)
        # Two leaves of `book` (as replication makes them), and a local document.
        r = n.post("/library/_bulk_docs", {"new_edits": False, "docs": [
            {"_id": "book", "_rev": "1-" + "a" * 32, "title": "first"},
            {"_id": "book", "_rev": "1-" + "b" * 32, "title": "second"}]})
        self.assertEqual(r.status, 201, r.raw)
        self.assertEqual(n.put("/library/_local/cfg", {"theme": "dark"}).status, 201)
        out = self.browse("settings")
        self.assertEqual(out["securityShown"], "")
        self.assertEqual(out["securitySaved"], {"text": "Saved the security of library.", "ok": True})
        security = n.get("/library/_security").json
        self.assertEqual(security["members"], {"names": ["alice", "bob"], "roles": ["readers"]})
        self.assertEqual(security["admins"], {"names": [], "roles": ["bosses"]})
        bad = n.put("/library/_revs_limit", raw_body="0", headers={"Content-Type": "application/json"}).json
        self.assertEqual(out["badRevsLimit"], {"text": f"400 {bad['error']}: {bad['reason']}", "ok": False})
        self.assertEqual(out["revsLimitSaved"]["ok"], True)
        self.assertEqual(n.get("/library/_revs_limit").json, 7)
        self.assertEqual(out["compaction"], {"text": "Compaction of library started.", "ok": True})
        # The two leaves, the winner first; keeping the loser deletes the winner.
        winner, loser = "1-" + "b" * 32, "1-" + "a" * 32
        self.assertEqual(out["leaves"], [winner, loser])
        self.assertEqual(out["kept"]["banner"], {"text": f"Kept revision {loser}; deleted 1 other.", "ok": True})
        self.assertEqual(out["kept"]["conflictsLeft"], 0)
        self.assertEqual((out["kept"]["editor"]["_rev"], out["kept"]["editor"]["title"]), (loser, "first"))
        book = n.get("/library/book?conflicts=true&deleted_conflicts=true").json  # after the upload below
        self.assertEqual((book["title"], book.get("_conflicts"), len(book["_deleted_conflicts"])), ("first", None, 1))
        self.assertTrue(book["_deleted_conflicts"][0].startswith("2-"), book)  # the other leaf, deleted
        # The attachment: on the node, listed, downloadable.
        self.assertTrue(out["attached"]["banner"]["text"].startswith("Attached notes.txt as revision 2-"), out["attached"])
        self.assertEqual(out["attached"]["listed"], [["notes.txt", "text/plain"]])
        self.assertEqual(out["download"], "read me")
        self.assertEqual(n.get("/library/book/notes.txt").raw, "read me")
        self.assertEqual(out["noFile"], {"text": "Choose a file to upload first.", "ok": False})
        # Local documents apart, without history or attachments.
        self.assertEqual(out["localListed"], ["_local/cfg"])
        self.assertEqual(out["local"]["editor"]["theme"], "dark")
        self.assertNotIn("Revisions", out["local"]["sections"])

    def test_mango_indexes_a_design_document_and_views(self):
        n = self.node
        self.assertEqual(n.put("/catalog").status, 201)
        docs = [{"_id": f"c{i:02d}", "type": "ab"[i % 2], "n": i} for i in range(30)]
        self.assertEqual(n.post("/catalog/_bulk_docs", {"docs": docs}).status, 201)
        out = self.browse("queries")
        # _find's own answer, shown as a table and as JSON.
        want = n.post("/catalog/_find", {"selector": {"n": {"$gt": 25}}, "sort": [{"_id": "asc"}]}).json
        self.assertEqual(out["found"]["rows"], 4)
        self.assertEqual(out["found"]["json"]["docs"], want["docs"])
        self.assertTrue(out["found"]["stats"].startswith("4 documents; examined 30 documents"), out["found"]["stats"])
        self.assertEqual(out["found"]["warning"], [want["warning"]])  # no index: CouchDB's warning
        self.assertEqual(out["explainAllDocs"], "Index used: _all_docs (special)")
        self.assertTrue(out["notJson"]["text"].startswith("The query is not JSON: "), out["notJson"])
        bad = n.post("/catalog/_find", {"selector": 5}).json
        self.assertEqual(out["badSelector"], {"text": f"400 {bad['error']}: {bad['reason']}", "ok": False})
        self.assertEqual(out["indexCreated"]["banner"], {"text": "Index by-n: created.", "ok": True})
        self.assertIn(["by-n", "n"], out["indexCreated"]["listed"])
        self.assertTrue(out["explainIndex"].startswith("Index used: _design/") and "by-n (json)" in out["explainIndex"],
                        out["explainIndex"])
        self.assertEqual(out["indexDeleted"]["banner"], {"text": "Deleted index by-n.", "ok": True})
        self.assertNotIn("by-n", out["indexDeleted"]["listed"])
        self.assertEqual([i["name"] for i in n.get("/catalog/_index").json["indexes"]], ["_all_docs"])
        # The design document: saved from the template; a map that does not compile refused, the
        # node's reason shown under the editor.
        self.assertEqual(out["noViews"], "no views yet: a design document defines them")
        self.assertRegex(out["designSaved"]["text"], r"^Saved _design/app as revision 1-")
        self.assertEqual(n.get("/catalog/_design/app").json["views"]["by_type"]["reduce"], "_count")
        self.assertEqual(out["compileError"]["banner"]["text"].split(":")[0], "400 compilation_error")
        self.assertTrue(out["compileError"]["inline"] and out["compileError"]["inline"] in out["compileError"]["banner"]["text"])
        self.assertNotIn("broken", n.get("/catalog/_design/app").json["views"])
        # The view's rows as the node answers them.
        self.assertEqual(out["grouped"], [['"a"', "15"], ['"b"', "15"]])
        self.assertEqual(out["keyed"]["figures"], "3 rows of 30, offset 0")
        self.assertEqual(out["keyed"]["ids"], ["c00", "c02", "c04"])
        self.assertEqual(out["keyed"]["doc"]["n"], 0)
        bad = n.get('/catalog/_design/app/_view/by_type?key=a&limit=3&include_docs=true&reduce=false').json
        self.assertEqual(out["badKey"], {"text": f"400 {bad['error']}: {bad['reason']}", "ok": False})

    def test_live_changes_replications_and_users(self):
        n = self.node
        self.assertEqual(n.put("/feed").status, 201)
        self.assertEqual(n.put("/feed/old", {"type": "a"}).status, 201)
        out = self.browse("flows")
        # Since now: the old document is not shown, the new one is, newest first; the selector
        # keeps only its own; a selector that is not JSON is said, not sent.
        self.assertEqual(out["changesBefore"], 0)
        self.assertEqual(out["liveWrite"], 201)
        self.assertEqual(out["liveRow"][1:], ["live1", n.get("/feed/live1").json["_rev"], ""])
        self.assertEqual(out["filtered"], ["kept"])
        self.assertTrue(out["badSelector"]["text"].startswith("The selector is not JSON: "), out["badSelector"])
        # The replications: _replicator documents, their states from /_scheduler/docs.
        self.assertEqual(out["noReplications"], 2)  # the header and "no replications"
        self.assertEqual(out["noPassword"]["text"], "Your password is needed to replicate this node's databases. Nothing was sent.")
        self.assertRegex(out["replicationSaved"]["text"], r"^Replication [0-9a-f]{32} saved in _replicator\.$")
        base = f"http://127.0.0.1:{n.port}"
        self.assertEqual(out["states"][f"{base}/feed/ → {base}/feedcopy/"], ["completed", ""], out["states"])
        failing = out["states"][f"http://127.0.0.1:1/nowhere/ → {base}/feedcopy2/"]
        self.assertIn(failing[0], ("crashing", "retrying", "error", "failed"), failing)
        self.assertNotEqual(failing[1], "")
        self.assertEqual(sorted(d["_id"] for d in [n.get(f"/feedcopy/{i}").json for i in ("old", "live1", "kept")]),
                         ["kept", "live1", "old"])
        self.assertEqual(out["replicationDeleted"]["left"], 1)
        self.assertEqual(len([r for r in n.get("/_replicator/_all_docs").json["rows"] if not r["id"].startswith("_design/")]), 1)
        # The user: created with roles, a new password that signs in, the old one refused.
        self.assertEqual(out["navHere"], "Users")
        self.assertEqual(out["userCreated"]["banner"], {"text": "Created user carol.", "ok": True})
        self.assertIn("carol", out["userCreated"]["listed"])
        self.assertEqual(out["userSaved"], {"text": "Saved carol, with a new password.", "ok": True})
        self.assertEqual(n.get("/_users/org.couchdb.user:carol").json["roles"], ["readers"])
        self.assertEqual(n.request("POST", "/_session", {"name": "carol", "password": "second-pw"}, auth=False).status, 200)
        self.assertEqual(n.request("POST", "/_session", {"name": "carol", "password": "first-pw"}, auth=False).status, 401)
        self.assertEqual(out["userTaken"]["text"].split(":")[0], "409 conflict")

    def test_a_member_sees_the_databases_security_lets_them_read(self):
        n = self.node
        r = n.put("/_users/org.couchdb.user:dora", {"name": "dora", "password": "dora-pw", "roles": [], "type": "user"})
        self.assertEqual(r.status, 201, r.raw)
        for db, members in (("shared", ["dora"]), ("secret", ["someone"])):
            self.assertEqual(n.put(f"/{db}").status, 201)
            self.assertEqual(n.put(f"/{db}/_security", {"members": {"names": members}}).status, 200)
            self.assertEqual(n.put(f"/{db}/{db}-doc", {}).status, 201)
        out = self.browse("member", ("dora", "dora-pw"))
        self.assertEqual(out["nav"], ["Databases", "Replication"])
        self.assertEqual(out["own"], "Only server admins list every database; the ones you opened are below.")
        self.assertEqual(out["shared"], ["shared-doc"])
        forbidden = n.get("/secret", user=("dora", "dora-pw")).json
        self.assertEqual(out["secret"], {"text": f"403 {forbidden['error']}: {forbidden['reason']}", "ok": False})
        self.assertEqual(out["remembered"], [["shared", "1"]])

    def test_a_user_browses_and_edits_databases_and_documents(self):
        n = self.node
        for k in range(25):
            self.assertEqual(n.put(f"/shelf{k:02d}").status, 201)
        self.assertEqual(n.post("/shelf00/_bulk_docs", {"docs": [{"k": i} for i in range(3)]}).status, 201)
        out = self.browse("edit")
        self.assertTrue(out["url"].endswith("/_utils/"), out["url"])
        self.assertEqual(out["wrongPassword"], "Name or password is incorrect.")
        self.assertEqual(out["focusAfterPassword"], "Sign in")  # the form is used by keyboard
        self.assertEqual(out["who"], "signed in as " + n.admin[0])
        # The databases, 20 a page, in _all_dbs order, with their document counts.
        names = n.get("/_all_dbs").json
        self.assertEqual([d for d, _ in out["firstPage"]], names[:20])
        self.assertEqual(dict(out["firstPage"])["shelf00"], "3")
        self.assertTrue(out["nextEnabled"])
        self.assertEqual(out["secondPage"], names[20:40])
        # The node's refusal of a bad name, word for word.
        bad = n.put("/Bad%20Name").json
        self.assertEqual(out["badName"], {"text": f"400 {bad['error']}: {bad['reason']}", "ok": False})
        self.assertEqual(out["listAfterBadName"], 20)
        # "notes/team": one database, q=2.
        self.assertEqual(out["created"]["hash"], "#/db/notes%2Fteam")
        self.assertEqual(out["created"]["banner"], {"text": "Created database notes/team.", "ok": True})
        self.assertTrue(out["created"]["figures"].startswith("0 documents, 0 deleted"), out["created"]["figures"])
        self.assertEqual(len(out["newDocTemplate"]["_id"]), 32)  # a fresh uuid from /_uuids
        saved = out["saved"]
        self.assertTrue(saved["banner"]["ok"], saved)
        self.assertRegex(saved["banner"]["text"], r"^Saved doc1 as revision 1-[0-9a-f]{32}\.$")
        self.assertEqual(saved["id"], "doc1")
        self.assertEqual((saved["editor"]["_id"], saved["editor"]["n"]), ("doc1", 1))
        self.assertEqual(saved["revisions"], [saved["editor"]["_rev"]])
        # Invalid JSON: said, and nothing but reads sent.
        self.assertFalse(out["invalid"]["banner"]["ok"])
        self.assertTrue(out["invalid"]["banner"]["text"].startswith("The document is not JSON: "), out["invalid"])
        self.assertEqual(out["invalid"]["requests"], [])
        # The conflict: the node's 409 with a reload; the reload shows theirs, and mine then saves.
        self.assertEqual(out["behindBack"]["status"], 201)
        self.assertTrue(out["conflict"]["text"].startswith("Conflict: 409 conflict: Document update conflict."),
                        out["conflict"])
        self.assertTrue(out["conflict"]["text"].endswith("Reload"), out["conflict"])  # its button
        self.assertEqual(out["reloaded"]["n"], "theirs")
        self.assertTrue(out["reloaded"]["_rev"].startswith("2-"))
        self.assertRegex(out["savedAfterReload"]["text"], r"^Saved doc1 as revision 3-")
        # 10 MB: the node's 413.
        self.assertEqual(out["tooLarge"]["ok"], False)
        self.assertTrue(out["tooLarge"]["text"].startswith("413 document_too_large"), out["tooLarge"])
        # Paged by 20 and found by prefix.
        self.assertEqual(out["bulk"], 201)
        everything = ["doc1"] + [f"item{i:02d}" for i in range(25)]
        self.assertEqual(out["docsFirst"], everything[:20])
        self.assertEqual(out["docsSecond"], everything[20:])
        self.assertEqual(out["found"], [f"item{i}" for i in range(10, 20)])
        # The document deleted (two clicks), the database too (its name typed first).
        self.assertEqual(out["armed"], "Delete for good")
        self.assertEqual(out["deleted"], {"banner": {"text": "Deleted item10.", "ok": True}, "view": "docs"})
        self.assertTrue(out["confirmDisabled"])
        self.assertEqual(out["dbDeleted"]["banner"], {"text": "Deleted database notes/team.", "ok": True})
        self.assertNotIn("notes/team", out["dbDeleted"]["listed"])
        self.assertEqual(n.get("/notes%2Fteam").status, 404)
        self.assertEqual(out["missing"], {"text": "404 not_found: Database does not exist.", "ok": False})
        self.assertEqual(n.get("/shelf00").json["doc_count"], 3)  # nothing else touched


if __name__ == "__main__":
    main()
