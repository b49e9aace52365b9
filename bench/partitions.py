"""A partition's query against the same query over the whole database (issue 35 point 2), on one
node with the default configuration and Q ranges, side by side in one run:

    python3 bench/partitions.py [BINARY]      (PARTS=200 PER=500 Q=8 QUERIES=1000 RUNS=3 by default)

Loads PARTS partitions of PER documents (~200 bytes) into a partitioned database, then RUNS times,
alternating, QUERIES requests each on one kept-alive connection, a random partition each time:
`/db/_partition/<p>/_all_docs?limit=100` (read from the partition's one range) and the global
`/db/_all_docs?start_key="<p>:"&end_key="<p>;"&limit=100` (the same rows, asked of every range);
then the same for a view emitting [partition, n]: `/db/_partition/<p>/_design/p/_view/v?limit=100`
(a partitioned view: one range's index) against a global design document's same view
(options.partitioned false) asked `startkey=["<p>"]&endkey=["<p>",{}]&limit=100` (the same rows,
from every range's index). Prints req/s and median/p95 latency of each, and the ratios. Bounded
by QUERIES and RUNS."""
import base64
import http.client
import os
import random
import statistics
import time
import urllib.parse

from bench_node import BenchNode, cpu_seconds

PARTS, PER, Q, QUERIES, RUNS = (int(os.environ.get(k, d)) for k, d in
                                (("PARTS", "200"), ("PER", "500"), ("Q", "8"), ("QUERIES", "1000"), ("RUNS", "3")))
node = BenchNode("settee-partitions-")
AUTH = {"Authorization": "Basic " + base64.b64encode(b"bench:bench").decode()}


def cpu_s():
    """The node process's user + system CPU seconds so far."""
    return cpu_seconds(node.proc.pid)


def run(paths):
    """Latencies (s) of GET `paths` in order on one connection."""
    conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=60)
    out = []
    for p in paths:
        t = time.perf_counter()
        conn.request("GET", p, headers=AUTH)
        r = conn.getresponse()
        body = r.read()
        out.append(time.perf_counter() - t)
        assert r.status == 200 and body.count(b'"id":') == min(100, PER), (p, r.status, body[:200])
    conn.close()
    return out


try:
    node.ok("PUT", f"/pdb?partitioned=true&q={Q}")
    pad = "x" * 150
    docs = [{"_id": f"part{p:04d}:{i:05d}", "n": i, "pad": pad} for p in range(PARTS) for i in range(PER)]
    for start in range(0, len(docs), 5000):
        node.ok("POST", "/pdb/_bulk_docs", {"docs": docs[start:start + 5000]})
    view = {"v": {"map": "function(d){ emit([d._id.split(':')[0], d.n], null); }"}}
    node.ok("PUT", "/pdb/_design/p", {"views": view})
    node.ok("PUT", "/pdb/_design/g", {"views": view, "options": {"partitioned": False}})
    t = time.perf_counter()
    node.ok("GET", "/pdb/_partition/part0000/_design/p/_view/v?limit=1")
    node.ok("GET", "/pdb/_design/g/_view/v?limit=1")
    for p in range(PARTS):  # every range's partitioned index built before anything is timed
        node.ok("GET", f"/pdb/_partition/part{p:04d}/_design/p/_view/v?limit=1")
    print(f"views built in {time.perf_counter() - t:.1f} s", flush=True)
    rng = random.Random(7)
    results = {"partition": [], "global": [], "view-partition": [], "view-global": []}
    for run_no in range(RUNS):
        parts = [f"part{rng.randrange(PARTS):04d}" for _ in range(QUERIES)]
        shapes = {
            "partition": [f"/pdb/_partition/{p}/_all_docs?limit=100" for p in parts],
            "global": ["/pdb/_all_docs?" + urllib.parse.urlencode({"start_key": f'"{p}:"', "end_key": f'"{p};"',
                                                                    "limit": 100}) for p in parts],
            "view-partition": [f"/pdb/_partition/{p}/_design/p/_view/v?limit=100" for p in parts],
            "view-global": ["/pdb/_design/g/_view/v?" + urllib.parse.urlencode(
                {"startkey": f'["{p}"]', "endkey": f'["{p}",{{}}]', "limit": 100}) for p in parts],
        }
        order = ("partition", "global", "view-partition", "view-global")
        for name in (order if run_no % 2 == 0 else tuple(reversed(order))):
            cpu = cpu_s()
            lat = sorted(run(shapes[name]))
            cpu_us = (cpu_s() - cpu) / QUERIES * 1e6
            total = sum(lat)
            results[name].append((QUERIES / total, lat[len(lat) // 2] * 1000, lat[int(len(lat) * 0.95)] * 1000, cpu_us))
            print(f"run {run_no + 1} {name:14s} {QUERIES / total:8.0f} req/s  median {lat[len(lat) // 2] * 1000:6.2f} ms"
                  f"  p95 {lat[int(len(lat) * 0.95)] * 1000:6.2f} ms  node CPU {cpu_us:6.0f} us/req", flush=True)
    print(f"\n{PARTS} partitions x {PER} docs, q={Q}, limit=100, medians of {RUNS} runs:")
    for name, rows in results.items():
        print(f"  {name:14s} {statistics.median(r[0] for r in rows):8.0f} req/s  median "
              f"{statistics.median(r[1] for r in rows):6.2f} ms  p95 {statistics.median(r[2] for r in rows):6.2f} ms"
              f"  node CPU {statistics.median(r[3] for r in rows):6.0f} us/req")
    for a, b in (("partition", "global"), ("view-partition", "view-global")):
        ratio = statistics.median(r[0] for r in results[a]) / statistics.median(r[0] for r in results[b])
        cpu = statistics.median(r[3] for r in results[b]) / statistics.median(r[3] for r in results[a])
        print(f"  {a} / {b} throughput: {ratio:.1f}x; node CPU per request: 1/{cpu:.1f}")
    t = time.perf_counter()
    info = node.ok("GET", "/pdb/_partition/part0001")
    print(f"  partition info: {(time.perf_counter() - t) * 1000:.1f} ms ({info.decode()})")
finally:
    node.stop()
