"""Randomised bad input against every endpoint: the node never crashes, never answers 5xx (other than
501 for what is not implemented), and every error has CouchDB's shape. Seeded: set FUZZ_SEED to
replay a run; the seed is printed. FUZZ_ROUNDS sets the number of requests (1,500 in the default
suite; `make fuzz` runs the 1,000,000-request ctest entry labelled `fuzz`)."""
import json
import os
import random
import time

from harness import NodeTest, main

ROUNDS = int(os.environ.get("FUZZ_ROUNDS", "1500"))

# path -> the methods it really takes (tried 80% of the time; any method otherwise)
PATHS = {"/": "GET", "/_all_dbs": "GET", "/_uuids": "GET", "/_session": "GET POST DELETE", "/_up": "GET",
         "/_membership": "GET", "/_node/_local": "GET", "/fz": "GET POST", "/fz/doc": "GET PUT DELETE",
         "/fz/_all_docs": "GET POST", "/fz/_bulk_docs": "POST", "/fz/_bulk_get": "POST", "/fz/_revs_diff": "POST",
         "/fz/_changes": "GET POST", "/fz/_security": "GET PUT", "/fz/_shards": "GET", "/fz/_shards/x": "GET",
         "/fz/_local/x": "GET PUT DELETE", "/fz/_design/d": "GET PUT DELETE", "/fz/_ensure_full_commit": "POST",
         "/fz2": "PUT DELETE"}
PARAMS = ["rev", "revs", "revs_info", "open_revs", "latest", "conflicts", "limit", "skip", "descending", "startkey",
          "endkey", "key", "keys", "include_docs", "since", "feed", "heartbeat", "timeout", "style", "filter",
          "doc_ids", "seq_interval", "new_edits", "count", "q", "n", "batch", "inclusive_end", "update_seq"]
VALUES = ["", "0", "-1", "1", "true", "false", "x", "[", "[]", "{}", "\"a\"", "null", "99999999999999999999",
          "1-abc", "all", "%FF", "%00", "now", "normal", "longpoll", "_doc_ids", "_selector", "1e400", "[1,2"]
BODIES = ['{"docs":[{"_id":"a"}]}', '{"docs":"x"}', '{"docs":[1,null,{}]}', '{"keys":[1,"a",null]}', '{"a":["1-x"]}',
          '{"_id":5}', '{"_rev":"x"}', '{"_revisions":{"start":-1,"ids":[]}}', '[]', '"s"', '{', '\x00\x01',
          '{"selector":{"a":{"$in":5}}}', '{"name":1,"password":[]}', '{"members":{"names":"x"}}',
          '{"new_edits":"x","docs":[]}', '{"docs":[{"_id":"_bad"}]}', json.dumps({"x": "y" * 5000})]


def hostile(rng):
    """Bodies built to hurt a parser: deep nesting (over and under the limit), wide objects, long
    strings, deep selectors."""
    depth = rng.choice([10, 999, 1001, 5000, 60000])
    kind = rng.random()
    if kind < 0.3:
        return "[" * depth + "]" * depth
    if kind < 0.5:
        return '{"a":' * depth + "1" + "}" * depth
    if kind < 0.6:
        return '{"docs":[' + '{"x":' * depth + "1" + "}" * depth + "]}"
    if kind < 0.7:
        return '{"selector":' + '{"$and":[' * min(depth, 3000) + "{}" + "]}" * min(depth, 3000) + "}"
    if kind < 0.8:
        return '{"name":' + "[" * depth + "]" * depth + ',"password":"x"}'
    if kind < 0.9:
        return "{" + ",".join(f'"k{i}":{i}' for i in range(rng.choice([100, 5000]))) + "}"
    return json.dumps({"docs": [{"_id": "w%d" % i} for i in range(rng.choice([1, 50]))]})


def mutate(rng, text):
    chars = list(text)
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        pos = rng.randrange(len(chars) + 1)
        if op < 0.4 and chars:
            del chars[min(pos, len(chars) - 1)]
        elif op < 0.8:
            chars.insert(pos, rng.choice('{}[]",:\\0xa\x00\xff'))
        elif chars:
            chars[min(pos, len(chars) - 1)] = rng.choice("}]\"")
    return "".join(chars)


class BadInputFuzz(NodeTest):
    def test_random_bad_requests_never_break_the_node(self):
        seed = int(os.environ.get("FUZZ_SEED", str(int(time.time()))))
        print(f"\n  FUZZ_SEED={seed}")
        rng = random.Random(seed)
        self.new_db("fz")
        self.node.put("/fz/doc", {"v": 1})
        statuses = {}
        for i in range(ROUNDS):
            path = rng.choice(sorted(PATHS))
            query = "&".join(f"{rng.choice(PARAMS)}={rng.choice(VALUES)}" for _ in range(rng.randint(0, 3)))
            if "feed=" in query:
                query += "&timeout=50"  # live feeds end quickly
            if rng.random() < 0.8:
                method = rng.choice(PATHS[path].split())
            else:
                method = rng.choice(["GET", "PUT", "POST", "DELETE", "HEAD", "PATCH"])
            body = rng.choice(BODIES) if rng.random() < 0.9 else hostile(rng)
            if rng.random() < 0.5 and len(body) < 10000:
                body = mutate(rng, body)
            if path == "/fz" and method == "DELETE":
                method = "GET"  # keep the database for the rest of the run
            ctype = "application/json" if rng.random() < 0.9 else rng.choice(
                ["text/plain", "application/x-www-form-urlencoded", "application/json; charset=utf-8"])
            r = self.node.request(method, path + ("?" + query if query else ""), raw_body=body.encode("utf-8", "replace"),
                                  headers={"Content-Type": ctype}, auth=rng.random() < 0.85)
            statuses[r.status] = statuses.get(r.status, 0) + 1
            self.assertTrue(r.status < 500 or r.status == 501, (seed, i, method, path, query, body, r))
            if r.status >= 400 and method != "HEAD" and r.raw:
                self.assertIsInstance(r.json, dict, (seed, i, r))
                self.assertEqual(set(r.json), {"error", "reason"}, (seed, i, r))
            if i % 100000 == 99999:
                print(f"  {i + 1} requests", flush=True)
        print(f"  {ROUNDS} requests, statuses {dict(sorted(statuses.items()))}")
        self.assertEqual(self.node.get("/_up", fresh=True).status, 200)
        # The fuzz may have rewritten or deleted the document, never broken it.
        r = self.node.get("/fz/doc")
        self.assertIn(r.status, (200, 404), r)
        self.assertIsInstance(r.json, dict, r)
        self.assertEqual(self.node.get("/fz").status, 200)


if __name__ == "__main__":
    main()
