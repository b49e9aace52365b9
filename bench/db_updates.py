"""_db_updates speed against a running node (admin bench:bench), called by bench/run_db_updates.sh.

    python3 bench/db_updates.py PORT        (DBS=10000 SAMPLES=200 MANY=20000 by default)

1. DBS databases (q=1) are created, then each written once by 8 clients; prints how long after the
   last write was acknowledged a normal feed from before the writes holds all DBS `updated` rows.
2. A longpoll listener follows the feed while a writer writes one document every 100 ms; prints the
   p50/p99 of (row received - write acknowledged) over SAMPLES writes.
3. With MANY databases on the node (created here if fewer exist), prints the median and p99 time of
   GET /_db_updates?since=now over 200 requests.
Every loop is bounded by these counts.
"""
import json
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_node import KeptConnection  # noqa: E402

PORT = int(sys.argv[1])
DBS, SAMPLES, MANY = (int(os.environ.get(k, d)) for k, d in (("DBS", "10000"), ("SAMPLES", "200"),
                                                             ("MANY", "20000")))


class Client(KeptConnection):
    def __init__(self):
        super().__init__(PORT)

    def req(self, method, path, body=None):
        status, data, _ = self.request(method, path, body)
        return status, (json.loads(data) if data else None)


def in_parallel(names, work, threads=8):
    def run(part):
        c = Client()
        for n in part:
            work(c, n)
    ts = [threading.Thread(target=run, args=(names[k::threads],)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


main = Client()
existing = set(main.req("GET", "/_all_dbs")[1])

# 1. DBS databases written once.
names = [f"w{i:06d}" for i in range(DBS)]
in_parallel([n for n in names if n not in existing], lambda c, n: c.req("PUT", f"/{n}?q=1"))
before = main.req("GET", "/_db_updates?since=now")[1]["last_seq"]
in_parallel(names, lambda c, n: c.req("POST", f"/{n}", {"x": 1}))
acked = time.time()
want = set(names)
seen = set()
since = before
for _ in range(1000):  # bounded: each round is a longpoll of at most 1 s
    res = main.req("GET", f"/_db_updates?feed=longpoll&timeout=1000&since={since}")[1]
    seen |= {r["db_name"] for r in res["results"] if r["type"] == "updated"} & want
    since = res["last_seq"]
    if seen == want:
        break
done = time.time()
print(f"{DBS} databases written once: all {len(seen)} updated rows {done - acked:.3f} s after the last "
      f"acknowledged write", flush=True)

# 2. Commit to longpoll listener.
main.req("PUT", "/latency?q=1")
got = []
ready = threading.Event()
stop = threading.Event()


def listen():
    c = Client()
    since = c.req("GET", "/_db_updates?since=now")[1]["last_seq"]
    ready.set()
    while not stop.is_set():
        res = c.req("GET", f"/_db_updates?feed=longpoll&timeout=2000&since={since}")[1]
        t = time.time()
        got.extend(t for r in res["results"] if r["db_name"] == "latency" and r["type"] == "updated")
        since = res["last_seq"]


listener = threading.Thread(target=listen)
listener.start()
ready.wait()
lat = []
for i in range(SAMPLES):
    n = len(got)
    main.req("PUT", f"/latency/d{i}", {})
    t = time.time()
    for _ in range(400):  # up to 2 s
        if len(got) > n:
            break
        time.sleep(0.005)
    if len(got) > n:
        lat.append((got[n] - t) * 1000)
    time.sleep(0.1)
stop.set()
main.req("PUT", "/latency/last", {})
listener.join()
print(f"commit to longpoll listener over {len(lat)} writes: p50 {statistics.median(lat):.1f} ms, "
      f"p99 {pct(lat, 0.99):.1f} ms, max {max(lat):.1f} ms (sampling every 5 ms)", flush=True)

# 3. since=now with MANY databases.
have = len(main.req("GET", "/_all_dbs")[1])
if have < MANY:
    in_parallel([f"m{i:06d}" for i in range(MANY - have)], lambda c, n: c.req("PUT", f"/{n}?q=1"))
count = len(main.req("GET", "/_all_dbs")[1])
times = []
for _ in range(200):
    t = time.perf_counter()
    status, _ = main.req("GET", "/_db_updates?since=now")
    times.append((time.perf_counter() - t) * 1000)
    assert status == 200
print(f"since=now with {count} databases: median {statistics.median(times):.2f} ms, p99 {pct(times, 0.99):.2f} ms")
