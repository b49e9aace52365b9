"""A JavaScript filter over _changes of 200,000 documents through one node (issue 30): rows scanned
per second with filter=ddoc/name against the same _changes unfiltered, 3 runs.
    python3 bench/js_filter.py [build/settee]"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_node import BenchNode  # noqa: E402

node = BenchNode("settee-jsfilter-")


req = node.ok


try:
    req("PUT", "/fb")
    req("PUT", "/fb/_design/app", {"filters": {"byType": "function(doc, req) { return doc.type === req.query.type; }"}})
    for b in range(200):
        req("POST", "/fb/_bulk_docs", {"docs": [{"_id": f"d{b:03d}-{i:04d}", "type": "x" if i % 3 == 0 else "y", "n": i,
                                                 "body": "lorem ipsum dolor sit amet"} for i in range(1000)]})
    for run in range(3):
        t = time.time()
        passed = len(json.loads(req("GET", "/fb/_changes?filter=app/byType&type=x"))["results"])
        filtered = time.time() - t
        t = time.time()
        req("GET", "/fb/_changes")
        plain = time.time() - t
        print(f"run {run + 1}: filter=app/byType over 200,000 changes ({passed} pass): {200000 / filtered:,.0f} rows/s; "
              f"unfiltered: {200000 / plain:,.0f} rows/s")
finally:
    node.stop()
