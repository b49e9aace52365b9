"""A map view built over N documents of ~1 KB through one node with the default configuration
(issue 31): `function(doc){ emit(doc.type, 1) }` with _count, built by its first query (docs/s),
at q=1, 2 (the default) and 8 side by side in one run; then key= queries (one client, and 32 at once through
settee_loadgen: p50/p99), a group=true reduce, ungrouped _sum reduces of the whole view and
of a key range (ms, medians), and the whole view paged 1,000 rows at a time (rows/s; the first
pages against the deepest).
    python3 bench/view_build.py [build/settee] [docs=200000]
The loadgen is build/settee_loadgen (LOADGEN= another), the same client for any server binary;
when `wrk` is installed (apt-get install wrk) the key= load runs through it too."""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_node import BenchNode  # noqa: E402

DOCS = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
PAD = "x" * 900
node = BenchNode("settee-viewbench-")


req = node.ok


def timed(path):
    t = time.time()
    body = req("GET", path)
    return time.time() - t, json.loads(body)


try:
    ddoc = {"views": {"by_type": {"map": "function(doc) { emit(doc.type, 1); }", "reduce": "_count"},
                      "sums": {"map": "function(doc) { emit(doc.type, doc.n); }", "reduce": "_sum"}}}
    loadgen = os.environ.get("LOADGEN", os.path.join(os.path.dirname(__file__), "..", "build", "settee_loadgen"))
    for q in (1, 2, 8):  # 2: the default
        db = f"vb{q}"
        req("PUT", f"/{db}?q={q}")
        for b in range(0, DOCS, 1000):
            req("POST", f"/{db}/_bulk_docs", {"docs": [{"_id": f"d{b + i:07d}", "type": f"t{(b + i) % 10}", "n": b + i,
                                                        "pad": PAD} for i in range(min(1000, DOCS - b))]})
        req("PUT", f"/{db}/_design/app", ddoc)
        took, first = timed(f"/{db}/_design/app/_view/by_type?limit=1&reduce=false")
        print(f"q={q}: built over {DOCS:,} docs in {took:.1f} s: {DOCS / took:,.0f} docs/s "
              f"(total_rows {first['total_rows']:,})")
        # The first key (offset 0) and the last (offset 90%): `offset` is counted by a scan today.
        first_key = [timed(f"/{db}/_design/app/_view/by_type?key=%22t0%22&limit=10&reduce=false")[0] for _ in range(20)]
        last_key = [timed(f"/{db}/_design/app/_view/by_type?key=%22t9%22&limit=10&reduce=false")[0] for _ in range(20)]
        grouped = [timed(f"/{db}/_design/app/_view/by_type?group=true")[0] for _ in range(3)]
        print(f"q={q}: key= limit=10 median {statistics.median(first_key) * 1000:.1f} ms (first key), "
              f"{statistics.median(last_key) * 1000:.1f} ms (last key); "
              f"group=true over {DOCS:,} rows median {statistics.median(grouped) * 1000:.0f} ms")
        timed(f"/{db}/_design/app/_view/sums?limit=1&reduce=false")  # built before it is timed
        whole = [timed(f"/{db}/_design/app/_view/sums")[0] for _ in range(10)]
        part = [timed(f"/{db}/_design/app/_view/sums?startkey=%22t3%22&endkey=%22t6%22")[0] for _ in range(10)]
        print(f"q={q}: _sum group=false median {statistics.median(whole) * 1000:.1f} ms (whole view), "
              f"{statistics.median(part) * 1000:.1f} ms (keys t3..t6, 40% of the rows)")
        run = subprocess.run([loadgen, "--url", f"http://127.0.0.1:{node.port}", "--auth", "bench:bench", "--db", db,
                              "--workload", "path", "--docs", "10", "--concurrency", "32", "--seconds", "5",
                              "--path", f"/{db}/_design/app/_view/by_type?key=%22t%K%22&limit=10&reduce=false"],
                             capture_output=True, text=True, timeout=120)
        print(f"q={q}: key= limit=10 at c=32 for 5 s: {run.stdout.strip()} {run.stderr.strip()[:200]}")
        if shutil.which("wrk"):
            # The same load from wrk (2 threads, epoll): no client thread per connection waiting for
            # a core, so its tail is the server's more than the client's.
            with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as lua:
                lua.write('wrk.headers["Authorization"] = "Basic YmVuY2g6YmVuY2g="\n'
                          'request = function() return wrk.format("GET", "/' + db + '/_design/app/_view/by_type'
                          '?key=%22t" .. math.random(0, 9) .. "%22&limit=10&reduce=false") end\n')
            out = subprocess.run(["wrk", "-t2", "-c32", "-d5s", "--latency", "-s", lua.name,
                                  f"http://127.0.0.1:{node.port}"], capture_output=True, text=True, timeout=60).stdout
            os.unlink(lua.name)
            lat = dict(re.findall(r"^\s+(50|90|99)%\s+(\S+)$", out, re.M))
            rate = re.search(r"Requests/sec:\s+(\S+)", out)
            print(f"q={q}: key= limit=10 at c=32 for 5 s through wrk: {rate.group(1) if rate else '?'} req/s, "
                  f"p50 {lat.get('50')}, p90 {lat.get('90')}, p99 {lat.get('99')}")
        # The whole view paged as CouchDB's docs advise: limit=1001, the next page from the 1001st
        # row (startkey + startkey_docid), so no page skips rows.
        pages, rows, start = [], 0, ""
        t0 = time.time()
        while True:
            took, page = timed(f"/{db}/_design/app/_view/by_type?reduce=false&limit=1001{start}")
            pages.append(took)
            rows += min(len(page["rows"]), 1000)
            if len(page["rows"]) <= 1000:
                break
            nxt = page["rows"][1000]
            start = f"&startkey=%22{nxt['key']}%22&startkey_docid={nxt['id']}"
        whole_s = time.time() - t0
        print(f"q={q}: paged {rows:,} rows in {len(pages)} pages of 1000: {rows / whole_s:,.0f} rows/s; "
              f"page median {statistics.median(pages) * 1000:.1f} ms, first 5 {statistics.median(pages[:5]) * 1000:.1f} ms, "
              f"last 5 (offset {rows - 5000:,}+) {statistics.median(pages[-5:]) * 1000:.1f} ms")
finally:
    node.stop()
