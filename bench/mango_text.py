"""Mango text indexes through one node with the default configuration (issue 54): N documents of
~1 KB (a title of 8 words and a body of 150 from a Zipf vocabulary of 20,000 words, as
bench/search.py, a genre and a year), a text index of every field (`"index": {}`) built by its
first _find (docs/s), then at one client (p50/p95 of 200 each): $text of one word (any of the
vocabulary; most are rare), $text of a frequent word (ranks 100 to 1,099), and a field query the
index answers ({"genre": "g<k>", "year": {"$gt": 2000}}), each with limit 25.
    python3 bench/mango_text.py [build/settee] [docs=100000] [q=2]"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_node import BenchNode  # noqa: E402
from zipf_text import ZipfText  # noqa: E402

DOCS = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
SHARDS = int(sys.argv[3]) if len(sys.argv) > 3 else 2
VOCAB = 20000
zipf = ZipfText(VOCAB)
rng = zipf.rng
text = zipf.text


node = BenchNode("settee-mangotextbench-")
req = node.ok


def one_client(body, n=200):
    times, found = [], 0
    for _ in range(n):
        t = time.time()
        found += len(json.loads(req("POST", "/mt/_find", body()))["docs"])
        times.append(time.time() - t)
    times.sort()
    return times[len(times) // 2] * 1000, times[int(len(times) * 0.95)] * 1000, found / n


try:
    req("PUT", f"/mt?q={SHARDS}")
    t0 = time.time()
    for b in range(0, DOCS, 1000):
        docs = [{"_id": f"d{b + i:08d}", "title": text(8), "body": text(150), "genre": f"g{(b + i) % 12}",
                 "year": 1900 + (b + i) % 120} for i in range(min(1000, DOCS - b))]
        req("POST", "/mt/_bulk_docs", {"docs": docs})
    print(f"loaded {DOCS:,} docs (~{len(json.dumps(docs[0]))} bytes each) at q={SHARDS} in {time.time() - t0:.0f} s")
    req("POST", "/mt/_index", {"index": {}, "type": "text", "name": "all", "ddoc": "t"})
    t = time.time()
    req("POST", "/mt/_find", {"selector": {"$text": "w1"}, "limit": 1})
    took = time.time() - t
    info = json.loads(req("GET", "/mt/_design/t/_search_info/all"))["search_index"]
    print(f"build: {DOCS:,} docs in {took:.1f} s: {DOCS / took:,.0f} docs/s; "
          f"index {info['disk_size'] / 1e6:.0f} MB on disk, {info['doc_count']:,} docs")
    queries = (
        ("$text any word", lambda: {"selector": {"$text": f"w{rng.randrange(0, VOCAB)}"}}),
        ("$text frequent word", lambda: {"selector": {"$text": f"w{rng.randrange(100, 1100)}"}}),
        ("genre and year", lambda: {"selector": {"genre": f"g{rng.randrange(12)}", "year": {"$gt": 2000}}}),
    )
    for name, body in queries:
        p50, p95, found = one_client(body)
        print(f"{name}: one client p50 {p50:.2f} ms, p95 {p95:.2f} ms ({found:.1f} docs a query)")
finally:
    node.stop()
