"""Authentication (Basic, cookies), server admins, _users and per-database _security."""
import base64
import http.client
import json

from harness import NodeTest, main


class Auth(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for name, roles in [("bob", ["readers"]), ("eve", []), ("dan", ["db-admins"])]:
            r = cls.node.put(f"/_users/org.couchdb.user:{name}",
                             {"name": name, "type": "user", "roles": roles, "password": name + "-pw"})
            assert r.status == 201, r

    def user(self, name):
        return (name, name + "-pw")

    def test_passwords_in_users_are_hashed(self):
        doc = self.node.get("/_users/org.couchdb.user:bob").json
        self.assertNotIn("password", doc)
        self.assertEqual(doc["password_scheme"], "pbkdf2")
        self.assertEqual(len(doc["derived_key"]), 64)

    def test_basic_auth(self):
        self.assertEqual(self.node.get("/_session", user=self.user("bob")).json["userCtx"],
                         {"name": "bob", "roles": ["readers"]})
        r = self.node.get("/_session", user=("bob", "wrong"))
        self.assertError(r, 401, "unauthorized", "Name or password is incorrect.")
        self.assertIsNone(r.header("WWW-Authenticate"))  # CouchDB 3 sends none (no browser dialog)
        self.assertError(self.node.get("/_session", user=("nobody", "x")), 401, "unauthorized")
        r = self.node.get("/", headers={"Authorization": "Basic !!!notbase64"}, auth=False)
        self.assertError(r, 401, "unauthorized")
        anon = self.node.get("/_session", auth=False).json
        self.assertEqual(anon["userCtx"], {"name": None, "roles": []})
        self.assertNotIn("authenticated", anon["info"])
        admin = self.node.get("/_session").json
        self.assertEqual(admin["userCtx"], {"name": "admin", "roles": ["_admin"]})
        self.assertEqual(admin["info"]["authenticated"], "default")

    def test_server_admin_gate(self):
        self.assertError(self.node.get("/_all_dbs", auth=False), 401, "unauthorized", "You are not a server admin.")
        self.assertError(self.node.get("/_all_dbs", user=self.user("bob")), 403, "forbidden",
                         "You are not a server admin.")
        self.assertError(self.node.put("/bobs", user=self.user("bob")), 403, "forbidden")
        # A user reads their own _users document, nobody else's, and cannot list the database.
        self.assertEqual(self.node.get("/_users/org.couchdb.user:eve", user=self.user("eve")).status, 200)
        self.assertError(self.node.get("/_users/org.couchdb.user:bob", user=self.user("eve")), 403, "forbidden")
        self.assertError(self.node.get("/_users/_all_docs", user=self.user("eve")), 403, "forbidden")
        self.assertError(self.node.get("/_users/org.couchdb.user:eve", auth=False), 401, "unauthorized")

    def test_cookie_session(self):
        r = self.node.post("/_session", {"name": "bob", "password": "bob-pw"}, auth=False)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json, {"ok": True, "name": "bob", "roles": ["readers"]})
        cookie = r.header("Set-Cookie").split(";")[0]
        self.assertTrue(cookie.startswith("AuthSession="))
        s = self.node.get("/_session", auth=False, headers={"Cookie": cookie}).json
        self.assertEqual(s["userCtx"]["name"], "bob")
        self.assertEqual(s["info"]["authenticated"], "cookie")
        forged = cookie[:-4] + ("AAAA" if not cookie.endswith("AAAA") else "BBBB")
        s = self.node.get("/_session", auth=False, headers={"Cookie": forged}).json
        self.assertEqual(s["userCtx"]["name"], None)
        r = self.node.request("POST", "/_session", raw_body="name=bob&password=bob-pw", auth=False,
                              headers={"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual(r.status, 200)
        self.assertError(self.node.post("/_session", {"name": "bob", "password": "no"}, auth=False), 401,
                         "unauthorized", "Name or password is incorrect.")
        self.assertError(self.node.post("/_session", {"name": 1}, auth=False), 401, "unauthorized")
        # couch_httpd_auth's corners: a failure clears the cookie; ?next= / ?fail= answer 302 to that
        # path on this host; ?basic=true without a user is 401 "Please login."; other types are 415.
        r = self.node.post("/_session", {"name": "bob", "password": "no"}, auth=False)
        self.assertTrue(r.header("Set-Cookie").startswith("AuthSession=;"), r.header("Set-Cookie"))
        r = self.node.post("/_session?next=/private", {"name": "bob", "password": "bob-pw"}, auth=False)
        self.assertEqual((r.status, r.header("Location")), (302, f"http://127.0.0.1:{self.node.port}/private"))
        self.assertTrue(r.raw.startswith('{"ok":true'), r.raw)
        self.assertTrue(r.header("Set-Cookie").startswith("AuthSession=") and "Max-Age=0" not in r.header("Set-Cookie"))
        r = self.node.post("/_session?fail=/login", {"name": "bob", "password": "no"}, auth=False)
        self.assertEqual((r.status, r.header("Location"), r.json["error"]),
                         (302, f"http://127.0.0.1:{self.node.port}/login", "unauthorized"))
        self.assertError(self.node.get("/_session?basic=true", auth=False), 401, "unauthorized", "Please login.")
        self.assertEqual(self.node.get("/_session?basic=true").json["userCtx"]["name"], "admin")
        r = self.node.request("POST", "/_session", raw_body="x", auth=False, headers={"Content-Type": "text/plain"})
        self.assertError(r, 415, "bad_content_type",
                         "Content-Type must be 'application/x-www-form-urlencoded' or 'application/json'")
        self.assertError(self.node.post("/_session", [1], auth=False), 400, "bad_request")
        self.assertEqual(self.node.delete("/_session", auth=False).json, {"ok": True})
        self.assertError(self.node.request("PUT", "/_session", {}), 405, "method_not_allowed")

    def test_security_members_and_admins(self):
        self.new_db("private")
        self.node.put("/private/doc", {"secret": 1})
        # New databases are admin-only (CouchDB 3's default_security); an empty _security opens one.
        self.assertError(self.node.get("/private/doc", auth=False), 401, "unauthorized")
        self.assertEqual(self.node.put("/private/_security", {}).status, 200)
        # No members: public.
        self.assertEqual(self.node.get("/private/doc", auth=False).status, 200)
        sec = {"admins": {"names": [], "roles": ["db-admins"]}, "members": {"names": ["eve"], "roles": ["readers"]}}
        self.assertEqual(self.node.put("/private/_security", sec).json, {"ok": True})
        self.assertEqual(self.node.get("/private/_security").json, sec)
        self.assertError(self.node.get("/private/doc", auth=False), 401, "unauthorized",
                         "You are not authorized to access this db.")
        self.assertError(self.node.get("/private", auth=False), 401, "unauthorized")
        self.assertEqual(self.node.get("/private/doc", user=self.user("eve")).status, 200)  # by name
        self.assertEqual(self.node.get("/private/doc", user=self.user("bob")).status, 200)  # by role
        self.assertEqual(self.node.get("/private/doc", user=self.user("dan")).status, 200)  # db admin
        self.node.put("/private/_security", {"admins": sec["admins"], "members": {"names": ["eve"], "roles": []}})
        self.assertError(self.node.get("/private/doc", user=self.user("bob")), 403, "forbidden",
                         "You are not allowed to access this db.")
        self.assertError(self.node.put("/private/x", {}, user=self.user("bob")), 403, "forbidden")
        # Only db admins (and server admins) change _security.
        self.assertError(self.node.put("/private/_security", {}, user=self.user("eve")), 403, "forbidden",
                         "You are not a db or server admin.")
        self.assertError(self.node.put("/private/_security", {}, auth=False), 401, "unauthorized")
        self.assertEqual(self.node.put("/private/_security", sec, user=self.user("dan")).status, 200)

    def test_security_bad_input(self):
        self.new_db("secbad")
        self.assertError(self.node.put("/secbad/_security", [1]), 400, "bad_request")
        self.assertError(self.node.put("/secbad/_security", {"members": {"names": "bob"}}), 400, "bad_request")
        self.assertError(self.node.put("/secbad/_security", {"admins": []}), 400, "bad_request")
        self.assertError(self.node.post("/secbad/_security", {}), 405, "method_not_allowed", "Only PUT,GET allowed")
        self.assertEqual(self.node.get("/secbad/_security").json,
                         {"members": {"roles": ["_admin"]}, "admins": {"roles": ["_admin"]}})

    def test_password_change_takes_effect(self):
        doc = self.node.get("/_users/org.couchdb.user:eve").json
        self.assertEqual(self.node.get("/_session", user=self.user("eve")).json["userCtx"]["name"], "eve")
        doc["password"] = "new-pw"
        self.assertEqual(self.node.put("/_users/org.couchdb.user:eve", doc).status, 201)
        self.assertEqual(self.node.get("/_session", user=("eve", "new-pw")).json["userCtx"]["name"], "eve")
        self.assertError(self.node.get("/_session", user=self.user("eve")), 401, "unauthorized")
        doc = self.node.get("/_users/org.couchdb.user:eve").json
        doc["password"] = "eve-pw"
        self.node.put("/_users/org.couchdb.user:eve", doc)

    def test_connection_memo_follows_password_and_roles(self):
        # One keep-alive connection that proved its header keeps its answer only while the user's
        # stored hash is the same: a password changed through another connection ends it at once,
        # and roles are read as they are now.
        self.node.put("/_users/org.couchdb.user:kim",
                      {"name": "kim", "type": "user", "roles": ["a"], "password": "kim-pw"})
        conn = http.client.HTTPConnection("127.0.0.1", self.node.port, timeout=60)
        header = {"Authorization": "Basic " + base64.b64encode(b"kim:kim-pw").decode()}

        def session():
            conn.request("GET", "/_session", headers=header)
            r = conn.getresponse()
            return r.status, json.loads(r.read())

        for _ in range(3):
            status, body = session()
            self.assertEqual((status, body["userCtx"]["roles"]), (200, ["a"]))
        doc = self.node.get("/_users/org.couchdb.user:kim", fresh=True).json
        doc["roles"] = ["b"]
        self.assertEqual(self.node.put("/_users/org.couchdb.user:kim", doc).status, 201)
        self.assertEqual(session()[1]["userCtx"]["roles"], ["b"])
        doc = self.node.get("/_users/org.couchdb.user:kim").json
        doc["password"] = "kim-new"
        self.assertEqual(self.node.put("/_users/org.couchdb.user:kim", doc).status, 201)
        status, body = session()
        self.assertEqual((status, body["error"]), (401, "unauthorized"))
        header["Authorization"] = "Basic " + base64.b64encode(b"kim:kim-new").decode()
        self.assertEqual(session()[0], 200)
        conn.close()


if __name__ == "__main__":
    main()
