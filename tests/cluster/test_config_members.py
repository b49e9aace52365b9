"""/_node/<member>/_config asked on any node reaches that member over the node protocol (issue 52
point 3): read, changed, written to its own files and applied there; `npx add-cors-to-couchdb`
pointed at one node sets CORS on every member, as on a CouchDB cluster."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import CLIENTS_DIR, install_clients, main  # noqa: E402
from test_membership import ClusterTest  # noqa: E402


def read(path):
    with open(path) as f:
        return f.read()


class ConfigOfMembers(ClusterTest):
    NODES = 2

    def test_another_members_config_through_this_node(self):
        a, b = self.nodes
        name_b = self.cluster.names[1]
        r = a.put(f"/_node/{name_b}/_config/uuids/max_count", "5")
        self.assertEqual((r.status, r.json), (200, "1000"))
        self.assertEqual(b.get("/_node/_local/_config/uuids/max_count").json, "5")
        self.assertEqual(a.get("/_node/_local/_config/uuids/max_count").json, "1000")  # only that member
        self.assertEqual(len(b.get("/_uuids?count=5").json["uuids"]), 5)
        self.assertIn("max_count = 5", read(os.path.join(b.data_dir, "local.ini")))
        self.assertEqual(a.get(f"/_node/{name_b}/_config/uuids").json, {"max_count": "5"})
        self.assertIn("uuids", a.get(f"/_node/{name_b}/_config").json)
        self.assertEqual(a.delete(f"/_node/{name_b}/_config/uuids/max_count").json, "5")
        # Its refusals and its restart notice come back as it gives them.
        self.assertError(a.get(f"/_node/{name_b}/_config/uuids/nope"), 404, "not_found", "unknown_config_value")
        self.assertError(a.put(f"/_node/{name_b}/_config/log/le%0Avel", "x"), 400, "bad_request")
        self.assertError(a.put(f"/_node/{name_b}/_config/query_servers/x", "y"), 403, "forbidden")
        r = a.put(f"/_node/{name_b}/_config/chttpd/server_threads", "100")
        self.assertEqual((r.status, r.header("X-Settee-Restart")), (200, "required"))
        r = a.post(f"/_node/{name_b}/_config/log")
        self.assertEqual((r.status, r.header("Allow")), (405, "GET"))
        self.assertError(a.get("/_node/nobody@127.0.0.1/_config"), 404, "not_found")
        self.assertError(a.get(f"/_node/{name_b}/_config", auth=False), 401, "unauthorized")
        self.assertEqual(a.post(f"/_node/{name_b}/_config/_reload").json, {"ok": True})

    def test_add_cors_to_couchdb_sets_every_member(self):
        install_clients()
        a, b = self.nodes
        env = dict(os.environ, NODE_PATH=os.path.join(CLIENTS_DIR, "node_modules"))
        run = subprocess.run(["node", os.path.join(CLIENTS_DIR, "node_modules", "add-cors-to-couchdb", "bin.js"),
                              f"http://127.0.0.1:{a.port}", "-u", a.admin[0], "-p", a.admin[1]],
                             capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        for n in (a, b):
            r = n.request("OPTIONS", "/_session", auth=False,
                          headers={"Origin": "https://app.example", "Access-Control-Request-Method": "POST"})
            self.assertEqual((r.status, r.header("Access-Control-Allow-Origin")), (204, "https://app.example"))


if __name__ == "__main__":
    main()
