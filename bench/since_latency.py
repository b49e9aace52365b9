#!/usr/bin/env python3
"""_changes since=<time> against since=<seq> on one 200k-document database, side by side.

Needs a settee node started with SETTEE_CLOCK_FILE=<clock file> (bench/run_time_seq.sh does it): the
script sets the node's clock to lay the writes out in time, so every time-based query has a seq-based
twin that must return the same rows:

  phase A  100,000 docs at T0                      (2026-01-01T00:00:00Z, a bin start)
  phase B  100,000 docs at T0 + 3h                 (the next bin)
  phase C      100 docs at T0 + 3h30m              (the same bin as B, half an hour later)

  pair       time-based query                         seq-based twin          rows
  all        since=T0                                 since=0                 200,100
  half       since=T0+3h (a bin start)                since=<seq after A>     100,100
  tail       since=T0+3h30m (exact: skips B)          since=<seq after B>         100
  tail-bin   since=T0+3h30m&time_precision=bin        since=<seq after A>     100,100

Each query is timed with curl (time to the last byte), the twins alternating, RUNS times; prints the
median of each and the ratio time/seq.  usage: since_latency.py URL USER:PASSWORD CLOCK_FILE [RUNS]
"""
import base64
import http.client
import json
import statistics
import subprocess
import sys
import urllib.parse

URL, AUTH, CLOCK = sys.argv[1], sys.argv[2], sys.argv[3]
RUNS = int(sys.argv[4]) if len(sys.argv) > 4 else 7
DB = "since-latency"
T0 = 1767225600  # 2026-01-01T00:00:00Z
HOST = urllib.parse.urlparse(URL)
HEADERS = {"Authorization": "Basic " + base64.b64encode(AUTH.encode()).decode(),
           "Content-Type": "application/json"}
conn = http.client.HTTPConnection(HOST.hostname, HOST.port, timeout=120)


def call(method, path, body=None):
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=HEADERS)
    r = conn.getresponse()
    data = r.read()
    if r.status >= 300:
        sys.exit(f"{method} {path}: {r.status} {data[:200]!r}")
    return json.loads(data)


def set_clock(t):
    with open(CLOCK, "w") as f:
        f.write(str(t))


def load(first, count):
    for start in range(first, first + count, 1000):
        docs = [{"_id": f"d{i:07d}", "n": i, "text": "x" * 100} for i in range(start, min(start + 1000, first + count))]
        call("POST", f"/{DB}/_bulk_docs", {"docs": docs})


def seq_now():
    return call("GET", f"/{DB}/_changes?since=now")["last_seq"]


def iso(t):
    return subprocess.run(["date", "-u", "-d", f"@{t}", "+%Y-%m-%dT%H:%M:%SZ"], capture_output=True,
                          text=True, check=True).stdout.strip()


def timed(query):
    out = subprocess.run(["curl", "-s", "-u", AUTH, "-o", "/dev/null", "-w", "%{http_code} %{time_total}",
                          f"{URL}/{DB}/_changes?{query}"], capture_output=True, text=True, check=True).stdout
    code, seconds = out.split()
    if code != "200":
        sys.exit(f"_changes?{query}: {code}")
    return float(seconds) * 1000


def rows(query):
    return len(call("GET", f"/{DB}/_changes?{query}")["results"])


call("PUT", f"/{DB}")
set_clock(T0)
load(0, 100000)
after_a = seq_now()
set_clock(T0 + 3 * 3600)
load(100000, 100000)
after_b = seq_now()
set_clock(T0 + 3 * 3600 + 1800)
load(200000, 100)
q = urllib.parse.quote
pairs = [("all", f"since={iso(T0)}", "since=0", 200100),
         ("half", f"since={iso(T0 + 3 * 3600)}", f"since={q(after_a)}", 100100),
         ("tail", f"since={iso(T0 + 3 * 3600 + 1800)}", f"since={q(after_b)}", 100),
         ("tail-bin", f"since={iso(T0 + 3 * 3600 + 1800)}&time_precision=bin", f"since={q(after_a)}", 100100)]
print(f"since=<time> vs since=<seq>: 200,100 docs (q=2), {RUNS} runs each, alternating, curl time to last byte")
for name, by_time, by_seq, expect in pairs:
    got = (rows(by_time), rows(by_seq))
    if got != (expect, expect):
        sys.exit(f"{name}: rows {got}, expected {expect} each")
    t_ms, s_ms = [], []
    for _ in range(RUNS):
        t_ms.append(timed(by_time))
        s_ms.append(timed(by_seq))
    mt, ms = statistics.median(t_ms), statistics.median(s_ms)
    print(f"{name:9s} rows {expect:7d}   time {mt:8.2f} ms  seq {ms:8.2f} ms  ratio {mt / ms:.2f}   "
          f"(time {min(t_ms):.2f}-{max(t_ms):.2f}, seq {min(s_ms):.2f}-{max(s_ms):.2f})")
