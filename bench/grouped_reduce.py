"""Grouped reduces of two builds side by side (issue 56 point 0): the same N documents of ~1 KB in one
default node of each (A, B), then each reduce query asked by one client over a kept connection for
a fixed time, the nodes taking turns run by run. Prints req/s (median of the runs) and p50/p95
per build and the B/A ratio of the medians.
    python3 bench/grouped_reduce.py A_BINARY [B_BINARY=build/settee] [docs=200000] [runs=3] [seconds=3]
Views: `emit(doc.type, 1)` with 10 types (few groups) and `emit(doc.user, 1)` with docs/10 users
(many groups), each with _count, _sum and a JavaScript sum; `emit([doc.type, doc.user % 100], doc.n)`
with _sum and _stats for group_level."""
import http.client
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_node import AUTH, BenchNode  # noqa: E402

A = sys.argv[1]
B = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "build", "settee")
DOCS = int(sys.argv[3]) if len(sys.argv) > 3 else 200000
RUNS = int(sys.argv[4]) if len(sys.argv) > 4 else 3
SECONDS = float(sys.argv[5]) if len(sys.argv) > 5 else 3.0
PAD = "x" * 900
USERS = max(DOCS // 10, 1)

JS_SUM = "function(keys, values, rereduce) { return sum(values); }"
DDOC = {"views": {
    "type_count": {"map": "function(doc) { emit(doc.type, 1); }", "reduce": "_count"},
    "type_sum": {"map": "function(doc) { emit(doc.type, doc.n); }", "reduce": "_sum"},
    "type_js": {"map": "function(doc) { emit(doc.type, 1); }", "reduce": JS_SUM},
    "user_count": {"map": "function(doc) { emit(doc.user, 1); }", "reduce": "_count"},
    "user_sum": {"map": "function(doc) { emit(doc.user, doc.n); }", "reduce": "_sum"},
    "pair_sum": {"map": "function(doc) { emit([doc.type, doc.user % 100], doc.n); }", "reduce": "_sum"},
    "pair_stats": {"map": "function(doc) { emit([doc.type, doc.user % 100], doc.n); }", "reduce": "_stats"},
}}
QUERIES = [
    ("_count group=true, 10 groups", "type_count?group=true"),
    ("_sum group=true, 10 groups", "type_sum?group=true"),
    ("JS sum group=true, 10 groups", "type_js?group=true"),
    ("_count reduce=true, whole view", "type_count"),
    ("_count group=true, key range (3 groups)", "type_count?group=true&startkey=%22t3%22&endkey=%22t5%22"),
    (f"_count group=true, {USERS:,} groups, limit=10", "user_count?group=true&limit=10"),
    (f"_sum group=true, {USERS:,} groups (all)", "user_sum?group=true"),
    ("_sum group_level=1 of [type, u%100]", "pair_sum?group_level=1"),
    ("_stats group_level=1 of [type, u%100]", "pair_stats?group_level=1"),
    ("_sum group_level=2 (1,000 groups)", "pair_sum?group_level=2"),
]


def load(node):
    node.ok("PUT", "/g")
    for b in range(0, DOCS, 2000):
        docs = [{"_id": f"d{i:08d}", "type": f"t{i % 10}", "user": (i * 7919) % USERS, "n": i % 1000, "pad": PAD}
                for i in range(b, min(b + 2000, DOCS))]
        node.ok("POST", "/g/_bulk_docs", {"docs": docs})
    node.ok("PUT", "/g/_design/r", DDOC)
    t = time.time()
    for name in DDOC["views"]:
        node.ok("GET", f"/g/_design/r/_view/{name}?limit=1&reduce=false")
    return time.time() - t


def run(node, path):
    """Requests one after the other for SECONDS: (req/s, latencies in ms)."""
    c = http.client.HTTPConnection("127.0.0.1", node.port, timeout=600)
    lat = []
    start = time.time()
    body = None
    while time.time() - start < SECONDS or not lat:
        t = time.time()
        c.request("GET", f"/g/_design/r/_view/{path}", headers=AUTH)
        r = c.getresponse()
        body = r.read()
        if r.status != 200:
            raise RuntimeError(f"{path}: {r.status} {body[:200]!r}")
        lat.append((time.time() - t) * 1000)
    c.close()
    return len(lat) / (time.time() - start), lat, json.loads(body)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


nodes = {"A": BenchNode("settee-groupbench-a-", binary=A), "B": BenchNode("settee-groupbench-b-", binary=B)}
try:
    for name, node in nodes.items():
        print(f"{name}: loaded {DOCS:,} docs, views built in {load(node):.1f} s", flush=True)
    print(f"\nA = {A}\nB = {B}\n{DOCS:,} docs, {RUNS} runs x {SECONDS:.0f} s per build and query, one client, "
          f"{os.cpu_count()} cores\n")
    print("| query | A req/s | A p50 / p95 ms | B req/s | B p50 / p95 ms | B/A |")
    print("|---|---|---|---|---|---|")
    for label, path in QUERIES:
        rates = {"A": [], "B": []}
        lats = {"A": [], "B": []}
        answers = {}
        for _ in range(RUNS):
            for name in ("A", "B"):
                rate, lat, answer = run(nodes[name], path)
                rates[name].append(rate)
                lats[name] += lat
                answers[name] = answer
        if answers["A"] != answers["B"]:
            print(f"!! {label}: the builds answer differently", file=sys.stderr)
        a, b = statistics.median(rates["A"]), statistics.median(rates["B"])
        print(f"| {label} | {a:,.1f} | {pct(lats['A'], 0.5):.2f} / {pct(lats['A'], 0.95):.2f} | {b:,.1f} | "
              f"{pct(lats['B'], 0.5):.2f} / {pct(lats['B'], 0.95):.2f} | {b / a:.1f}x |", flush=True)
finally:
    for node in nodes.values():
        node.stop()
