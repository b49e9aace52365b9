"""A JavaScript filter over _changes of 200,000 documents through one node (issue 30): rows scanned
per second with filter=ddoc/name against the same _changes unfiltered, 3 runs.
    python3 bench/js_filter.py [build/settee]"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
import harness  # noqa: E402

BIN = sys.argv[1] if len(sys.argv) > 1 else "build/settee"
PORT = harness.free_port()
AUTH = "Basic " + base64.b64encode(b"bench:bench").decode()


def req(method, path, body=None):
    r = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", method=method,
                               data=None if body is None else json.dumps(body).encode(),
                               headers={"Authorization": AUTH, "Content-Type": "application/json"})
    with urllib.request.urlopen(r, timeout=600) as f:
        return f.read()


with tempfile.TemporaryDirectory() as data:
    node = subprocess.Popen([BIN, "--data-dir", data, "--port", str(PORT)], env=dict(os.environ, SETTEE_ADMIN="bench:bench"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                req("GET", "/_up")
                break
            except OSError:
                time.sleep(0.05)
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
        node.terminate()
        node.wait()
