"""One replication, two builds of settee side by side (issue 57: the bounds must not cost the
replicator its speed): each binary runs a fresh node with its defaults; both fill a source database
with the same N documents of ~1 KB, then replicate it one-shot to a new database of the same node
(local names, create_target), the two nodes taking turns, RUNS times each. Reports docs/s (median
and runs), the ratio of the medians, and the node's peak anonymous memory (RssAnon) during each
replication.

    python3 bench/replicate_versions.py OLD_SETTEE NEW_SETTEE [docs=200000] [runs=3]

Build an older commit beside this one with `git worktree add /tmp/old <commit>` and
`cmake -S /tmp/old -B /tmp/old/build && cmake --build /tmp/old/build --target settee`."""
import base64
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

OLD, NEW = sys.argv[1], sys.argv[2]
DOCS = int(sys.argv[3]) if len(sys.argv) > 3 else 200000
RUNS = int(sys.argv[4]) if len(sys.argv) > 4 else 3
AUTH = {"Authorization": "Basic " + base64.b64encode(b"bench:bench").decode()}
PAD = "x" * 900


def req(port, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    headers = dict(AUTH)
    data = None
    if body is not None:
        data, headers["Content-Type"] = json.dumps(body), "application/json"
    conn.request(method, path, body=data, headers=headers)
    r = conn.getresponse()
    out = r.read()
    conn.close()
    return r.status, json.loads(out or b"null")


def rss_anon(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    return 0.0


def start(binary, port, tmp):
    ini = os.path.join(tmp, f"{port}.ini")
    with open(ini, "w") as f:
        f.write("[log]\nlevel = warning\n")
    proc = subprocess.Popen([binary, "--data-dir", os.path.join(tmp, str(port)), "--port", str(port), "--config", ini],
                            env=dict(os.environ, SETTEE_ADMIN="bench:bench"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            req(port, "GET", "/")
            break
        except OSError:
            time.sleep(0.05)
    req(port, "PUT", "/src")
    for b in range(0, DOCS, 5000):
        status, _ = req(port, "POST", "/src/_bulk_docs", {"docs": [{"_id": f"d{i:08d}", "n": i, "pad": PAD}
                                                                  for i in range(b, min(DOCS, b + 5000))]})
        assert status == 201, status
    return proc


def replicate(port, proc, run):
    samples, stop = [], threading.Event()

    def sample():
        while not stop.is_set():
            samples.append(rss_anon(proc.pid))
            time.sleep(0.05)
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    t = time.time()
    status, out = req(port, "POST", "/_replicate", {"source": "src", "target": f"tgt{run}", "create_target": True})
    took = time.time() - t
    stop.set()
    th.join()
    assert status == 200 and out["history"][0]["docs_written"] == DOCS, (status, out)
    return DOCS / took, max(samples)


def main():
    tmp = tempfile.mkdtemp(prefix="settee-repver-")
    nodes = {"old": (25992, start(OLD, 25992, tmp)), "new": (25993, start(NEW, 25993, tmp))}
    rates, peaks = {"old": [], "new": []}, {"old": [], "new": []}
    try:
        for run in range(RUNS):
            for name in (("old", "new") if run % 2 == 0 else ("new", "old")):
                port, proc = nodes[name]
                rate, peak = replicate(port, proc, run)
                rates[name].append(rate)
                peaks[name].append(peak)
                print(f"  run {run + 1} {name}: {rate:,.0f} docs/s, RssAnon peak {peak:.0f} MB", flush=True)
    finally:
        for _, proc in nodes.values():
            proc.terminate()
            proc.wait()
    med = {k: statistics.median(v) for k, v in rates.items()}
    for name, binary in (("old", OLD), ("new", NEW)):
        print(f"{name} ({binary}): {med[name]:,.0f} docs/s median of {', '.join(f'{r:,.0f}' for r in rates[name])}; "
              f"RssAnon peak {max(peaks[name]):.0f} MB")
    print(f"new/old: {med['new'] / med['old']:.2f}x ({DOCS:,} docs of ~1 KB, settee -> settee, local names)")


if __name__ == "__main__":
    main()
