"""Cookie sessions renewed as couch_httpd_auth renews them, on a clocked node: once a tenth of
[chttpd_auth] timeout has passed, an answer to a cookie request carries a fresh AuthSession, so a
page that keeps asking stays signed in; a cookie nobody renewed ends at its timeout."""
from harness import ClockedNodeTest, main


class Sessions(ClockedNodeTest):
    def sign_in(self):
        r = self.node.post("/_session", {"name": self.node.admin[0], "password": self.node.admin[1]}, auth=False)
        self.assertEqual(r.status, 200, r)
        return r.header("Set-Cookie").split(";")[0]

    def ask(self, cookie):
        return self.node.request("GET", "/_session", auth=False, headers={"Cookie": cookie})

    def test_a_cookie_is_renewed_after_a_tenth_of_its_life(self):
        t = self.START + 1000
        self.set_time(t)
        try:
            old = self.sign_in()
            r = self.ask(old)
            self.assertEqual(r.json["userCtx"]["name"], self.node.admin[0])
            self.assertIsNone(r.header("Set-Cookie"))
            self.set_time(t + 59)  # timeout 600: renewed once 60 s have passed
            self.assertIsNone(self.ask(old).header("Set-Cookie"))
            self.set_time(t + 61)
            r = self.ask(old)
            fresh = r.header("Set-Cookie")
            self.assertIsNotNone(fresh)
            self.assertIn("Max-Age=600", fresh)
            self.assertIn("HttpOnly", fresh)
            new = fresh.split(";")[0]
            self.assertNotEqual(new, old)
            # Any request renews, not only /_session; a handler's own cookie (sign-out) wins.
            r = self.node.request("GET", "/_all_dbs", auth=False, headers={"Cookie": old})
            self.assertEqual(r.status, 200)
            self.assertIsNotNone(r.header("Set-Cookie"))
            r = self.node.request("DELETE", "/_session", auth=False, headers={"Cookie": old})
            self.assertIn("Max-Age=0", r.header("Set-Cookie"))
            # The old one ends at its timeout; the renewed one lives on, and is renewed again.
            self.set_time(t + 601)
            self.assertIsNone(self.ask(old).json["userCtx"]["name"])
            r = self.ask(new)
            self.assertEqual(r.json["userCtx"]["name"], self.node.admin[0])
            self.assertEqual(r.json["info"]["authenticated"], "cookie")
            self.assertIsNotNone(r.header("Set-Cookie"))
        finally:
            self.set_time(self.START)

    def test_a_page_that_keeps_asking_stays_signed_in(self):
        t = self.START + 5000
        self.set_time(t)
        try:
            cookie = self.sign_in()
            for minute in range(1, 31):  # half an hour of polling, a minute apart
                self.set_time(t + 60 * minute)
                r = self.ask(cookie)
                self.assertEqual(r.json["userCtx"]["name"], self.node.admin[0], minute)
                if r.header("Set-Cookie"):
                    cookie = r.header("Set-Cookie").split(";")[0]
        finally:
            self.set_time(self.START)

    def test_a_changed_password_ends_its_cookies(self):
        r = self.node.put("/_users/org.couchdb.user:sam", {"name": "sam", "type": "user", "roles": [], "password": "a"})
        self.assertEqual(r.status, 201)
        r = self.node.post("/_session", {"name": "sam", "password": "a"}, auth=False)
        cookie = r.header("Set-Cookie").split(";")[0]
        self.assertEqual(self.ask(cookie).json["userCtx"]["name"], "sam")
        doc = self.node.get("/_users/org.couchdb.user:sam").json
        doc["password"] = "b"
        self.assertEqual(self.node.put("/_users/org.couchdb.user:sam", doc).status, 201)
        self.assertIsNone(self.ask(cookie).json["userCtx"]["name"])


if __name__ == "__main__":
    main()
