"""A map view's build at q=2 (the default), two binaries taking turns (A then B, RUNS times): N
documents of ~1 KB, `emit(doc.type, 1)` with _count, built by its first query; docs/s and medians.
    python3 bench/view_build_ab.py A/settee B/settee [docs=200000] [runs=3]"""
import os
import statistics
import sys
import time
sys.path.insert(0, os.path.dirname(__file__))
from bench_node import BenchNode
A, B = sys.argv[1], sys.argv[2]
N = int(sys.argv[3]) if len(sys.argv) > 3 else 200000
RUNS = int(sys.argv[4]) if len(sys.argv) > 4 else 3
PAD = "x" * 900
res = {"A": [], "B": []}
for run in range(RUNS):
    for name, binary in (("A", A), ("B", B)):
        node = BenchNode("vbab-", binary=binary)
        try:
            req = node.ok
            req("PUT", "/vb?q=2")
            for b in range(0, N, 1000):
                req("POST", "/vb/_bulk_docs", {"docs": [{"_id": f"d{b + i:07d}", "type": f"t{(b + i) % 10}", "n": b + i, "pad": PAD} for i in range(1000)]})
            req("PUT", "/vb/_design/app", {"views": {"by_type": {"map": "function(doc) { emit(doc.type, 1); }", "reduce": "_count"}}})
            t = time.time()
            req("GET", "/vb/_design/app/_view/by_type?limit=1&reduce=false")
            res[name].append(N / (time.time() - t))
            print(name, run, f"{res[name][-1]:,.0f} docs/s", flush=True)
        finally:
            node.stop()
for k in res: print(k, "median", f"{statistics.median(res[k]):,.0f}", [f"{x:,.0f}" for x in res[k]])
