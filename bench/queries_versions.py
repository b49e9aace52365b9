"""A view query and a _find, two builds of settee side by side (issue 50: moving the readers behind
shard_copy must not cost the queries): each binary runs a fresh node with its defaults (q=2) holding
the same N documents of ~1 KB, a design document with one view and a JSON index on `age`; then, the
two nodes taking turns RUNS times, C clients each send REQUESTS requests of one kind on kept-open
connections: a view query (limit 20 from a random key), a _find on the index (equality on `age`,
limit 20) and a _find no index serves (`k` from a random point in the first tenth, a `$not`: a scan
of up to N/10 documents through the selector's evaluation; a tenth as many requests). Reports per build the median over runs of each run's req/s and p95 latency (ms), and the
ratio of the medians (new / old).

    python3 bench/queries_versions.py OLD_SETTEE NEW_SETTEE [docs=20000] [runs=5]

(An older build: as bench/replicate_versions.py says.)"""
import base64
import http.client
import json
import os
import random
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_node import BenchNode  # noqa: E402

OLD, NEW = sys.argv[1], sys.argv[2]
DOCS = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
RUNS = int(sys.argv[4]) if len(sys.argv) > 4 else 5
CLIENTS, REQUESTS = 8, 300
KINDS = ("view", "find", "scan")
HEADERS = {"Authorization": "Basic " + base64.b64encode(b"bench:bench").decode(), "Content-Type": "application/json"}
PAD = "x" * 900


def request(conn, method, path, body=None):
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=HEADERS)
    r = conn.getresponse()
    out = r.read()
    if r.status >= 400:
        raise RuntimeError(f"{method} {path}: {r.status} {out[:200]!r}")
    return json.loads(out)


def fill(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    request(c, "PUT", "/db")
    for start_at in range(0, DOCS, 1000):
        docs = [{"_id": f"d{i:07d}", "age": i % 100, "k": i, "pad": PAD} for i in range(start_at, min(DOCS, start_at + 1000))]
        request(c, "POST", "/db/_bulk_docs", {"docs": docs})
    request(c, "PUT", "/db/_design/v", {"views": {"by_k": {"map": "function(doc){ emit(doc.k, null); }"}}})
    request(c, "POST", "/db/_index", {"index": {"fields": ["age"]}, "name": "age", "ddoc": "age"})
    request(c, "GET", "/db/_design/v/_view/by_k?limit=1")  # built before the runs
    request(c, "POST", "/db/_find", {"selector": {"age": 1}, "limit": 1})


def one_run(port, kind):
    latencies, lock = [], threading.Lock()

    def client(seed):
        rnd = random.Random(seed)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        mine = []
        for _ in range(REQUESTS):
            t = time.perf_counter()
            if kind == "view":
                request(c, "GET", f"/db/_design/v/_view/by_k?limit=20&startkey={rnd.randrange(DOCS)}")
            elif kind == "scan":
                if len(mine) >= REQUESTS // 10:
                    break
                request(c, "POST", "/db/_find", {"selector": {"k": {"$gte": rnd.randrange(DOCS // 10)},
                                                              "$not": {"age": {"$in": [100, 101]}}}, "limit": 20})
            else:
                request(c, "POST", "/db/_find", {"selector": {"age": rnd.randrange(100)}, "limit": 20})
            mine.append(time.perf_counter() - t)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    latencies.sort()
    return len(latencies) / wall, latencies[int(0.95 * (len(latencies) - 1))] * 1000


def main():
    nodes = {}
    try:
        for name, binary in (("old", OLD), ("new", NEW)):
            nodes[name] = BenchNode("queries-versions-", "[log]\nlevel = warning\n", binary)
            nodes[name].request("GET", "/")  # waits for the start
            fill(nodes[name].port)
        results = {(n, k): [] for n in nodes for k in KINDS}
        for _ in range(RUNS):
            for kind in KINDS:
                for name in ("old", "new"):
                    results[(name, kind)].append(one_run(nodes[name].port, kind))
        print(f"{DOCS} docs, {CLIENTS} clients x {REQUESTS} requests, {RUNS} runs taking turns, {os.cpu_count()} cores")
        for kind in KINDS:
            med = {}
            for name in ("old", "new"):
                runs = results[(name, kind)]
                med[name] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
                print(f"  {kind:5s} {name}: {med[name][0]:8.0f} req/s  p95 {med[name][1]:6.2f} ms   runs: " +
                      ", ".join(f"{r[0]:.0f}/{r[1]:.1f}" for r in runs))
            print(f"  {kind:5s} new/old: req/s {med['new'][0] / med['old'][0]:.2f}x, p95 {med['new'][1] / med['old'][1]:.2f}x")
    finally:
        for node in nodes.values():
            node.stop()


if __name__ == "__main__":
    main()
