"""RSS of one node (default configuration) before, during and after N databases come and go.

    python3 bench/rss_after_databases.py [BINARY]      (N=2000 ROUNDS=1 IDLE=65 by default)

Creates N databases with one document each, deletes them, repeats ROUNDS times, waits IDLE seconds
and prints RSS from /proc (MB) and the process's thread count. Every loop is bounded by N and ROUNDS.
"""
import os
import time

from bench_node import BenchNode, proc_status

N, ROUNDS, IDLE = (int(os.environ.get(k, d)) for k, d in (("N", "2000"), ("ROUNDS", "1"), ("IDLE", "65")))
node = BenchNode("settee-rss-")


def req(method, path, body=None):
    return node.request(method, path, body)[0]


def rss():
    """VmRSS in MB, and its anonymous (heap, stacks) and file-backed (LMDB maps, binary) parts."""
    return (f"{status('VmRSS') / 1024:.1f} MB (anon {status('RssAnon') / 1024:.1f}, "
            f"file {status('RssFile') / 1024:.1f})")


def status(field):
    return proc_status(node.proc.pid, field)


try:
    req("GET", "/_up")
    time.sleep(1)
    print(f"fresh: {rss()}, {status('Threads')} threads", flush=True)
    for r in range(ROUNDS):
        for i in range(N):
            assert req("PUT", f"/m{i}") == 201
            assert req("PUT", f"/m{i}/d", {"i": i}) == 201
        print(f"round {r + 1} with {N} databases: {rss()}", flush=True)
        for i in range(N):
            assert req("DELETE", f"/m{i}") == 200
        print(f"round {r + 1} after deleting them: {rss()}", flush=True)
    time.sleep(IDLE)
    print(f"after {IDLE} s idle: {rss()}, {status('Threads')} threads")
finally:
    node.stop()
