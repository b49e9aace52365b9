"""Users each with a live feed on their own database (PouchDB's `live: true` in the database-per-user
pattern): one node with its defaults, N databases (q=2), one continuous `_changes` feed on each
(`since=now`, kept open), then: the node's file descriptors, mapped address space (VmSize) and
threads; 20 new databases created and a document written to 20 of the watched ones (how many
failed); whether the first feed got its write.

    python3 bench/feeds_per_database.py [build/settee] [N=1100]

Bounded: N databases and sockets, 20 writes, 10 s for the feed's row."""
import base64
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_node import BenchNode, proc_status  # noqa: E402

N = int(sys.argv[2]) if len(sys.argv) > 2 else 1100
node = BenchNode("settee-feeds-")
auth = base64.b64encode(b"bench:bench").decode()


try:
    node.ok("GET", "/_up")

    def create(k):
        for i in range(k, N, 4):
            node.ok("PUT", f"/f{i:05d}")
    threads = [threading.Thread(target=create, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    socks = []
    for i in range(N):
        s = socket.create_connection(("127.0.0.1", node.port))
        s.sendall(f"GET /f{i:05d}/_changes?feed=continuous&since=now&heartbeat=10000 HTTP/1.1\r\nHost: x\r\n"
                  f"Authorization: Basic {auth}\r\n\r\n".encode())
        socks.append(s)
    deadline = time.time() + 30  # until every feed has started
    while json.loads(node.ok("GET", "/_node/_local/_system"))["live_feeds"] < N and time.time() < deadline:
        time.sleep(0.1)
    print(f"{N} feeds: {len(os.listdir(f'/proc/{node.proc.pid}/fd'))} fds, "
          f"VmSize {proc_status(node.proc.pid, 'VmSize') / 2**30:.1f} TiB, {proc_status(node.proc.pid, 'Threads')} threads")
    failed = 0
    for i in range(20):
        failed += node.request("PUT", f"/new{i}")[0] != 201
        failed += node.request("PUT", f"/f{i:05d}/doc", {"a": 1})[0] != 201
    print(f"new databases and writes that failed: {failed} of 40")
    socks[0].settimeout(10)
    got = b""
    try:
        while b'"id":"doc"' not in got:
            got += socks[0].recv(65536)
        print("the first feed got its write")
    except socket.timeout:
        print("the first feed did not get its write")
    for s in socks:
        s.close()
finally:
    node.stop()
