"""What internal replication sends after a shard split (issue 53 item 11), with the default
configuration on a 3-node loopback cluster: a database of one range with a copy on every node.

    python3 bench/split_resync.py [BINARY]      (DOCS=100000 by default)

Loads DOCS documents of ~200 bytes, has every node push its copy to the others (POST
/db/_sync_shards: checkpoints everywhere), splits the range (a job per copy), has every node push
again, and reports the documents the nodes' internal replication sent
(settee_internal_replication_docs_total, summed over the nodes) for the load and from the split on
(the periodic pushes of the default configuration included), with the time of that last push.
Bounded by DOCS and by 10-minute waits.
"""
import json
import os
import re
import time

from bench_node import bench_cluster

DOCS = int(os.environ.get("DOCS", "100000"))


def metric(node, name):
    """{labels: value} of settee_<name> in the node's Prometheus text."""
    text = node.request("GET", "/_node/_local/_prometheus")[1].decode()
    return {m[1] or "": float(m[2]) for m in re.finditer(r"^settee_" + name + r"(\{[^}]*\})? (\S+)$", text, re.M)}


def sent(nodes):
    return sum(metric(n, "internal_replication_docs_total").get("", 0) for n in nodes)


def push_all(nodes):
    """Every node pushes its copies to the others now (POST /db/_sync_shards answers when done)."""
    for n in nodes:
        status, body = n.request("POST", "/resync/_sync_shards", {})
        assert status == 200 and json.loads(body)["ok"], body


def wait(what, seconds=600):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if what():
            return
        time.sleep(0.2)
    raise RuntimeError("timed out")


nodes, names = bench_cluster("settee-resync-", 3)
try:
    n1 = nodes[0]
    assert n1.request("PUT", "/resync?q=1&n=3")[0] == 201
    for start in range(0, DOCS, 1000):
        docs = [{"_id": f"d{i:08d}", "pad": "x" * 180} for i in range(start, min(DOCS, start + 1000))]
        assert n1.request("POST", "/resync/_bulk_docs", {"docs": docs})[0] == 201
    t0 = time.monotonic()
    push_all(nodes)
    load = sent(nodes)
    print(f"{DOCS} documents, 3 copies: internal replication sent {load:.0f} documents for the load "
          f"(a push from every node took {time.monotonic() - t0:.1f} s after it)")
    status, body = n1.request("POST", "/_reshard/jobs", {"type": "split", "db": "resync"})
    assert status == 201, body
    ids = {j["id"] for j in json.loads(body)}
    t1 = time.monotonic()
    wait(lambda: all(j["job_state"] == "completed"
                     for j in json.loads(n1.request("GET", "/_reshard/jobs")[1])["jobs"] if j["id"] in ids))
    t2 = time.monotonic()
    push_all(nodes)
    t3 = time.monotonic()
    after = sent(nodes) - load
    print(f"split: {t2 - t1:.1f} s; then a push from every node {t3 - t2:.1f} s; "
          f"internal replication sent {after:.0f} documents from the split on "
          f"({after / DOCS:.2%} of the database)")
finally:
    for n in nodes:
        n.stop()
