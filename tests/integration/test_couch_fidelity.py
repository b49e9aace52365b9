"""CouchDB 3.5, request for request (issue 28): each test is one numbered item of the issue, written
from CouchDB's source (chttpd, chttpd_db, couch_httpd, couch_util) and checked against what a running
CouchDB answered."""
import http.client

from harness import NodeTest, main


class Location(NodeTest):
    """Item 1: chttpd_db sends absolute_uri(Req, "/" ++ url_encode(Db) ++ "/" ++ url_encode(DocId)),
    couch_util:url_encode keeping only letters, digits and _ . - : (so a control character never
    reaches the header raw, where Node's parser rejected the 201)."""

    def test_location_is_absolute_and_encoded(self):
        n = self.node
        assert n.put("/loc").status == 201
        base = f"http://127.0.0.1:{n.port}"
        for doc_id, encoded in (("a/b", "a%2Fb"), ("\u00e9", "%C3%A9"), ("a\x01b", "a%01b"), ("x:y~z", "x:y%7Ez"),
                                ("sp ace", "sp%20ace")):
            r = n.post("/loc", {"_id": doc_id})
            self.assertEqual(r.status, 201, r)
            self.assertEqual(r.header("Location"), f"{base}/loc/{encoded}", doc_id)
        r = n.put("/loc/_design/d", {"x": 1})
        self.assertEqual(r.header("Location"), f"{base}/loc/_design%2Fd")
        r = n.put("/loc/plain?batch=ok", {"x": 1})
        self.assertEqual(r.status, 202)
        self.assertIsNone(r.header("Location"))  # batch=ok answers without one
        r = n.put("/a%2Fb%2Bc")
        self.assertEqual(r.header("Location"), f"{base}/a%2Fb%2Bc")

    def test_forwarded_host_and_scheme(self):
        n = self.node
        assert n.put("/fwd").status == 201
        r = n.put("/fwd/d", {"x": 1}, headers={"X-Forwarded-Host": "db.example.org", "X-Forwarded-Proto": "https"})
        self.assertEqual(r.header("Location"), "https://db.example.org/fwd/d")
        r = n.put("/fwd/e", {"x": 1}, headers={"X-Forwarded-Ssl": "on"})
        self.assertEqual(r.header("Location"), f"https://127.0.0.1:{n.port}/fwd/e")

    def test_node_clients_accept_the_answer_for_any_id(self):
        # Raw bytes in the header line: what a strict parser (Node's) refuses.
        n = self.node
        assert n.put("/strict").status == 201
        conn = http.client.HTTPConnection("127.0.0.1", n.port, timeout=10)
        body = '{"_id":"ctl\\u0001\\u001f\\u007f"}'
        conn.request("POST", "/strict", body=body,
                     headers={**n.auth_header(), "Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()
        self.assertEqual(r.status, 201)
        loc = r.getheader("Location")
        self.assertTrue(all(0x20 < ord(ch) < 0x7f for ch in loc), repr(loc))
        self.assertTrue(loc.endswith("/strict/ctl%01%1F%7F"), loc)


class Unauthorized(NodeTest):
    """Item 2: CouchDB 3 sends no WWW-Authenticate on a 401, so a browser app with its own sign-in
    form gets no native dialog."""

    def test_no_www_authenticate(self):
        n = self.node
        for r in (n.get("/_all_dbs", auth=False), n.get("/_session", user=("nobody", "x")),
                  n.get("/", headers={"Authorization": "Basic !!!"}, auth=False)):
            self.assertEqual(r.status, 401, r)
            self.assertIsNone(r.header("WWW-Authenticate"), r)


if __name__ == "__main__":
    main()
