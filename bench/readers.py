"""The coordinator's readers side by side (issue 29 point 1): two builds, each a 3-node cluster on
this machine (default configuration), the same documents in a database of q=8 shards, read through
the first node: _all_docs and _changes, a first page (limit=100) and the whole database in pages
of 1,000. Builds take turns, RUNS times; medians of the runs, and the ratio NEW/OLD.

    python3 bench/readers.py OLD_BINARY [NEW_BINARY]      (DOCS=20000 RUNS=3 N=1 NODES=3 by default)

N=1: each range has one copy, on one of the three nodes, so the first node reads 2 of 3 ranges
over RPC (the fan-out's case); N=3: every range has a copy on every node (all reads local).
NODES=1: one node each (no cluster). Bounded by DOCS, RUNS and the fixed request counts.
"""
import json
import os
import statistics
import sys
import time
import urllib.parse

from bench_node import BenchNode, bench_cluster

OLD = sys.argv[1]
NEW = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "build", "settee")
DOCS, RUNS, N, NODES = (int(os.environ.get(k, d)) for k, d in (("DOCS", "20000"), ("RUNS", "3"), ("N", "1"), ("NODES", "3")))
FIRST_PAGES = 200


def load(node):
    assert node.request("PUT", f"/readers?q=8&n={N}")[0] == 201
    for start in range(0, DOCS, 2000):
        docs = [{"_id": f"d{i:08d}", "n": i} for i in range(start, min(DOCS, start + 2000))]
        st, body = node.request("POST", "/readers/_bulk_docs", {"docs": docs})
        assert st == 201, (st, body[:200])


def first_pages(node, path):
    """Median latency (ms) of FIRST_PAGES requests of one page."""
    times = []
    for _ in range(FIRST_PAGES):
        t0 = time.monotonic()
        st, body = node.request("GET", path)
        times.append((time.monotonic() - t0) * 1000)
        assert st == 200, (path, st, body[:200])
    return statistics.median(times)


def all_docs_whole(node):
    """Rows/s reading _all_docs in pages of 1,000 (startkey of the last row + skip=1)."""
    n, start, t0 = 0, None, time.monotonic()
    while True:
        q = "limit=1000" + ("" if start is None else "&skip=1&startkey=" + urllib.parse.quote(json.dumps(start)))
        st, body = node.request("GET", "/readers/_all_docs?" + q)
        assert st == 200, (st, body[:200])
        rows = json.loads(body)["rows"]
        n += len(rows)
        if len(rows) < 1000:
            break
        start = rows[-1]["id"]
    assert n == DOCS, n
    return n / (time.monotonic() - t0)


def changes_whole(node):
    """Rows/s reading _changes in pages of 1,000 (since the last page's last_seq)."""
    n, since, t0 = 0, "0", time.monotonic()
    while True:
        st, body = node.request("GET", "/readers/_changes?limit=1000&since=" + urllib.parse.quote(since))
        assert st == 200, (st, body[:200])
        page = json.loads(body)
        n += len(page["results"])
        since = page["last_seq"]
        if len(page["results"]) < 1000:
            break
    assert n == DOCS, n
    return n / (time.monotonic() - t0)


WORKLOADS = [
    ("_all_docs first page (ms)", lambda nd: first_pages(nd, "/readers/_all_docs?limit=100")),
    ("_changes first page (ms)", lambda nd: first_pages(nd, "/readers/_changes?limit=100")),
    ("_all_docs whole db (rows/s)", all_docs_whole),
    ("_changes whole db (rows/s)", changes_whole),
]

clusters = {}
try:
    for side, binary in (("old", OLD), ("new", NEW)):
        prefix = f"settee-readers-{side}-"
        clusters[side] = [BenchNode(prefix, None, binary)] if NODES == 1 else bench_cluster(prefix, NODES, binary)[0]
        load(clusters[side][0])
    figures = {(w, side): [] for w, _ in WORKLOADS for side in clusters}
    for run in range(RUNS):
        for name, work in WORKLOADS:
            for side in ("old", "new"):
                figures[(name, side)].append(work(clusters[side][0]))
    print(f"{DOCS} documents, q=8, n={N}, {NODES} nodes, {os.cpu_count()} cores, medians of {RUNS} runs (old | new | new/old):")
    for name, _ in WORKLOADS:
        old, new = (statistics.median(figures[(name, s)]) for s in ("old", "new"))
        print(f"  {name:30s} {old:10.1f} {new:10.1f}   {new / old:5.2f}")
finally:
    for nodes in clusters.values():
        for nd in nodes:
            nd.stop()
