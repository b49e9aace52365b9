"""A view built over the same N documents of ~1 KB on settee and on pouchdb-server, side by side in
one run (issue 31's ">= 10x pouchdb-server's query"): `function(doc){ emit(doc.type, 1) }` with
_count, built by its first query (docs/s), then a key= query and a group=true reduce (ms, medians).
Both servers fresh on loopback with their defaults (compare.py's start_servers).
    python3 bench/view_vs_pouchdb.py [docs=50000]
Needs `npm install` in bench/ (pouchdb-server) and a built settee."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from compare import req, start_side_by_side  # noqa: E402

DOCS = int(sys.argv[1]) if len(sys.argv) > 1 else 50000
PAD = "x" * 900


def timed(server, path):
    t = time.time()
    out = req(server, "GET", path)
    return time.time() - t, out


def main():
    tmp, servers = start_side_by_side("settee-viewcmp-")
    ddoc = {"views": {"by_type": {"map": "function(doc) { emit(doc.type, 1); }", "reduce": "_count"}}}
    results = {}
    try:
        for server in ("settee", "pouchdb-server"):
            req(server, "PUT", "/vcmp")
            for b in range(0, DOCS, 1000):
                req(server, "POST", "/vcmp/_bulk_docs",
                    {"docs": [{"_id": f"d{b + i:07d}", "type": f"t{(b + i) % 10}", "pad": PAD}
                              for i in range(min(1000, DOCS - b))]})
            req(server, "PUT", "/vcmp/_design/app", ddoc)
            took, first = timed(server, "/vcmp/_design/app/_view/by_type?limit=1&reduce=false")
            assert first["total_rows"] == DOCS, first
            key = [timed(server, "/vcmp/_design/app/_view/by_type?key=%22t9%22&limit=10&reduce=false")[0]
                   for _ in range(10)]
            grouped = [timed(server, "/vcmp/_design/app/_view/by_type?group=true")[0] for _ in range(3)]
            results[server] = (DOCS / took, statistics.median(key) * 1000, statistics.median(grouped) * 1000)
            print(f"{server}: build {DOCS / took:,.0f} docs/s ({took:.1f} s); key= limit=10 (last key) "
                  f"{results[server][1]:.1f} ms; group=true {results[server][2]:.0f} ms", flush=True)
        s, p = results["settee"], results["pouchdb-server"]
        print(f"settee / pouchdb-server: build {s[0] / p[0]:.1f}x; key= {p[1] / s[1]:.1f}x faster; "
              f"group=true {p[2] / s[2]:.1f}x faster")
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait()
        os.system(f"rm -rf {tmp}")


if __name__ == "__main__":
    main()
