"""Replication (issue 33), side by side in one run, N documents of ~1 KB, both servers fresh on
loopback with their defaults (compare.py's start_servers):

  settee -> settee          POST settee/_replicate, local names, create_target
  settee -> pouchdb-server  POST settee/_replicate to a URL
  pouchdb-server -> settee  POST settee/_replicate from that copy ("and back")
  pouchdb-server pulls      POST pouchdb-server/_replicate from settee: its own replicator, the anchor
  since_seq=<time>          the last 5% of the history, written after a second boundary, by time
  continuous lag            a continuous settee -> settee replication under 500 writes/s for 20 s:
                            from each write's 201 to its row in the target's feed, p50/p99

Each run also prints how much of a core each server used meanwhile (which side bounds it).

    python3 bench/replicate.py [docs=200000] [runs=3]
    python3 bench/replicate.py lag [rate]   (the continuous lag alone, at rate writes/s: 500)
Needs `npm install` in bench/ (pouchdb-server) and a built settee."""
import http.client
import json
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_node import cpu_seconds  # noqa: E402
from compare import AUTH, PORTS, req, start_side_by_side  # noqa: E402

LAG_ONLY = sys.argv[1:2] == ["lag"]
LAG_RATE = int(sys.argv[2]) if LAG_ONLY and len(sys.argv) > 2 else 500
DOCS = int(sys.argv[1]) if len(sys.argv) > 1 and not LAG_ONLY else 200000
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 and not LAG_ONLY else 3
PAD = "x" * 900
SETTEE_URL = f"http://bench:bench@127.0.0.1:{PORTS['settee']}"
POUCH_URL = f"http://127.0.0.1:{PORTS['pouchdb-server']}"


def fill(server, db, start, count):
    for b in range(start, start + count, 1000):
        req(server, "POST", f"/{db}/_bulk_docs",
            {"docs": [{"_id": f"d{i:07d}", "n": i, "pad": PAD} for i in range(b, min(start + count, b + 1000))]})


def timed(server, body, pids=None):
    """(seconds, answer, each server's share of a core meanwhile) of one POST /_replicate."""
    pids = pids or {}
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    t = time.time()
    out = req(server, "POST", "/_replicate", body, timeout=7200)
    dt = time.time() - t
    return dt, out, {name: (cpu_seconds(pid) - before[name]) / dt for name, pid in pids.items()}


def written(out):
    return out["history"][0]["docs_written"] if "history" in out else out.get("docs_written")


def lag_run(seconds=20, rate=500):
    """Continuous settee -> settee under `rate` writes/s: lag from each 201 to the target's row."""
    req("settee", "PUT", "/lagsrc")
    req("settee", "POST", "/_replicate", {"source": "lagsrc", "target": "lagtgt", "create_target": True,
                                          "continuous": True})
    acked, seen, stop = {}, {}, threading.Event()

    def follow():
        conn = http.client.HTTPConnection("127.0.0.1", PORTS["settee"], timeout=60)
        while True:
            try:
                conn.request("GET", "/lagtgt/_changes?feed=continuous&heartbeat=500&since=0", headers=AUTH["settee"])
                break
            except OSError:
                time.sleep(0.05)
        resp = conn.getresponse()
        while not stop.is_set():
            line = resp.readline()
            if not line:
                break
            if line.strip():
                row = json.loads(line)
                if "id" in row:
                    seen.setdefault(row["id"], time.time())

    while req("settee", "GET", "/_all_dbs").count("lagtgt") == 0:
        time.sleep(0.05)
    t = threading.Thread(target=follow, daemon=True)
    t.start()
    conn = http.client.HTTPConnection("127.0.0.1", PORTS["settee"], timeout=60)
    headers = dict(AUTH["settee"], **{"Content-Type": "application/json"})
    start = time.time()
    for i in range(seconds * rate):
        due = start + i / rate
        if time.time() < due:
            time.sleep(max(0.0, due - time.time()))
        conn.request("PUT", f"/lagsrc/w{i:06d}", body='{"v":1}', headers=headers)
        r = conn.getresponse()
        r.read()
        acked[f"w{i:06d}"] = time.time()
    deadline = time.time() + 30
    while len(seen) < len(acked) and time.time() < deadline:
        time.sleep(0.05)
    stop.set()
    lags = sorted(seen[k] - acked[k] for k in acked if k in seen)
    return {"writes": len(acked), "arrived": len(lags), "write_rate": len(acked) / (acked[max(acked)] - start),
            "p50_ms": lags[len(lags) // 2] * 1000, "p99_ms": lags[int(len(lags) * 0.99)] * 1000,
            "max_ms": lags[-1] * 1000, "min_ms": lags[0] * 1000}


def main():
    _, servers = start_side_by_side("settee-repbench-")
    pids = {name: proc.pid for name, (proc, _) in servers.items()}
    rates = {k: [] for k in ("settee->settee", "settee->pouchdb-server", "pouchdb-server->settee",
                             "pouchdb-server pulls")}
    try:
        if LAG_ONLY:
            print(f"continuous lag: {json.dumps(lag_run(rate=LAG_RATE))}", flush=True)
            return
        req("settee", "PUT", "/rsrc")
        old = DOCS - DOCS // 20
        fill("settee", "rsrc", 0, old)
        time.sleep(1.1)  # a second boundary: what follows is "the last 5%"
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time()))
        time.sleep(0.01)
        fill("settee", "rsrc", old, DOCS - old)
        for run in range(RUNS):
            for name, server, body in (
                    ("settee->settee", "settee", {"source": "rsrc", "target": f"t{run}", "create_target": True}),
                    ("settee->pouchdb-server", "settee",
                     {"source": "rsrc", "target": f"{POUCH_URL}/p{run}", "create_target": True}),
                    ("pouchdb-server->settee", "settee",
                     {"source": f"{POUCH_URL}/p{run}", "target": f"back{run}", "create_target": True}),
                    ("pouchdb-server pulls", "pouchdb-server",
                     {"source": f"{SETTEE_URL}/rsrc", "target": f"own{run}", "create_target": True})):
                dt, out, cores = timed(server, body, pids)
                n = written(out)
                rates[name].append(DOCS / dt)
                use = ", ".join(f"{k} {v:.2f}" for k, v in cores.items())
                print(f"run {run + 1} {name:24s} {dt:7.2f} s {DOCS / dt:9.0f} docs/s (written {n}; cores: {use})",
                      flush=True)
        dt, out, _ = timed("settee", {"source": "rsrc", "target": "recent", "create_target": True, "since_seq": since})
        print(f"since_seq={since}: {written(out)} of {DOCS} docs copied in {dt:.2f} s", flush=True)
        lag = lag_run()
        print(f"continuous lag: {json.dumps(lag)}", flush=True)
        print(f"\n{DOCS:,} docs of ~1 KB, medians of {RUNS} runs (docs/s):")
        for name, values in rates.items():
            print(f"  {name:24s} {statistics.median(values):9.0f}  (runs: {', '.join(f'{v:.0f}' for v in values)})")
        s, p = statistics.median(rates["settee->pouchdb-server"]), statistics.median(rates["pouchdb-server pulls"])
        print(f"  settee's replicator into pouchdb-server vs pouchdb-server's own: {s / p:.1f}x")
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
