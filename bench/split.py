"""A shard split, or a shard move, under a steady write load (issue 10 point 7), with the default
configuration: one node for a split, two cluster members on loopback for a move.

    python3 bench/split.py [BINARY]      (JOB=split DOCS=1000000 RATE=500 BEFORE_S=5 by default)
    JOB=move python3 bench/split.py      (the copy moves from the node holding it to the other)

Loads DOCS documents into a database of one shard, then runs a writer at RATE writes/s (one PUT at
a time, paced) and a continuous _changes consumer, both on the node holding the shard. After
BEFORE_S seconds it splits (or moves) the shard and waits for the job. Reports: the copy rate (documents the initial copy moved per second of
initial_copy), the job's total time, the write latency p50/p99/max before and during the job, and
the longest time the consumer went without a row while writes were flowing (its stall). Bounded by
DOCS and by the job (at most 30 minutes).
"""
import http.client
import json
import os
import statistics
import threading
import time

from bench_node import AUTH, BenchNode, bench_cluster

DOCS, RATE, BEFORE_S = (int(os.environ.get(k, d)) for k, d in (("DOCS", "1000000"), ("RATE", "500"), ("BEFORE_S", "5")))
JOB = os.environ.get("JOB", "split")
assert JOB in ("split", "move"), JOB
if JOB == "move":
    nodes, names = bench_cluster("settee-move-", 2)
    assert nodes[0].request("PUT", "/split?q=1&n=1")[0] == 201
    [[holder]] = json.loads(nodes[0].request("GET", "/split/_shards")[1])["shards"].values()
    node = nodes[names.index(holder)]
    target = [n for n in names if n != holder][0]
else:
    nodes = [BenchNode("settee-split-")]
    node = nodes[0]
req = node.request
stop = threading.Event()
lat = []  # (time sent, seconds)
rows_at = []  # monotonic times rows arrived at the consumer


def writer():
    c = http.client.HTTPConnection("127.0.0.1", node.port, timeout=60)
    h = dict(AUTH, **{"Content-Type": "application/json"})
    n, t0 = 0, time.monotonic()
    while not stop.is_set():
        wait = t0 + n / RATE - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        sent = time.monotonic()
        c.request("PUT", f"/split/w{n:08d}", body=json.dumps({"n": n}), headers=h)
        r = c.getresponse()
        r.read()
        assert r.status in (201, 202), r.status
        lat.append((sent, time.monotonic() - sent))
        n += 1


def consumer(since):
    c = http.client.HTTPConnection("127.0.0.1", node.port, timeout=60)
    c.request("GET", f"/split/_changes?feed=continuous&heartbeat=1000&since={since}", headers=AUTH)
    r = c.getresponse()
    for line in iter(r.readline, b""):
        if stop.is_set():
            break
        if line.startswith(b'{"seq"'):
            rows_at.append(time.monotonic())


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] * 1000 if xs else float("nan")


try:
    if JOB == "split":
        assert req("PUT", "/split?q=1")[0] == 201
    t0 = time.monotonic()
    for start in range(0, DOCS, 5000):
        docs = [{"_id": f"d{i:08d}", "n": i, "pad": "x" * 100} for i in range(start, min(DOCS, start + 5000))]
        assert req("POST", "/split/_bulk_docs", {"docs": docs})[0] == 201
    print(f"loaded {DOCS} documents in {time.monotonic() - t0:.1f} s")
    since = json.loads(req("GET", "/split/_changes?since=now&limit=0")[1])["last_seq"]
    threads = [threading.Thread(target=writer), threading.Thread(target=consumer, args=(since,))]
    for t in threads:
        t.start()
    time.sleep(BEFORE_S)
    job_start = time.monotonic()
    if JOB == "move":
        [shard] = [s["id"] for s in json.loads(req("GET", "/split/_changes/_meta")[1])["shards"]]
        rng, suffix = shard.split(".")
        status, body = req("POST", "/_reshard/jobs", {"type": "move", "shard": f"shards/{rng}/split.{suffix}",
                                                      "source": holder, "target": target})
    else:
        status, body = req("POST", "/_reshard/jobs", {"type": "split", "db": "split"})
    assert status == 201, body
    job = json.loads(body)[0]["id"]
    runs_on = nodes[names.index(target)] if JOB == "move" else node  # a move's job runs on its target
    phases = {}
    while time.monotonic() - job_start < 1800:
        j = json.loads(runs_on.request("GET", f"/_reshard/jobs/{job}")[1])
        phases.setdefault(j["split_state"], time.monotonic())
        if j["job_state"] in ("completed", "failed"):
            break
        time.sleep(0.05)
    job_end = time.monotonic()
    assert j["job_state"] == "completed", j
    time.sleep(2)
    stop.set()
    for t in threads:
        t.join(timeout=10)
    # The copy ends when any later state is first seen (the later states can pass between polls).
    later = [t for state, t in phases.items() if state not in ("new", "initial_copy")]
    copy_s = min(later, default=job_end) - phases.get("initial_copy", job_start)
    before = [s for t, s in lat if t < job_start]
    during = [s for t, s in lat if job_start <= t < job_end]
    gaps = [b - a for a, b in zip(rows_at, rows_at[1:]) if a >= job_start - 1 and b <= job_end + 1]
    print(f"{JOB} of {DOCS} documents with {RATE} writes/s: job {job_end - job_start:.2f} s, initial copy "
          f"{copy_s:.2f} s = {DOCS / copy_s if copy_s > 0 else float('nan'):.0f} docs/s (polled every 50 ms)")
    print(f"write latency before: p50 {pct(before, 0.5):.1f} ms, p99 {pct(before, 0.99):.1f} ms, "
          f"max {pct(before, 1.0):.1f} ms ({len(before)} writes)")
    print(f"write latency during: p50 {pct(during, 0.5):.1f} ms, p99 {pct(during, 0.99):.1f} ms, "
          f"max {pct(during, 1.0):.1f} ms ({len(during)} writes); p99 ratio {pct(during, 0.99) / pct(before, 0.99):.2f}")
    print(f"consumer: {len(rows_at)} rows; longest gap between rows during the job {max(gaps) * 1000 if gaps else 0:.0f} ms "
          f"(writes every {1000 / RATE:.0f} ms)")
finally:
    stop.set()
    for n in nodes:
        n.stop()
