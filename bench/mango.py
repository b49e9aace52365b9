"""Mango on N documents of ~1 KB through one node with the default configuration (issue 32):
JSON indexes built over the documents there (docs/s, until every copy answers from its index),
then _find with an index: one-field equality (one client: median; 32 at once through wrk: p50,
p95, p99, req/s), a range with a sort and limit 100, $or of two indexed fields (a union of two
indexes), $in of 50 values; a full scan without an index (documents examined/s); and what
writes cost with 0, 1 and 5 JSON indexes kept (single-document PUTs at c=1 and c=32 through wrk,
runs taking turns, medians and ratios side by side).
    python3 bench/mango.py [build/settee] [docs=200000]
Needs wrk (apt-get install wrk) for the loads."""
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_node import BenchNode  # noqa: E402

DOCS = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
PAD = "x" * 900
AUTH = 'wrk.headers["Authorization"] = "Basic YmVuY2g6YmVuY2g="\nwrk.headers["Content-Type"] = "application/json"\n'


def doc(i):
    return {"_id": f"d{i:07d}", "type": f"t{i % 10}", "age": i % 100, "city": f"c{i % 50:02d}",
            "score": (i * 7919) % 100000, "pad": PAD}


def wrk(node, script, seconds=5, connections=32):
    """req/s and latency percentiles (ms) of a wrk run of `script` (Lua: request())."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as lua:
        lua.write(AUTH + script + '''
done = function(summary, latency, requests)
  io.write(string.format("PCT %.3f %.3f %.3f %.3f\\n", latency:percentile(50) / 1000, latency:percentile(95) / 1000,
                         latency:percentile(99) / 1000, summary.requests / (summary.duration / 1e6)))
  io.write(string.format("ERRORS %d\\n", summary.errors.status + summary.errors.connect + summary.errors.read +
                         summary.errors.write + summary.errors.timeout))
end
''')
    out = subprocess.run(["wrk", f"-t{min(2, connections)}", f"-c{connections}", f"-d{seconds}s", "-s", lua.name,
                          f"http://127.0.0.1:{node.port}"], capture_output=True, text=True, timeout=seconds + 60).stdout
    os.unlink(lua.name)
    p50, p95, p99, rate = map(float, re.search(r"PCT (\S+) (\S+) (\S+) (\S+)", out).groups())
    errors = int(re.search(r"ERRORS (\d+)", out).group(1))
    return {"p50": p50, "p95": p95, "p99": p99, "rate": rate, "errors": errors}


def main():
    if not shutil.which("wrk"):
        sys.exit("needs wrk: apt-get install wrk")
    node = BenchNode("settee-mangobench-")
    req = node.ok

    def find(body, db="mb"):
        t = time.time()
        out = json.loads(req("POST", f"/{db}/_find", body))
        return time.time() - t, out

    def median_ms(bodies):
        return statistics.median(find(b)[0] for b in bodies) * 1000

    try:
        req("PUT", "/mb")
        t0 = time.time()
        for b in range(0, DOCS, 1000):
            req("POST", "/mb/_bulk_docs", {"docs": [doc(i) for i in range(b, min(DOCS, b + 1000))]})
        print(f"loaded {DOCS:,} docs of ~1 KB in {time.time() - t0:.1f} s (default q)")

        # Index builds: from POST /_index until a query reads only the index's rows.
        for fields in (["age"], ["city"], ["score"], ["type", "score"]):
            t0 = time.time()
            req("POST", "/mb/_index", {"index": {"fields": fields}, "ddoc": "-".join(fields), "name": "-".join(fields)})
            selector = {f: {"$exists": True} for f in fields}
            selector[fields[0]] = doc(0)[fields[0]]
            probe = {"selector": selector, "limit": 100000, "execution_stats": True,
                     "fields": ["_id"], "use_index": "-".join(fields)}
            while True:
                _, r = find(probe)
                if r["execution_stats"]["total_keys_examined"] == len(r["docs"]):
                    break
                time.sleep(0.02)
            took = time.time() - t0
            print(f"index {fields}: built over {DOCS:,} docs in {took:.2f} s: {DOCS / took:,.0f} docs/s")

        eq = [{"selector": {"age": random.randrange(100)}, "limit": 25} for _ in range(50)]
        print(f"equality age=N limit 25 (one client): median {median_ms(eq):.2f} ms")
        w = wrk(node, 'request = function() return wrk.format("POST", "/mb/_find", nil, '
                      '\'{"selector":{"age":\' .. math.random(0, 99) .. \'},"limit":25}\') end')
        print(f"equality age=N limit 25 at c=32 for 5 s (wrk): {w['rate']:,.0f} req/s, p50 {w['p50']:.2f} ms, "
              f"p95 {w['p95']:.2f} ms, p99 {w['p99']:.2f} ms, errors {w['errors']}")
        one = [{"selector": {"score": (random.randrange(DOCS) * 7919) % 100000}} for _ in range(50)]
        print(f"equality score=N (~{max(1, DOCS // 100000)} docs, one client): median {median_ms(one):.2f} ms")
        w = wrk(node, 'request = function() return wrk.format("POST", "/mb/_find", nil, '
                      '\'{"selector":{"score":\' .. math.random(0, 99999) .. \'}}\') end')
        print(f"equality score=N at c=32 for 5 s (wrk): {w['rate']:,.0f} req/s, p50 {w['p50']:.2f} ms, "
              f"p95 {w['p95']:.2f} ms, p99 {w['p99']:.2f} ms, errors {w['errors']}")

        ranged = []
        for _ in range(30):
            lo = random.randrange(90000)
            ranged.append({"selector": {"score": {"$gte": lo, "$lt": lo + 5000}}, "sort": ["score"], "limit": 100})
        t, r = find(ranged[0])
        assert len(r["docs"]) == 100 and "warning" not in r, r.get("warning")
        print(f"range score in [x, x+5000) sort score limit 100: median {median_ms(ranged):.2f} ms")
        ors = [{"selector": {"$or": [{"age": random.randrange(100)}, {"city": f"c{random.randrange(50):02d}"}]},
                "limit": 100} for _ in range(30)]
        _, r = find(dict(ors[0], execution_stats=True))
        print(f"$or of age and city (a union of two indexes) limit 100: median {median_ms(ors):.2f} ms "
              f"(keys examined {r['execution_stats']['total_keys_examined']})")
        ins = [{"selector": {"score": {"$in": random.sample(range(100000), 50)}}, "limit": 200} for _ in range(30)]
        _, r = find(dict(ins[0], execution_stats=True))
        print(f"$in of 50 scores: median {median_ms(ins):.2f} ms ({len(r['docs'])} docs, "
              f"keys examined {r['execution_stats']['total_keys_examined']})")
        scans = []
        for _ in range(3):
            took, r = find({"selector": {"pad": {"$regex": "^y"}}, "execution_stats": True})
            scans.append(r["execution_stats"]["total_docs_examined"] / took)
        print(f"full scan without an index (pad $regex, no match): {statistics.median(scans):,.0f} docs examined/s")

        # Writes with 0, 1 and 5 indexes, taking turns.
        sets = {0: [], 1: [["type"]], 5: [["type"], ["age"], ["city"], ["score"], ["type", "score"]]}
        body = json.dumps({k: v for k, v in doc(1).items() if k != "_id"}).replace('"', '\\"')
        for c in (1, 32):
            rates = {k: [] for k in sets}
            for run in range(3):
                for k, indexes in sets.items():
                    db = f"w{k}-c{c}-{run}"
                    req("PUT", f"/{db}")
                    for fields in indexes:
                        req("POST", f"/{db}/_index", {"index": {"fields": fields}})
                    script = ('local n = 0\nlocal t = 0\nsetup = function(thread) t = t + 1; thread:set("tid", t) end\n'
                              'request = function() n = n + 1; return wrk.format("PUT", "/' + db + '/" .. tid .. "-" .. n, nil, "'
                              + body + '") end')
                    rates[k].append(wrk(node, script, seconds=4, connections=c)["rate"])
            med = {k: statistics.median(v) for k, v in rates.items()}
            print(f"PUT c={c}: 0 indexes {med[0]:,.0f} req/s, 1 index {med[1]:,.0f} ({med[1] / med[0]:.2f}x), "
                  f"5 indexes {med[5]:,.0f} ({med[5] / med[0]:.2f}x)   runs: {rates}")
    finally:
        node.stop()


if __name__ == "__main__":
    main()
