"""How cost grows with the data (issue 56 point 5): one node with its defaults, one database per size
N (q=2), N documents of ~1 KB loaded by settee_loadgen's _bulk_docs (2 clients), then, for each N:

  load          docs/s of the load
  disk          the database's `sizes.file` and the node's data directory (du), MB
  rss, heap     the node's RSS (VmRSS: with the mapped file pages) and heap (RssAnon) after the load
                and after the indexes below, MB
  get           GET of a random document, one client, kept connection: p50 ms
  all_docs      ?limit=100 at the start and from a key in the middle: p50 ms; the whole read: rows/s
  changes       ?limit=100 from 0 and from the middle: p50 ms; the whole read: rows/s
  view          build of `emit(doc.n % 1000, null)` + _count (first query): s and docs/s; key= limit=10,
                group=true (1,000 groups), reduce over a key range: p50 ms
  mango         build of a JSON index on `n` (first _find): s; a selector with $gt limit=25: p50 ms

    python3 bench/growth.py [build/settee] [sizes=10000,100000,1000000]

Every loop is bounded: the sizes given, 50 samples a latency."""
import json
import os
import random
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_node import BenchNode, KeptConnection, du_mb, proc_status  # noqa: E402

SIZES = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "10000,100000,1000000").split(",")]
LOADGEN = os.environ.get("LOADGEN", os.path.join(os.path.dirname(__file__), "..", "build", "settee_loadgen"))
SAMPLES = 50
node = BenchNode("settee-growth-")
conn = KeptConnection(node.port)  # opened again after a long load (the node closes idle ones)


def get(path):
    """(seconds, body) on one kept connection."""
    status, body, seconds = conn.request("GET", path)
    if status >= 400:
        raise RuntimeError(f"GET {path}: {status} {body[:200]!r}")
    return seconds, body


def built(path, ask=None, limit_s=7200):
    """Seconds until the first query of a new index answers: a build longer than the node's
    request_timeout_ms answers 500 `timeout` and goes on (docs/api.md), so it is asked again."""
    t = time.perf_counter()
    while True:
        try:
            if ask:
                ask()
            else:
                get(path)
            return time.perf_counter() - t
        except Exception as e:  # noqa: BLE001 (the 500 timeout, whoever raised it)
            if "timeout" not in str(e) or time.perf_counter() - t > limit_s:
                raise


def p50_ms(paths):
    return statistics.median(get(p)[0] for p in paths) * 1000


def rss_mb(field="RssAnon"):
    """The node's resident memory of one kind: RssAnon (its heap) or VmRSS (also the pages of its
    LMDB files mapped in, which the kernel takes back when it needs them)."""
    return proc_status(node.proc.pid, field) / 1024


def doc_id(i):
    return f"doc{1000000000 + i:09d}"


def measure(n):
    db = f"g{n}"
    node.ok("PUT", f"/{db}")
    line = subprocess.run([LOADGEN, "--url", f"http://127.0.0.1:{node.port}", "--auth", "bench:bench", "--db", db,
                           "--workload", "bulk", "--concurrency", "2", "--docs", str(n)],
                          capture_output=True, text=True, check=True).stdout
    load_rate = float(line.split("rate=")[1].split()[0])
    info = json.loads(get(f"/{db}")[1])
    out = {"docs": n, "load docs/s": load_rate, "file MB": info["sizes"]["file"] / 1e6, "data dir MB": du_mb(node.data),
           "rss after load MB": rss_mb("VmRSS"), "heap after load MB": rss_mb()}
    rnd = random.Random(n)
    out["get p50 ms"] = p50_ms(f"/{db}/{doc_id(rnd.randrange(n))}" for _ in range(SAMPLES))
    middle = json.dumps(doc_id(n // 2))
    out["all_docs first 100 p50 ms"] = p50_ms(f"/{db}/_all_docs?limit=100" for _ in range(SAMPLES))
    out["all_docs middle 100 p50 ms"] = p50_ms(f"/{db}/_all_docs?limit=100&startkey={middle}" for _ in range(SAMPLES))
    took, _ = get(f"/{db}/_all_docs")
    out["all_docs whole rows/s"] = n / took
    seq = json.loads(get(f"/{db}/_changes?limit={n // 2}")[1])["last_seq"]  # a seq in the middle
    out["changes first 100 p50 ms"] = p50_ms(f"/{db}/_changes?limit=100" for _ in range(SAMPLES))
    out["changes middle 100 p50 ms"] = p50_ms(f"/{db}/_changes?limit=100&since={seq}" for _ in range(SAMPLES))
    took, _ = get(f"/{db}/_changes")
    out["changes whole rows/s"] = n / took
    node.ok("PUT", f"/{db}/_design/g", {"views": {"mod": {"map": "function(doc){ emit(doc.n % 1000, null); }",
                                                              "reduce": "_count"}}})
    took = built(f"/{db}/_design/g/_view/mod?limit=1&reduce=false")
    out["view build s"], out["view build docs/s"] = took, n / took
    view = f"/{db}/_design/g/_view/mod"
    out["view key= limit=10 p50 ms"] = p50_ms(f"{view}?key={rnd.randrange(1000)}&limit=10&reduce=false"
                                              for _ in range(SAMPLES))
    out["view group=true p50 ms"] = p50_ms(f"{view}?group=true" for _ in range(SAMPLES // 5))
    out["view range reduce p50 ms"] = p50_ms(f"{view}?startkey=100&endkey=400" for _ in range(SAMPLES))
    node.ok("POST", f"/{db}/_index", {"index": {"fields": ["n"]}, "name": "by_n", "ddoc": "by_n"})
    find = {"selector": {"n": {"$gt": 1000000000 + n // 2}}, "limit": 25, "use_index": "by_n"}
    out["mango build s"] = built(None, lambda: node.ok("POST", f"/{db}/_find", find))
    samples = []
    for _ in range(SAMPLES):
        t = time.perf_counter()
        node.ok("POST", f"/{db}/_find", find)
        samples.append(time.perf_counter() - t)
    out["mango $gt limit=25 p50 ms"] = statistics.median(samples) * 1000
    out["rss after indexes MB"] = rss_mb("VmRSS")
    out["heap after indexes MB"] = rss_mb()
    out["data dir after indexes MB"] = du_mb(node.data)
    return out


try:
    rows = []
    for n in SIZES:
        rows.append(measure(n))
        print(json.dumps(rows[-1]), flush=True)
    keys = list(rows[0].keys())
    print("\n| measure | " + " | ".join(f"{r['docs']:,}" for r in rows) + " |")
    print("|---|" + "---|" * len(rows))
    for k in keys[1:]:
        print(f"| {k} | " + " | ".join(f"{r[k]:,.2f}" if r[k] < 100 else f"{r[k]:,.0f}" for r in rows) + " |")
finally:
    node.stop()
