"""PouchDB in a real browser on another origin (headless Chromium, pouchdb-browser from npm): after
`npx add-cors-to-couchdb` set CORS up through /_node/{node}/_config, a page on an allowed origin signs
in with a cookie and syncs live both ways (documents, a conflict, attachments); a page on a refused
origin is stopped by the browser's CORS check."""
import json
import os
import subprocess

from harness import CLIENTS_DIR, CLIENTS_SRC, NodeTest, free_port, install_clients, main

CFG = "/_node/_local/_config"


class BrowserSync(NodeTest):
    @classmethod
    def setUpClass(cls):
        install_clients()
        super().setUpClass()

    def node_env(self):
        return dict(os.environ, NODE_PATH=os.path.join(CLIENTS_DIR, "node_modules"))

    def test_add_cors_then_a_page_syncs_and_another_origin_is_refused(self):
        base = f"http://127.0.0.1:{self.node.port}"
        # As PouchDB's guide says, unchanged: it sets [httpd] enable_cors and [cors] on every member.
        run = subprocess.run(["node", os.path.join(CLIENTS_DIR, "node_modules", "add-cors-to-couchdb", "bin.js"), base,
                              "-u", self.node.admin[0], "-p", self.node.admin[1]],
                             capture_output=True, text=True, timeout=60, env=self.node_env())
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("success", run.stdout)
        cors = self.node.get(f"{CFG}/cors").json
        self.assertEqual((cors["origins"], cors["credentials"]), ("*", "true"))
        self.assertEqual(self.node.get(f"{CFG}/httpd/enable_cors").json, "true")
        # Then only the application's origin.
        allowed, refused = free_port(), free_port()
        self.assertEqual(self.node.put(f"{CFG}/cors/origins", f"http://127.0.0.1:{allowed}").status, 200)

        self.new_db("notes")
        r = self.node.put("/_users/org.couchdb.user:alice",
                          {"name": "alice", "type": "user", "roles": ["writers"], "password": "alice-pw"})
        self.assertEqual(r.status, 201, r)
        r = self.node.put("/notes/_security", {"members": {"roles": ["writers"]}, "admins": {"names": []}})
        self.assertEqual(r.status, 200, r)

        run = subprocess.run(["node", os.path.join(CLIENTS_SRC, "pouchdb_browser.js"), base, "notes", "alice",
                              "alice-pw", self.node.admin[0], self.node.admin[1], str(allowed), str(refused)],
                             capture_output=True, text=True, timeout=180, env=self.node_env())
        self.assertEqual(run.returncode, 0, run.stderr[-3000:])
        out = json.loads(run.stdout.strip().splitlines()[-1])

        self.assertEqual(out["signedIn"], {"status": 200, "ok": True, "name": "alice"})
        self.assertEqual(out["attachmentOnNode"], "hello from the browser")
        page = out["inPage"]
        self.assertNotIn("timedOut", page, page)
        self.assertEqual((page["text"], page["attachment"]), ("written on the node", "hello from the node"))
        self.assertIn("push", page["events"])
        self.assertIn("pull", page["events"])
        # One conflict, the same winner on both sides (CouchDB's deterministic choice).
        self.assertEqual(page["conflicts"], 1)
        self.assertEqual(out["onNode"], {"winner": page["winner"], "conflicts": 1})
        self.assertEqual(out["consoleErrors"], [])
        # Written by alice through her cookie: the node's copy is hers to read.
        doc = self.node.get("/notes/from-browser", user=("alice", "alice-pw")).json
        self.assertEqual(doc["text"], "written in the page")

        self.assertFalse(out["refused"]["fetched"], out["refused"])
        self.assertIn("Failed to fetch", out["refused"]["error"])
        self.assertTrue(any("CORS policy" in line for line in out["refused"]["console"]), out["refused"])


if __name__ == "__main__":
    main()
