"""How cost grows with the number of databases (issue 56 point 5, the database-per-user pattern): one
node with its defaults (q=2, max_dbs_open=500), databases u000000, u000001, ... created by 8 clients,
each with one document, up to each count given; at each count:

  create        databases/s of this step (PUT /db, then PUT /db/doc; each a commit with fsync)
  rss, heap     the node's VmRSS and RssAnon, MB; its threads and open file descriptors
  disk          the data directory (du), MB, and KB a database
  open          GET /db/doc of a random database (its shard files most likely closed: the cache keeps
                500 open), then the same again (open): p50 and p99 ms; GET /db (info of both ranges)
  _all_dbs      the whole list: ms; ?limit=100 from a name in the middle: p50 ms
  _dbs_info     POST of 100 random names: p50 ms; GET of the whole list: ms
  _db_updates   ?limit=100 from the start and since=now: p50 ms; the whole feed: ms
and after the last count, a restart: seconds until the node answers, its first document, its RSS.

    python3 bench/database_count.py [build/settee] [counts=10,1000,10000,100000]

Every loop is bounded: the counts given, 50 samples a latency (10 for a whole list)."""
import json
import os
import random
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_node import BenchNode, KeptConnection, du_mb, proc_status  # noqa: E402

COUNTS = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "10,1000,10000,100000").split(",")]
SAMPLES, WHOLE = 50, int(os.environ.get("WHOLE", "10"))  # WHOLE: samples of a whole list
CLIENTS = 8
node = BenchNode("settee-dbcount-")


class Client(KeptConnection):
    def __init__(self):
        super().__init__(node.port)

    def req(self, method, path, body=None):
        """(seconds, body bytes) of a request that must succeed."""
        status, data, took = self.request(method, path, body)
        if status >= 400:
            raise RuntimeError(f"{method} {path}: {status} {data[:200]!r}")
        return took, data


def name(i):
    return f"u{i:06d}"


def create(first, last):
    """Databases first..last-1 with one document each, by CLIENTS clients: databases/s."""
    def run(part):
        c = Client()
        for i in part:
            c.req("PUT", f"/{name(i)}")
            c.req("PUT", f"/{name(i)}/profile", {"user": i, "name": f"user {i}"})
    t = time.perf_counter()
    threads = [threading.Thread(target=run, args=(range(first + k, last, CLIENTS),)) for k in range(CLIENTS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return (last - first) / (time.perf_counter() - t)


def proc(field):
    return proc_status(node.proc.pid, field)


def ms(samples):
    """(p50, p99) in ms."""
    s = sorted(samples)
    return statistics.median(s) * 1000, s[min(len(s) - 1, int(0.99 * len(s)))] * 1000


def measure(n, rate):
    c = Client()
    rnd = random.Random(n)
    out = {"databases": n, "create dbs/s": rate, "rss MB": proc("VmRSS") / 1024, "heap MB": proc("RssAnon") / 1024,
           "threads": proc("Threads"), "open fds": len(os.listdir(f"/proc/{node.proc.pid}/fd"))}
    out["data dir MB"] = du_mb(node.data)
    out["KB a database"] = out["data dir MB"] * 1024 / n
    cold, warm, info = [], [], []
    for _ in range(SAMPLES):
        db = name(rnd.randrange(n))
        cold.append(c.req("GET", f"/{db}/profile")[0])
        warm.append(c.req("GET", f"/{db}/profile")[0])
        info.append(c.req("GET", f"/{name(rnd.randrange(n))}")[0])
    out["open GET doc p50 ms"], out["open GET doc p99 ms"] = ms(cold)
    out["open again p50 ms"], _ = ms(warm)
    out["GET /db p50 ms"], out["GET /db p99 ms"] = ms(info)
    took, body = c.req("GET", "/_all_dbs")
    assert sum(1 for d in json.loads(body) if d.startswith("u")) == n
    out["_all_dbs whole ms"] = statistics.median([took] + [c.req("GET", "/_all_dbs")[0] for _ in range(WHOLE - 1)]) * 1000
    middle = json.dumps(name(n // 2))
    out["_all_dbs limit=100 p50 ms"], _ = ms(c.req("GET", f"/_all_dbs?limit=100&startkey={middle}")[0]
                                              for _ in range(SAMPLES))
    out["_dbs_info 100 keys p50 ms"], _ = ms(c.req("POST", "/_dbs_info", {"keys": [name(rnd.randrange(n))
                                                                                   for _ in range(100)]})[0]
                                              for _ in range(SAMPLES))
    out["_dbs_info whole ms"] = statistics.median(c.req("GET", "/_dbs_info")[0] for _ in range(WHOLE)) * 1000
    out["_db_updates limit=100 p50 ms"], _ = ms(c.req("GET", "/_db_updates?limit=100")[0] for _ in range(SAMPLES))
    out["_db_updates since=now p50 ms"], _ = ms(c.req("GET", "/_db_updates?since=now")[0] for _ in range(SAMPLES))
    took, body = c.req("GET", "/_db_updates")
    out["_db_updates whole ms"] = took * 1000
    out["_db_updates whole rows"] = len(json.loads(body)["results"])
    out["rss after MB"], out["heap after MB"] = proc("VmRSS") / 1024, proc("RssAnon") / 1024
    out["open fds after"] = len(os.listdir(f"/proc/{node.proc.pid}/fd"))
    return out


try:
    node.ok("GET", "/_up")
    rows, have = [], 0
    for n in COUNTS:
        rate = create(have, n)
        have = n
        rows.append(measure(n, rate))
        print(json.dumps(rows[-1]), flush=True)
    # A restart with every database: until the node answers, then a closed database's document.
    t = time.perf_counter()
    node.restart()
    node.ok("GET", "/_up")  # request() retries while the port is closed
    up = time.perf_counter() - t
    first = Client().req("GET", f"/{name(have // 3)}/profile")[0]
    print(f"restart with {have:,} databases: answers after {up:.2f} s, first document {first * 1000:.2f} ms, "
          f"RSS {proc('VmRSS') / 1024:.1f} MB (heap {proc('RssAnon') / 1024:.1f})", flush=True)
    print("\n| measure | " + " | ".join(f"{r['databases']:,}" for r in rows) + " |")
    print("|---|" + "---|" * len(rows))
    for k in list(rows[0].keys())[1:]:
        print(f"| {k} | " + " | ".join(f"{r[k]:,.2f}" if r[k] < 100 else f"{r[k]:,.0f}" for r in rows) + " |")
finally:
    node.stop()
