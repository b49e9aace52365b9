"""RSS of one node (default configuration) before, during and after N databases come and go.

    python3 bench/rss_after_databases.py [BINARY]      (N=2000 ROUNDS=1 IDLE=65 by default)

Creates N databases with one document each, deletes them, repeats ROUNDS times, waits IDLE seconds
and prints RSS from /proc (MB) and the process's thread count. Every loop is bounded by N and ROUNDS.
"""
import base64
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
import harness  # noqa: E402

binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "build", "settee")
N, ROUNDS, IDLE = (int(os.environ.get(k, d)) for k, d in (("N", "2000"), ("ROUNDS", "1"), ("IDLE", "65")))
port = harness.free_port()
data = tempfile.mkdtemp(prefix="settee-rss-")
env = dict(os.environ, SETTEE_ADMIN="bench:bench", SETTEE_CLUSTER_SECRET="bench-cluster-secret-0123456789")
node = subprocess.Popen([binary, "--data-dir", data, "--port", str(port)], env=env,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
auth = "Basic " + base64.b64encode(b"bench:bench").decode()


def req(method, path, body=None):
    for _ in range(100):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request(method, path, body=None if body is None else json.dumps(body),
                      headers={"Authorization": auth, "Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            c.close()
            return r.status
        except ConnectionRefusedError:
            time.sleep(0.1)
    raise RuntimeError("the node did not start")


def rss():
    """VmRSS in MB, and its anonymous (heap, stacks) and file-backed (LMDB maps, binary) parts."""
    return (f"{status('VmRSS') / 1024:.1f} MB (anon {status('RssAnon') / 1024:.1f}, "
            f"file {status('RssFile') / 1024:.1f})")


def status(field):
    with open(f"/proc/{node.pid}/status") as f:
        line = next(line for line in f if line.startswith(field + ":"))
    return int(line.split()[1])


try:
    req("GET", "/_up")
    time.sleep(1)
    print(f"fresh: {rss()}, {status('Threads')} threads", flush=True)
    for r in range(ROUNDS):
        for i in range(N):
            assert req("PUT", f"/m{i}") == 201
            assert req("PUT", f"/m{i}/d", {"i": i}) == 201
        print(f"round {r + 1} with {N} databases: {rss()}", flush=True)
        for i in range(N):
            assert req("DELETE", f"/m{i}") == 200
        print(f"round {r + 1} after deleting them: {rss()}", flush=True)
    time.sleep(IDLE)
    print(f"after {IDLE} s idle: {rss()}, {status('Threads')} threads")
finally:
    node.terminate()
    node.wait()
    subprocess.run(["rm", "-rf", data])
