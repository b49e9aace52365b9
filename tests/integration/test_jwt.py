"""JWT and proxy authentication as CouchDB 3.5 (couch_httpd_auth, jwtf), switched on through
/_node/_local/_config: tokens signed by Node.js's crypto (OpenSSL) with RSA, EC and HMAC keys,
checked on a clocked node; every refusal a 401 with CouchDB's reason."""
import base64
import hashlib
import hmac
import json
import os
import subprocess

from harness import CLIENTS_SRC, ClockedNodeTest, main

CFG = "/_node/_local/_config"
HANDLERS = ("{chttpd_auth, jwt_authentication_handler}, {chttpd_auth, proxy_authentication_handler}, "
            "{chttpd_auth, cookie_authentication_handler}, {chttpd_auth, default_authentication_handler}")
SECRET = base64.b64encode(b"a shared secret of thirty-two by").decode()
OTHER_SECRET = base64.b64encode(b"another secret altogether, not it").decode()


def make_tokens(keys, tokens):
    run = subprocess.run(["node", os.path.join(CLIENTS_SRC, "jwt_tokens.js")],
                         input=json.dumps({"keys": keys, "tokens": tokens}), capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def pem_in_ini(pem):
    return pem.strip().replace("\n", "\\n")  # an ini value is one line: CouchDB reads "\n" as a newline


class Jwt(ClockedNodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        now = cls.START
        cls.claims = {"sub": "jules", "exp": now + 3600, "_couchdb.roles": ["readers", "writers"]}
        specs = [("RS256", "rsa", {}), ("RS384", "rsa", {}), ("RS512", "rsa", {}),
                 ("ES256", "ec256", {"kid": "p256"}), ("ES384", "ec384", {"kid": "p384"}),
                 ("ES512", "ec521", {"kid": "p521"}), ("HS256", None, {}), ("HS384", None, {}), ("HS512", None, {})]
        tokens = [{"alg": a, "key": k, "header": h, "claims": cls.claims, "secret": SECRET} for a, k, h in specs]
        extra = {
            "expired": {"alg": "HS256", "claims": dict(cls.claims, exp=now - 1), "secret": SECRET},
            "early": {"alg": "HS256", "claims": dict(cls.claims, nbf=now + 60), "secret": SECRET},
            "no_exp": {"alg": "HS256", "claims": {"sub": "jules"}, "secret": SECRET},
            "no_sub": {"alg": "HS256", "claims": {"exp": now + 60}, "secret": SECRET},
            "other_hmac": {"alg": "HS256", "claims": cls.claims, "secret": OTHER_SECRET},
            "other_rsa": {"alg": "RS256", "key": "rsa2", "claims": cls.claims},
            "none": {"alg": "none", "claims": cls.claims},
            "unknown_kid": {"alg": "ES256", "key": "ec256", "header": {"kid": "nope"}, "claims": cls.claims},
            "roles_string": {"alg": "HS256", "secret": SECRET,
                             "claims": {"sub": "kim", "exp": now + 60, "_couchdb.roles": "a, b ,c"}},
            "nested": {"alg": "HS256", "secret": SECRET,
                       "claims": {"sub": "lee", "exp": now + 60, "realm": {"access.roles": ["deep"]}}},
            "bad_roles": {"alg": "HS256", "secret": SECRET,
                          "claims": {"sub": "kim", "exp": now + 60, "_couchdb.roles": [1, 2]}},
            "issued": {"alg": "HS256", "secret": SECRET,
                       "claims": dict(cls.claims, iss="https://issuer.example")},
            "wrong_issuer": {"alg": "HS256", "secret": SECRET,
                             "claims": dict(cls.claims, iss="https://evil.example")},
        }
        made = make_tokens(["rsa", "rsa2", "ec256", "ec384", "ec521"], tokens + list(extra.values()))
        cls.keys = made["keys"]
        cls.good = dict(zip([s[0] for s in specs], made["tokens"][:len(specs)]))
        cls.bad = dict(zip(extra, made["tokens"][len(specs):]))
        # The RSA key the HS256 attack would use as its secret: the public key's own PEM text.
        cls.confused = make_tokens([], [{"alg": "HS256", "claims": cls.claims,
                                         "secret": base64.b64encode(cls.keys["rsa"].encode()).decode()}])["tokens"][0]
        n = cls.node
        for key, value in (("chttpd/authentication_handlers", HANDLERS),
                           ("jwt_keys/rsa:_default", pem_in_ini(cls.keys["rsa"])),
                           ("jwt_keys/ec:p256", pem_in_ini(cls.keys["ec256"])),
                           ("jwt_keys/ec:p384", pem_in_ini(cls.keys["ec384"])),
                           ("jwt_keys/ec:p521", pem_in_ini(cls.keys["ec521"])),
                           ("jwt_keys/hmac:_default", SECRET)):
            r = n.put(f"{CFG}/{key}", value)
            assert r.status == 200, (key, r)

    def session(self, token, **kw):
        return self.node.request("GET", "/_session", auth=False, headers={"Authorization": "Bearer " + token}, **kw)

    def test_every_algorithm_signs_a_user_in(self):
        for alg, token in self.good.items():
            r = self.session(token)
            self.assertEqual(r.status, 200, (alg, r))
            self.assertEqual(r.json["userCtx"], {"name": "jules", "roles": ["readers", "writers"]}, alg)
            self.assertEqual(r.json["info"]["authenticated"], "jwt")
        self.assertEqual(self.session(self.good["ES256"]).json["info"]["authentication_handlers"],
                         ["jwt", "proxy", "cookie", "default"])

    def test_a_token_reads_what_its_roles_may(self):
        self.new_db("jwt-db")
        self.assertEqual(self.node.put("/jwt-db/_security", {"members": {"roles": ["readers"]}}).status, 200)
        self.assertEqual(self.node.put("/jwt-db/d", {"x": 1}).status, 201)
        r = self.node.request("GET", "/jwt-db/d", auth=False, headers={"Authorization": "Bearer " + self.good["RS256"]})
        self.assertEqual(r.status, 200, r)
        r = self.node.request("GET", "/jwt-db/d", auth=False,
                              headers={"Authorization": "Bearer " + self.bad["roles_string"]})
        self.assertError(r, 403, "forbidden")

    def test_each_bad_token_is_401_with_couchdbs_reason(self):
        for name, reason in (("expired", "exp not in future"), ("early", "nbf not in past"),
                             ("no_exp", "Missing exp claim"), ("no_sub", "Token missing sub claim."),
                             ("other_hmac", "Bad HMAC in authentication token"),
                             ("other_rsa", "Bad signature in authentication token"),
                             ("none", "Invalid alg header parameter"), ("unknown_kid", "Unknown kid"),
                             ("bad_roles", "Malformed token")):
            self.assertError(self.session(self.bad[name]), 401, "unauthorized", reason)
        # HMAC "signed" with the RSA public key: looked up as an hmac key, which there is none of here.
        self.assertError(self.session(self.confused), 401, "unauthorized", "Bad HMAC in authentication token")
        for junk in ("abc", "a.b", "a.b.c.d", "!!.??.==", base64.urlsafe_b64encode(b"[1]").decode() + ".e30.x"):
            r = self.session(junk)
            self.assertEqual(r.status, 401, (junk, r))
            self.assertIn(r.json["reason"], ("Malformed authentication token", "Not an object"))
        # A token of 1 MB does not fit in a request's headers: 400, nothing else happens.
        r = self.session("e30." * 250000 + "x", fresh=True)
        self.assertError(r, 400, "bad_request")
        self.assertEqual(self.node.get("/_up", fresh=True).status, 200)

    def test_time_is_the_nodes_clock(self):
        token = self.good["HS256"]
        self.assertEqual(self.session(token).status, 200)
        self.set_time(self.START + 3600)
        try:
            self.assertError(self.session(token), 401, "unauthorized", "exp not in future")
        finally:
            self.set_time(self.START)
        self.set_time(self.START + 61)
        try:
            self.assertEqual(self.session(self.bad["early"]).json["userCtx"]["name"], "jules")
        finally:
            self.set_time(self.START)

    def test_keys_and_claims_that_are_not_are_refused_when_set(self):
        for key, value, reason in (
                ("jwt_keys/rsa:bad", "-----BEGIN PUBLIC KEY-----\\nnot a key\\n-----END PUBLIC KEY-----",
                 "[jwt_keys] rsa:bad: not an RSA public key"),
                ("jwt_keys/rsa:ec", pem_in_ini(self.keys["ec256"]), "[jwt_keys] rsa:ec: not an RSA public key"),
                ("jwt_keys/ec:rsa", pem_in_ini(self.keys["rsa"]), "[jwt_keys] ec:rsa: not an EC public key"),
                ("jwt_keys/hmac:x", "!!!", "[jwt_keys] hmac:x: Not a valid key"),
                ("jwt_keys/dsa:x", "abc", "[jwt_keys] dsa:x: the name must be hmac:<kid>, rsa:<kid> or ec:<kid>"),
                ("jwt_auth/required_claims", "EXP!", None)):
            self.assertError(self.node.put(f"{CFG}/{key}", value), 400, "bad_request", reason)
        self.assertError(self.node.get(f"{CFG}/jwt_keys/rsa:bad"), 404, "not_found")

    def test_roles_claim_name_and_path(self):
        self.assertEqual(self.session(self.bad["roles_string"]).json["userCtx"], {"name": "kim", "roles": ["a", "b", "c"]})
        self.assertEqual(self.node.put(f"{CFG}/jwt_auth/roles_claim_path", "realm.access\\.roles").status, 200)
        try:
            self.assertEqual(self.session(self.bad["nested"]).json["userCtx"], {"name": "lee", "roles": ["deep"]})
        finally:
            self.node.delete(f"{CFG}/jwt_auth/roles_claim_path")

    def test_required_claims(self):
        self.assertEqual(self.node.put(f"{CFG}/jwt_auth/required_claims", 'exp, {iss, "https://issuer.example"}').status,
                         200)
        try:
            self.assertEqual(self.session(self.bad["issued"]).status, 200)
            self.assertError(self.session(self.bad["wrong_issuer"]), 401, "unauthorized", "Invalid iss claim")
            self.assertError(self.session(self.good["HS256"]), 401, "unauthorized", "Missing iss claim")
        finally:
            self.node.delete(f"{CFG}/jwt_auth/required_claims")

    def test_off_unless_a_handler_names_it(self):
        self.assertEqual(self.node.delete(f"{CFG}/chttpd/authentication_handlers").status, 200)
        try:
            r = self.session(self.good["HS256"])
            self.assertEqual(r.json["userCtx"], {"name": None, "roles": []})  # a Bearer header is nobody
            r = self.node.request("GET", "/_session", auth=False, headers={"X-Auth-CouchDB-UserName": "root",
                                                                           "X-Auth-CouchDB-Roles": "_admin"})
            self.assertEqual(r.json["userCtx"], {"name": None, "roles": []})
        finally:
            self.node.put(f"{CFG}/chttpd/authentication_handlers", HANDLERS)

    def test_proxy_headers_count_only_when_signed(self):
        secret = self.node.get(f"{CFG}/chttpd_auth/secret").json
        token = hmac.new(secret.encode(), b"pat", hashlib.sha256).hexdigest()
        h = {"X-Auth-CouchDB-UserName": "pat", "X-Auth-CouchDB-Roles": "staff, _metrics"}
        r = self.node.request("GET", "/_session", auth=False, headers=dict(h, **{"X-Auth-CouchDB-Token": token}))
        self.assertEqual(r.json["userCtx"], {"name": "pat", "roles": ["staff", "_metrics"]})
        self.assertEqual(r.json["info"]["authenticated"], "proxy")
        sha1 = hmac.new(secret.encode(), b"pat", hashlib.sha1).hexdigest()  # older proxies sign with SHA-1
        r = self.node.request("GET", "/_session", auth=False, headers=dict(h, **{"X-Auth-CouchDB-Token": sha1}))
        self.assertEqual(r.json["userCtx"]["name"], "pat")
        for bad in ("", "00" * 32, token[:-1], "not hex"):
            r = self.node.request("GET", "/_session", auth=False, headers=dict(h, **{"X-Auth-CouchDB-Token": bad}))
            self.assertEqual(r.json["userCtx"], {"name": None, "roles": []}, bad)
        # Unsigned headers are trusted only when the operator says so (CouchDB's default; not settee's).
        self.assertEqual(self.node.put(f"{CFG}/chttpd_auth/proxy_use_secret", "false").status, 200)
        try:
            r = self.node.request("GET", "/_session", auth=False, headers=h)
            self.assertEqual(r.json["userCtx"]["name"], "pat")
        finally:
            self.node.delete(f"{CFG}/chttpd_auth/proxy_use_secret")
        r = self.node.request("GET", "/_session", auth=False, headers=h)
        self.assertEqual(r.json["userCtx"], {"name": None, "roles": []})


if __name__ == "__main__":
    main()
