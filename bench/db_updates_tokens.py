"""What a _db_updates token that remembers costs (issue 12): release 0.3 and this build side by side,
one node each, default config.

    python3 bench/db_updates_tokens.py [BINARY]      (DBS=100 REQUESTS=30 by default)

Creates DBS databases on each node (so the last five minutes hold DBS lifecycle events; a token
remembers at most 64 of them), takes a token, writes one document to each database, then times
REQUESTS normal feeds from that token (DBS `updated` rows) and REQUESTS `since=now`; prints the
medians, the feed's bytes and one row's seq length. Bounded by DBS and REQUESTS.
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "upgrade"))
from harness import BIN, Node  # noqa: E402
from releases import binary  # noqa: E402

DBS, REQUESTS = (int(os.environ.get(k, d)) for k, d in (("DBS", "100"), ("REQUESTS", "30")))


def median_ms(node, path):
    times = []
    for _ in range(REQUESTS):
        t = time.perf_counter()
        assert node.get(path).status == 200
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


nodes = {"v0.3.0": Node(bin=binary("v0.3.0")), "this": Node(bin=sys.argv[1] if len(sys.argv) > 1 else BIN)}
try:
    for n in nodes.values():
        n.start()
    tokens = {}
    for k, n in nodes.items():
        for i in range(DBS):
            assert n.put(f"/db{i:05d}").status == 201
        tokens[k] = n.get("/_db_updates").json["last_seq"]
        for i in range(DBS):
            assert n.put(f"/db{i:05d}/d", {}).status == 201
    time.sleep(1.5)  # the update log's record (a few per second)
    for k, n in nodes.items():
        feed = n.request("GET", f"/_db_updates?since={tokens[k]}")
        rows = feed.json["results"]
        print(f"{k:7s} feed of {len(rows)} rows: {len(feed.data)} bytes, one row's seq {len(rows[0]['seq'])} chars, "
              f"median {median_ms(n, f'/_db_updates?since={tokens[k]}'):.2f} ms; "
              f"since=now median {median_ms(n, '/_db_updates?since=now'):.2f} ms")
finally:
    for n in nodes.values():
        n.cleanup()
