#!/usr/bin/env python3
"""The HTTP front under many idle clients and listeners, on one node's default configuration.

Opens IDLE keep-alive connections (each made one request, then stays open) and LISTENERS continuous
`_changes` feeds (heartbeat 60 s), then, with all of them open:
  - 1,000 `GET /_up` from a new client, one connection each: p50/p99/max latency;
  - the node's RSS and threads (GET /_node/_local/_system) before and after: KB per connection;
  - one document write: time until every listener has received its row.
usage: idle_clients.py URL USER:PASSWORD [IDLE] [LISTENERS]   (defaults 10000 10000)
Needs about IDLE + LISTENERS + 100 file descriptors in this process (root raises its own limit).
"""
import base64
import http.client
import json
import resource
import selectors
import socket
import statistics
import sys
import time
import urllib.parse

URL, AUTH = sys.argv[1], sys.argv[2]
IDLE = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
LISTENERS = int(sys.argv[4]) if len(sys.argv) > 4 else 10000
u = urllib.parse.urlparse(URL)
HOST, PORT = u.hostname, u.port
AUTHZ = "Basic " + base64.b64encode(AUTH.encode()).decode()

want = IDLE + LISTENERS + 200
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(want, soft), max(want, hard)))
except (ValueError, OSError):
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def request(method, path, body=None):
    """One request on a new connection (a new client): (status, body)."""
    c = http.client.HTTPConnection(HOST, PORT, timeout=30)
    data = json.dumps(body) if body is not None else None
    c.request(method, path, body=data, headers={"Authorization": AUTHZ, "Content-Type": "application/json"})
    r = c.getresponse()
    out = (r.status, r.read())
    c.close()
    return out


def system():
    return json.loads(request("GET", "/_node/_local/_system")[1])


db = f"idle{int(time.time())}"
assert request("PUT", f"/{db}")[0] == 201
since = json.loads(request("GET", f"/{db}/_changes?since=now")[1])["last_seq"]
before = system()

idle = []
t0 = time.time()
for i in range(IDLE):
    s = socket.create_connection((HOST, PORT))
    s.sendall(b"GET /_up HTTP/1.1\r\nHost: x\r\n\r\n")
    idle.append(s)
for s in idle:  # read each answer: the connection is now an idle keep-alive one
    s.settimeout(10)
    got = b""
    while b"\r\n\r\n" not in got or not got.endswith(b"}\n"):
        got += s.recv(4096)
sel = selectors.DefaultSelector()
listeners = {}
for i in range(LISTENERS):
    s = socket.create_connection((HOST, PORT))
    s.sendall(f"GET /{db}/_changes?feed=continuous&since={since}&heartbeat=60000 HTTP/1.1\r\n"
              f"Host: x\r\nAuthorization: {AUTHZ}\r\n\r\n".encode())
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ, i)
    listeners[i] = b""
opened = time.time() - t0
deadline = time.time() + 60
while system()["live_feeds"] < before["live_feeds"] + LISTENERS and time.time() < deadline:
    time.sleep(0.2)
during = system()

lat = []
for _ in range(1000):
    t = time.perf_counter()
    status, _ = request("GET", "/_up")
    lat.append((time.perf_counter() - t) * 1000)
    assert status == 200
lat.sort()

t = time.time()
assert request("PUT", f"/{db}/the-write", {"x": 1})[0] == 201
done = set()
deadline = time.time() + 60
while len(done) < LISTENERS and time.time() < deadline:
    for key, _ in sel.select(timeout=0.5):
        try:
            chunk = key.fileobj.recv(65536)
        except BlockingIOError:
            continue
        listeners[key.data] += chunk
        if b"the-write" in listeners[key.data]:
            done.add(key.data)
notified = time.time() - t

conns = IDLE + LISTENERS
rss_kb = (during["memory"]["rss"] - before["memory"]["rss"]) / 1024
print(f"idle={IDLE} listeners={LISTENERS} opened_s={opened:.1f} live_feeds={during['live_feeds']} "
      f"threads={before['threads']}->{during['threads']}")
print(f"up_ms p50={statistics.median(lat):.2f} p99={lat[989]:.2f} max={lat[-1]:.2f}")
print(f"rss_mb {before['memory']['rss'] / 2**20:.1f} -> {during['memory']['rss'] / 2**20:.1f}  "
      f"kb_per_connection={rss_kb / conns:.1f}")
print(f"notified={len(done)}/{LISTENERS} in {notified * 1000:.0f} ms")
for s in idle:
    s.close()
for key in list(sel.get_map().values()):
    key.fileobj.close()
