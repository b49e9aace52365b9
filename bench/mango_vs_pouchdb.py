"""Mango on the same N documents of ~1 KB on settee and on pouchdb-server (pouchdb-find), side by
side in one run (issue 32): an index on `age` and one on `score` built over the documents there
(from POST /_index until a query answers), then one-client medians of an equality with limit 25,
a range with a sort and limit 100, $in of 50 values, $or of two indexed fields, and a query no
index serves (a full scan). Both servers fresh on loopback with their defaults (compare.py).
    python3 bench/mango_vs_pouchdb.py [docs=50000]
Needs `npm install` in bench/ (pouchdb-server) and a built settee."""
import json
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from compare import req, start_side_by_side  # noqa: E402

DOCS = int(sys.argv[1]) if len(sys.argv) > 1 else 50000
PAD = "x" * 900


def find(server, body):
    t = time.time()
    out = req(server, "POST", "/mcmp/_find", body)
    return time.time() - t, out


def main():
    random.seed(7)
    eq = [{"selector": {"age": random.randrange(100)}, "limit": 25} for _ in range(20)]
    ranged = []
    for _ in range(20):
        lo = random.randrange(90000)
        ranged.append({"selector": {"score": {"$gte": lo, "$lt": lo + 5000}}, "sort": ["score"], "limit": 100})
    ins = [{"selector": {"score": {"$in": random.sample(range(100000), 50)}}, "limit": 200} for _ in range(10)]
    ors = [{"selector": {"$or": [{"age": random.randrange(100)}, {"score": random.randrange(100000)}]}, "limit": 100}
           for _ in range(10)]
    scan = [{"selector": {"pad": {"$regex": "^y"}}} for _ in range(2)]
    _, servers = start_side_by_side("settee-mangocmp-")
    results = {}
    try:
        for server in ("settee", "pouchdb-server"):
            req(server, "PUT", "/mcmp")
            for b in range(0, DOCS, 1000):
                req(server, "POST", "/mcmp/_bulk_docs",
                    {"docs": [{"_id": f"d{i:07d}", "age": i % 100, "score": (i * 7919) % 100000, "pad": PAD}
                              for i in range(b, min(DOCS, b + 1000))]})
            out = {}
            t0 = time.time()
            for field in ("age", "score"):
                req(server, "POST", "/mcmp/_index", {"index": {"fields": [field]}, "ddoc": field, "name": field})
                find(server, {"selector": {field: 1}, "limit": 1})  # pouchdb-find builds at the first query
            while True:  # settee builds in the background: until a query reads only its index
                r = find(server, {"selector": {"age": 0}, "limit": DOCS, "execution_stats": True})[1]
                stats = r.get("execution_stats")
                if not stats or stats["total_keys_examined"] == len(r["docs"]):
                    break
                time.sleep(0.02)
            out["build_s"] = time.time() - t0
            for name, bodies in (("eq", eq), ("range", ranged), ("in", ins), ("or", ors), ("scan", scan)):
                answers = [find(server, b) for b in bodies]
                out[name] = statistics.median(t for t, _ in answers) * 1000
                out[name + "_docs"] = sum(len(a["docs"]) for _, a in answers)
            results[server] = out
            print(server, json.dumps(out))
        s, p = results["settee"], results["pouchdb-server"]
        print(f"{DOCS:,} docs of ~1 KB: two indexes built in settee {s['build_s']:.1f} s, pouchdb-server "
              f"{p['build_s']:.1f} s ({p['build_s'] / s['build_s']:.0f}x)")
        for name, what in (("eq", "equality limit 25"), ("range", "range + sort, limit 100"), ("in", "$in of 50"),
                           ("or", "$or of two indexed fields"), ("scan", "no index (full scan)")):
            same = "same documents" if s[name + "_docs"] == p[name + "_docs"] else \
                f"documents {s[name + '_docs']} vs {p[name + '_docs']}"
            print(f"  {what}: settee {s[name]:.2f} ms, pouchdb-server {p[name]:.2f} ms "
                  f"({p[name] / s[name]:.0f}x; {same})")
    finally:
        for proc, _ in servers.values():
            proc.terminate()


if __name__ == "__main__":
    main()
