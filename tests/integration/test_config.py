"""Runtime configuration: /_node/{node}/_config read and changed as CouchDB's chttpd_node answers it,
written to the ini file the value came from, applied live where the node can, kept across restarts."""
import os

from harness import Node, NodeTest, OwnNodesTest, main, wait_until

CFG = "/_node/_local/_config"


def read(path):
    with open(path) as f:
        return f.read()


class RuntimeConfig(NodeTest):
    config = "; the operator's file\n[log]\nlevel = info\n\n[uuids]\nmax_count = 1000\n"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.operator_ini = os.path.join(cls.node.data_dir, "..", os.path.basename(cls.node.data_dir) + ".ini")
        cls.local_ini = os.path.join(cls.node.data_dir, "local.ini")
        r = cls.node.put("/_users/org.couchdb.user:bob", {"name": "bob", "type": "user", "roles": [], "password": "pw"})
        assert r.status == 201, r
        r = cls.node.put("/_users/org.couchdb.user:watcher",
                         {"name": "watcher", "type": "user", "roles": ["_metrics"], "password": "pw"})
        assert r.status == 201, r

    def test_put_answers_the_old_value_and_writes_the_file_it_came_from(self):
        r = self.node.put(f"{CFG}/uuids/max_count", "7")
        self.assertEqual((r.status, r.json), (200, "1000"))
        self.assertIsNone(r.header("X-Settee-Restart"))  # applied at once
        self.assertEqual(self.node.get(f"{CFG}/uuids/max_count").json, "7")
        self.assertIn("max_count = 7", read(self.operator_ini))  # where it came from, comments kept
        self.assertTrue(read(self.operator_ini).startswith("; the operator's file\n"))
        self.assertEqual(len(self.node.get("/_uuids?count=7").json["uuids"]), 7)
        self.assertError(self.node.get("/_uuids?count=8"), 400, "bad_request")
        # A key no file holds goes to the node's own local.ini.
        self.assertEqual(self.node.put(f"{CFG}/settee_test/fresh", " spaced ").json, "")
        self.assertEqual(self.node.get(f"{CFG}/settee_test/fresh").json, "spaced")
        self.assertIn("[settee_test]\nfresh = spaced\n", read(self.local_ini))
        self.assertEqual(self.node.get(f"{CFG}/settee_test").json, {"fresh": "spaced"})
        self.assertIn("settee_test", self.node.get(CFG).json)
        r = self.node.delete(f"{CFG}/settee_test/fresh")
        self.assertEqual((r.status, r.json), (200, "spaced"))
        self.assertNotIn("fresh", read(self.local_ini))
        self.assertError(self.node.delete(f"{CFG}/settee_test/fresh"), 404, "not_found", "unknown_config_value")
        self.assertEqual(self.node.get(f"{CFG}/settee_test").json, {})
        self.assertEqual(self.node.put(f"{CFG}/uuids/max_count", "1000").json, "7")

    def test_a_limit_applies_to_the_next_request(self):
        db = self.new_db("cfg-limits")
        self.assertEqual(self.node.put(f"{CFG}/couchdb/max_document_size", "100").json, "8000000")
        try:
            self.assertError(self.node.put(f"/{db}/big", {"x": "y" * 200}), 413, "document_too_large")
            self.assertEqual(self.node.put(f"/{db}/small", {"x": 1}).status, 201)
        finally:
            self.node.put(f"{CFG}/couchdb/max_document_size", "8000000")
        self.assertEqual(self.node.put(f"/{db}/big", {"x": "y" * 200}).status, 201)

    def test_not_persisted_values_go_at_reload(self):
        r = self.node.request("PUT", f"{CFG}/settee_test/memory", body="only here",
                              headers={"X-Couch-Persist": "false"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.node.get(f"{CFG}/settee_test/memory").json, "only here")
        self.assertNotIn("memory", read(self.local_ini) + read(self.operator_ini))
        self.assertEqual(self.node.post(f"{CFG}/_reload").json, {"ok": True})
        self.assertError(self.node.get(f"{CFG}/settee_test/memory"), 404, "not_found")
        self.assertEqual(self.node.put(f"{CFG}/_reload").status, 405)

    def test_an_admin_set_here_is_hashed_at_once_and_signs_in(self):
        self.assertEqual(self.node.put(f"{CFG}/admins/carol", "carol-pw").json, "")
        stored = self.node.get(f"{CFG}/admins/carol").json
        self.assertTrue(stored.startswith("-pbkdf2"), stored)
        self.assertNotIn("carol-pw", read(self.local_ini))
        self.assertIn(stored, read(self.local_ini))
        s = self.node.get("/_session", user=("carol", "carol-pw")).json
        self.assertEqual(s["userCtx"], {"name": "carol", "roles": ["_admin"]})
        self.assertEqual(self.node.delete(f"{CFG}/admins/carol").json, stored)
        self.assertError(self.node.get("/_session", user=("carol", "carol-pw")), 401, "unauthorized")

    def test_a_setting_read_at_start_says_it_waits_for_a_restart(self):
        r = self.node.put(f"{CFG}/chttpd/server_threads", "64")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.header("X-Settee-Restart"), "required")
        self.node.put(f"{CFG}/chttpd/server_threads", "128")

    def test_log_level_changes_live(self):
        log_path = self.node.log.name
        self.assertEqual(self.node.put(f"{CFG}/log/level", "debug").json, "info")
        try:
            self.node.get("/_up?marker=cfg-debug-line")
            self.assertTrue(wait_until(lambda: "marker=cfg-debug-line" in read(log_path), 10))
        finally:
            self.node.put(f"{CFG}/log/level", "info")
        self.node.get("/_up?marker=cfg-info-line")
        self.node.get("/_up")  # written after the first, if at all
        self.assertNotIn("marker=cfg-info-line", read(log_path))
        # The access log, at info, switched on and off.
        self.assertEqual(self.node.put(f"{CFG}/log/access", "true").json, "false")
        try:
            self.node.get("/_up?marker=cfg-access-line")
            self.assertTrue(wait_until(lambda: "GET /_up?marker=cfg-access-line 200" in read(log_path), 10))
        finally:
            self.node.put(f"{CFG}/log/access", "false")
        self.node.get("/_up?marker=cfg-quiet-again")
        self.node.get("/_up")
        self.assertNotIn("marker=cfg-quiet-again", read(log_path))

    def test_only_server_admins_read_or_change_it(self):
        for user in (None, ("bob", "pw"), ("watcher", "pw")):
            for method, path, body in (("GET", CFG, None), ("GET", f"{CFG}/admins", None),
                                       ("GET", f"{CFG}/cluster/secret", None),
                                       ("PUT", f"{CFG}/log/level", "debug"),
                                       ("DELETE", f"{CFG}/log/level", None),
                                       ("POST", f"{CFG}/_reload", None)):
                r = self.node.request(method, path, body=body, auth=user is not None, user=user)
                self.assertIn(r.status, (401, 403), (user, method, path, r))
                self.assertNotIn("pbkdf2", r.raw)
        self.assertEqual(self.node.get(f"{CFG}/log/level").json, "info")

    def test_bad_input_is_400_and_changes_nothing(self):
        before_local, before_op = read(self.local_ini), read(self.operator_ini)
        for path, body, raw, reason in (
                (f"{CFG}/log/level", 3, None, "a JSON string expected"),
                (f"{CFG}/log/level", None, b"{not json", "invalid UTF-8 JSON"),
                (f"{CFG}/log/level", "a\r\n[admins]\nmallory = x", None, None),
                (f"{CFG}/log/a%3Db", "x", None, "a config key must not hold = or begin with ; or #"),
                (f"{CFG}/log/a%0Ab", "x", None, None),
                (f"{CFG}/lo%5Bg/level", "x", None, None),
                (f"{CFG}/log/level", "x" * 70000, None, "a config value is at most 64 KiB"),
                (f"{CFG}/chttpd/port", "99999", None, "[chttpd] port must be a port number"),
        ):
            r = self.node.request("PUT", path, body=body, raw_body=raw)
            self.assertError(r, 400, "bad_request", reason)
        self.assertError(self.node.put(f"{CFG}/query_servers/javascript", "/bin/sh"), 403, "forbidden",
                         "Config section blacklisted for modification over HTTP API.")
        self.assertError(self.node.delete(f"{CFG}/native_query_servers/x"), 403, "forbidden")
        self.assertEqual(self.node.post(CFG).status, 405)
        self.assertEqual(self.node.post(f"{CFG}/log").status, 405)
        self.assertEqual(self.node.post(f"{CFG}/log/level").status, 405)
        self.assertError(self.node.get(f"{CFG}/log/level/deeper"), 404, "not_found")
        self.assertEqual((read(self.local_ini), read(self.operator_ini)), (before_local, before_op))
        self.assertEqual(self.node.get(f"{CFG}/log/level").json, "info")


class ConfigAcrossRestarts(OwnNodesTest):
    def test_persisted_values_stay_and_others_go(self):
        node = Node().start()
        try:
            self.assertEqual(node.put(f"{CFG}/cors/origins", "http://kept.example").status, 200)
            r = node.request("PUT", f"{CFG}/cors/max_age", body="99", headers={"X-Couch-Persist": "false"})
            self.assertEqual(r.status, 200)
            node.stop()
            node.start()
            self.assertEqual(node.get(f"{CFG}/cors/origins").json, "http://kept.example")
            self.assertError(node.get(f"{CFG}/cors/max_age"), 404, "not_found")
        finally:
            node.cleanup()


if __name__ == "__main__":
    main()
