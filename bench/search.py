"""Full-text search through one node with the default configuration (issue 54 point 5): N documents
of ~1 KB with two text fields (a title of 8 words, a body of 150, from a Zipf vocabulary of 20,000
words, as bench/fts_candidates), a string and a number field; a Nouveau index built by its first
query (docs/s, and the node's peak RSS while it builds); then a term query, a phrase query and a
faceted query (counts), each at one client (p50/p95 of 200) and at 32 through settee_loadgen for
5 s (rate, p50/p95/p99); a term query is a word of the vocabulary (any alike: most are rare) or a
frequent one (ranks 100 to 1,099).
    python3 bench/search.py [build/settee] [docs=200000] [q=2]
The loadgen is build/settee_loadgen (LOADGEN= another)."""
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(__file__))
from bench_node import BenchNode, proc_status  # noqa: E402
from zipf_text import NOUVEAU_INDEX as INDEX, ZipfText  # noqa: E402

DOCS = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
SHARDS = int(sys.argv[3]) if len(sys.argv) > 3 else 2
VOCAB = 20000
zipf = ZipfText(VOCAB)
rng = zipf.rng


node = BenchNode("settee-searchbench-")
req = node.ok


def rss_mb(field="VmRSS"):
    """The node's resident memory (VmRSS), or its anonymous part (RssAnon: not the shard files'
    and index files' mapped pages, which the kernel drops when memory is short)."""
    try:
        return int(proc_status(node.proc.pid, field)) / 1024
    except (OSError, ValueError, TypeError):
        return 0.0


def one_client(path, n=200):
    times = []
    for _ in range(n):
        t = time.time()
        req("GET", path())
        times.append(time.time() - t)
    times.sort()
    return times[len(times) // 2] * 1000, times[int(len(times) * 0.95)] * 1000


try:
    db = "fts"
    req("PUT", f"/{db}?q={SHARDS}")
    t0 = time.time()
    for b in range(0, DOCS, 1000):
        docs = [zipf.doc(b + i) for i in range(min(1000, DOCS - b))]
        req("POST", f"/{db}/_bulk_docs", {"docs": docs})
    print(f"loaded {DOCS:,} docs (~{len(json.dumps(docs[0]))} bytes each) at q={SHARDS} in {time.time() - t0:.0f} s")
    req("PUT", f"/{db}/_design/s", {"nouveau": {"idx": {"index": INDEX}}})
    before, before_anon = rss_mb(), rss_mb("RssAnon")
    peak = [before, before_anon]
    done = threading.Event()

    def watch():
        while not done.is_set():
            peak[0] = max(peak[0], rss_mb())
            peak[1] = max(peak[1], rss_mb("RssAnon"))
            time.sleep(0.2)

    w = threading.Thread(target=watch)
    w.start()
    t = time.time()
    first = json.loads(req("GET", f"/{db}/_design/s/_nouveau/idx?q=w1&limit=1"))
    took = time.time() - t
    done.set()
    w.join()
    info = json.loads(req("GET", f"/{db}/_design/s/_nouveau_info/idx"))["search_index"]
    print(f"build: {DOCS:,} docs in {took:.1f} s: {DOCS / took:,.0f} docs/s; RSS {before:.0f} MB before "
          f"(anonymous {before_anon:.0f} MB), peak {peak[0]:.0f} MB while building (anonymous {peak[1]:.0f} MB); "
          f"index {info['disk_size'] / 1e6:.0f} MB on disk, "
          f"{info['num_docs']:,} docs (w1 hits {first['total_hits']:,})")
    # A word of the vocabulary, any of the 20,000 alike (most are rare), and a frequent one:
    # w<k> for k in 100..1099 (ranks 100 to 1,099; w100 is in ~14% of the documents).
    anyword = lambda: f"/{db}/_design/s/_nouveau/idx?q=w{rng.randrange(0, VOCAB)}"  # noqa: E731
    term = lambda: f"/{db}/_design/s/_nouveau/idx?q=w{rng.randrange(100, 1100)}"  # noqa: E731
    phrase = lambda: f"/{db}/_design/s/_nouveau/idx?q=" + urllib.parse.quote(  # noqa: E731
        f'"w{rng.randrange(0, 20)} w{rng.randrange(0, 20)}"')
    facet = lambda: f"/{db}/_design/s/_nouveau/idx?q=w{rng.randrange(100, 1100)}&counts=%5B%22genre%22%5D"  # noqa: E731
    for name, path in (("any word", anyword), ("frequent word", term), ("phrase", phrase), ("term+counts", facet)):
        p50, p95 = one_client(path)
        print(f"{name}: one client p50 {p50:.2f} ms, p95 {p95:.2f} ms")
    loadgen = os.environ.get("LOADGEN", os.path.join(os.path.dirname(__file__), "..", "build", "settee_loadgen"))
    for name, p in (("any word", f"/{db}/_design/s/_nouveau/idx?q=w%K&limit=25"),
                    ("frequent word", f"/{db}/_design/s/_nouveau/idx?q=w1%K&limit=25"),
                    ("phrase", f"/{db}/_design/s/_nouveau/idx?q=%22w1%20w%K%22"),
                    ("term+counts", f"/{db}/_design/s/_nouveau/idx?q=w1%K&counts=%5B%22genre%22%5D")):
        keys = str(VOCAB) if name == "any word" else "100"
        run = subprocess.run([loadgen, "--url", f"http://127.0.0.1:{node.port}", "--auth", "bench:bench", "--db", db,
                              "--workload", "path", "--docs", keys, "--concurrency", "32", "--seconds", "5",
                              "--path", p], capture_output=True, text=True, timeout=120)
        print(f"{name} at c=32 for 5 s: {run.stdout.strip()} {run.stderr.strip()[:200]}")
    print(f"RSS after the queries: {rss_mb():.0f} MB (anonymous {rss_mb('RssAnon'):.0f} MB)")
finally:
    node.stop()
