"""Full-text queries of two builds side by side (issue 54 point 5): two nodes, binaries A and B, the
same N documents as bench/search.py (a title of 8 words, a body of 150 from a Zipf vocabulary of
20,000, a genre and a year) and the same Nouveau index, built by a first query on each; then for
each query path settee_loadgen at c=32 for 4 s on A, then on B, RUNS times. Prints each build's
rate, and per path the medians of req/s, p50 and p95 and of the per-run ratios B/A.
    python3 bench/search_ab.py A B [docs=200000] [runs=5] [path ...]
A path's %K is a word number: below 20,000 (any word), or below 100 after "w1" (w10..w19, w100..w199)."""
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_node import BenchNode  # noqa: E402
from zipf_text import NOUVEAU_INDEX as INDEX, ZipfText  # noqa: E402

A, B = sys.argv[1], sys.argv[2]
DOCS = int(sys.argv[3]) if len(sys.argv) > 3 else 200000
RUNS = int(sys.argv[4]) if len(sys.argv) > 4 else 5
LOADGEN = os.environ.get("LOADGEN", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "settee_loadgen"))
PATHS = sys.argv[5:] or ["/fts/_design/s/_nouveau/idx?q=w%K&limit=25"]
nodes = [BenchNode("settee-ab-", binary=A), BenchNode("settee-ab-", binary=B)]
try:
    zipf = ZipfText(20000)
    for n in nodes:
        n.ok("PUT", "/fts?q=2")
    for b in range(0, DOCS, 1000):
        docs = [zipf.doc(b + i) for i in range(min(1000, DOCS - b))]
        for n in nodes:
            n.ok("POST", "/fts/_bulk_docs", {"docs": docs})
    for n in nodes:
        n.ok("PUT", "/fts/_design/s", {"nouveau": {"idx": {"index": INDEX}}})
        t = time.time()
        n.ok("GET", "/fts/_design/s/_nouveau/idx?q=w1&limit=1")
        print(f"build {DOCS / (time.time() - t):,.0f} docs/s", flush=True)
    for p in PATHS:
        keys = "100" if "q=w1%K" in p else "20000"
        rates = [[], []]
        for r in range(RUNS):
            for k, n in enumerate(nodes):
                out = subprocess.run([LOADGEN, "--url", f"http://127.0.0.1:{n.port}", "--auth", "bench:bench",
                                      "--db", "fts", "--workload", "path", "--docs", keys, "--concurrency", "32", "--seconds", "4",
                                      "--path", p], capture_output=True, text=True).stdout
                f = dict(x.split("=") for x in out.split())
                rates[k].append((float(f["rate"]), float(f["p50_ms"]), float(f["p95_ms"])))
        ratios = [b[0] / a[0] for a, b in zip(*rates)]

        def med(k, i):
            return statistics.median(x[i] for x in rates[k])
        print(f"{p}: A {med(0,0):,.0f} req/s p50 {med(0,1):.2f} p95 {med(0,2):.2f} | B {med(1,0):,.0f} req/s p50 {med(1,1):.2f} p95 {med(1,2):.2f} | B/A median {statistics.median(ratios):.3f} ({' '.join(f'{x:.2f}' for x in ratios)})", flush=True)
finally:
    for n in nodes:
        n.stop()
