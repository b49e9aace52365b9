"""CORS as CouchDB's chttpd_cors: preflights on every path before authentication, the allowed
origin echoed on every answer (live feeds and attachments too), refused origins answered without
the headers; switched on and changed at run time through /_node/_local/_config."""
import http.client

from harness import NodeTest, main

CFG = "/_node/_local/_config"
APP = "http://app.example:8080"


class Cors(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        n = cls.node
        assert n.put("/cors-db").status == 201
        assert n.put("/cors-db/doc", {"a": 1}).status == 201
        rev = n.get("/cors-db/doc").json["_rev"]
        r = n.request("PUT", f"/cors-db/doc/file.txt?rev={rev}", raw_body=b"hello",
                      headers={"Content-Type": "text/plain"})
        assert r.status == 201, r

    def setUp(self):
        for key, value in (("chttpd/enable_cors", "true"), ("cors/origins", APP), ("cors/credentials", "true")):
            self.assertEqual(self.node.put(f"{CFG}/{key}", value).status, 200)

    def preflight(self, path, origin=APP, method="GET", headers="content-type"):
        h = {"Origin": origin, "Access-Control-Request-Method": method}
        if headers:
            h["Access-Control-Request-Headers"] = headers
        return self.node.request("OPTIONS", path, auth=False, headers=h)

    def test_preflight_on_every_path_before_authentication(self):
        for path in ("/", "/cors-db", "/cors-db/doc", "/cors-db/doc/file.txt", "/_session", "/cors-db/_changes",
                     "/_all_dbs", "/missing-db/x", "/_users/org.couchdb.user:x"):
            r = self.preflight(path, method="PUT", headers="content-type, authorization")
            self.assertEqual(r.status, 204, (path, r))
            self.assertEqual(r.header("Access-Control-Allow-Origin"), APP)
            self.assertEqual(r.header("Access-Control-Allow-Credentials"), "true")
            self.assertEqual(r.header("Access-Control-Allow-Headers"), "content-type, authorization")
            self.assertIn("PUT", r.header("Access-Control-Allow-Methods"))
            self.assertEqual(r.header("Access-Control-Max-Age"), "600")
            self.assertEqual(r.raw, "")

    def test_refused_preflights_reach_the_handlers_without_the_headers(self):
        for origin, method, headers in (("http://evil.example", "GET", ""), (APP, "PATCH", ""),
                                        (APP, "GET", "x-unknown"), (APP + "/path", "GET", "")):
            r = self.preflight("/cors-db", origin=origin, method=method, headers=headers)
            self.assertEqual(r.status, 405, (origin, method, r))  # OPTIONS is no method of a database
            self.assertIsNone(r.header("Access-Control-Allow-Methods"))
            self.assertIsNone(r.header("Access-Control-Allow-Headers"))
            # An allowed origin may read the refusal (as chttpd); another origin learns nothing.
            self.assertEqual(r.header("Access-Control-Allow-Origin"), APP if origin == APP else None)
            self.assertEqual(r.header("Vary"), "Origin")

    def test_answers_carry_the_origin_and_the_exposed_headers(self):
        h = {"Origin": APP}
        for path in ("/cors-db/doc", "/cors-db/doc/file.txt", "/cors-db/_changes", "/_up"):
            r = self.node.request("GET", path, headers=h)
            self.assertEqual(r.status, 200, (path, r))
            self.assertEqual(r.header("Access-Control-Allow-Origin"), APP)
            self.assertEqual(r.header("Access-Control-Allow-Credentials"), "true")
            self.assertIn("etag", r.header("Access-Control-Expose-Headers"))
            self.assertEqual(r.header("Vary"), "Origin")
        # Errors too: a browser page must be able to read why.
        r = self.node.request("GET", "/cors-db/missing", headers=h)
        self.assertEqual((r.status, r.header("Access-Control-Allow-Origin")), (404, APP))
        r = self.node.request("GET", "/cors-db", headers=h, auth=False)
        self.assertEqual((r.status, r.header("Access-Control-Allow-Origin")), (401, APP))
        r = self.node.request("GET", "/cors-db/doc", headers={"Origin": "http://evil.example"})
        self.assertEqual(r.status, 200)
        self.assertIsNone(r.header("Access-Control-Allow-Origin"))
        self.assertIsNone(r.header("Access-Control-Expose-Headers"))

    def test_a_live_feed_carries_them(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.node.port, timeout=30)
        h = dict(self.node.auth_header())
        h["Origin"] = APP
        conn.request("GET", "/cors-db/_changes?feed=continuous&timeout=500", headers=h)
        r = conn.getresponse()
        self.assertEqual(r.status, 200)
        self.assertEqual(r.getheader("Access-Control-Allow-Origin"), APP)
        self.assertEqual(r.getheader("Transfer-Encoding"), "chunked")
        self.assertIn(b'"id":"doc"', r.read())
        conn.close()

    def test_switched_off_and_changed_at_run_time(self):
        self.assertEqual(self.node.put(f"{CFG}/cors/origins", "*").json, APP)
        r = self.preflight("/cors-db", origin="https://any.example")
        self.assertEqual((r.status, r.header("Access-Control-Allow-Origin")), (204, "https://any.example"))
        self.assertEqual(self.node.put(f"{CFG}/chttpd/enable_cors", "false").json, "true")
        r = self.preflight("/cors-db")
        self.assertEqual(r.status, 405)
        self.assertIsNone(r.header("Vary"))
        r = self.node.request("GET", "/cors-db/doc", headers={"Origin": APP})
        self.assertIsNone(r.header("Access-Control-Allow-Origin"))

    def test_an_origin_list_that_is_not_one_is_refused(self):
        self.assertError(self.node.put(f"{CFG}/cors/origins", "http://app.example/index.html"), 400, "bad_request")
        self.assertError(self.node.put(f"{CFG}/cors/max_age", "ten"), 400, "bad_request")
        self.assertEqual(self.node.get(f"{CFG}/cors/origins").json, APP)


if __name__ == "__main__":
    main()
