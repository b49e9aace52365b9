"""One clustered _changes feed against one consumer per shard (spec 11.3, seed 003), on one node
with the default configuration: rows per second read end to end.

    python3 bench/shard_feeds.py [BINARY]      (DOCS=100000 Q=8 RUNS=3 by default)

Loads DOCS documents into a database of Q shards, then, RUNS times each, alternating: reads the
whole feed with one GET /db/_changes, and reads it with Q concurrent GET /db/_changes/<shard id>
(one connection each). Rows are counted in the bytes, not parsed. Bounded by DOCS and RUNS.
"""
import json
import os
import statistics
import threading
import time

from bench_node import BenchNode

DOCS, Q, RUNS = (int(os.environ.get(k, d)) for k, d in (("DOCS", "100000"), ("Q", "8"), ("RUNS", "3")))
node = BenchNode("settee-shardfeeds-")
req = node.request


def rows(path, out, i):
    status, body = req("GET", path)
    assert status == 200, (path, status, body[:200])
    out[i] = body.count(b'{"seq":')


try:
    assert req("PUT", f"/feeds?q={Q}")[0] == 201
    for start in range(0, DOCS, 5000):
        docs = [{"_id": f"d{i:08d}", "n": i} for i in range(start, min(DOCS, start + 5000))]
        assert req("POST", "/feeds/_bulk_docs", {"docs": docs})[0] == 201
    shards = [s["id"] for s in json.loads(req("GET", "/feeds/_changes/_meta")[1])["shards"]]
    one, parallel = [], []
    for _ in range(RUNS):
        got = [0]
        t0 = time.monotonic()
        rows("/feeds/_changes", got, 0)
        one.append(got[0] / (time.monotonic() - t0))
        assert got[0] == DOCS, got
        got = [0] * len(shards)
        threads = [threading.Thread(target=rows, args=(f"/feeds/_changes/{s}", got, i)) for i, s in enumerate(shards)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        parallel.append(sum(got) / (time.monotonic() - t0))
        assert sum(got) == DOCS, got
    print(f"{DOCS} documents, q={Q}, {os.cpu_count()} cores, medians of {RUNS} runs:")
    print(f"  one clustered feed:      {statistics.median(one):10.0f} rows/s   runs {[round(x) for x in one]}")
    print(f"  {Q} shard feeds at once:  {statistics.median(parallel):10.0f} rows/s   runs {[round(x) for x in parallel]}")
    print(f"  ratio {statistics.median(parallel) / statistics.median(one):.2f}")
finally:
    node.stop()
