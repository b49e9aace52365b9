#!/usr/bin/env python3
"""Runs the same workloads against settee and pouchdb-server side by side, in one run.

    python3 bench/compare.py [--runs 3] [--docs 200000] [--seconds 5] [--set core|attachments]
                             [--write docs/BENCHMARKS.md]

Both servers start fresh on loopback with data on disk (settee: LMDB with fsync; pouchdb-server:
LevelDB). Runs alternate between the servers so drift on a noisy machine hits both alike. Prints a
Markdown table (median, range, settee/pouchdb-server ratio) and, with --write, replaces the section
between the BEGIN/END compare markers (`compare-attachments` for that set) in the given file. Every run is bounded in time by the load
generator itself. Needs `npm install` in bench/ (package.json) and a built settee.
"""
import argparse
import base64
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOADGEN = os.path.join(ROOT, "build", "settee_loadgen")
SETTEE = os.path.join(ROOT, "build", "settee")
POUCH = os.path.join(ROOT, "bench", "node_modules", ".bin", "pouchdb-server")

# The servers start_servers starts, and a JSON request to one of them (by name): its parsed answer.
AUTH = {"settee": {"Authorization": "Basic " + base64.b64encode(b"bench:bench").decode()}, "pouchdb-server": {}}
PORTS = {"settee": 25990, "pouchdb-server": 25991}


def req(server, method, path, body=None, timeout=3600):
    headers = dict(AUTH[server])
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    r = urllib.request.Request(f"http://127.0.0.1:{PORTS[server]}{path}", data=data, headers=headers, method=method)
    with urllib.request.urlopen(r, timeout=timeout) as resp:
        return json.loads(resp.read())


# name, loadgen args, metric, unit, higher is better
WORKLOADS = [
    ("put c=1", ["--workload", "put", "--concurrency", "1"], "rate", "req/s", True),
    ("put c=32", ["--workload", "put", "--concurrency", "32"], "rate", "req/s", True),
    ("bulk (1,000/request)", ["--workload", "bulk", "--concurrency", "2"], "rate", "docs/s", True),
    ("get c=32", ["--workload", "get", "--concurrency", "32"], "rate", "req/s", True),
    ("changes since=0", ["--workload", "changes"], "full_s", "s", False),
    ("changes since=now", ["--workload", "changes"], "now_ms", "ms", False),
    ("changes tail 100", ["--workload", "changes"], "tail100_ms", "ms", False),
    ("all_docs", ["--workload", "alldocs"], "rate", "rows/s", True),
    ("longpoll 200 listeners", ["--workload", "longpoll", "--listeners", "200"], "all_notified_ms", "ms", False),
]

# Attachments by name (PUT new documents, GET random ones of --docs 20), by size; req/s and MB/s.
KB, MB = 1024, 1024 * 1024
ATTACHMENTS = []
for label, size, conc in (("1 KB", KB, 8), ("100 KB", 100 * KB, 8), ("10 MB", 10 * MB, 2)):
    ATTACHMENTS.append((f"attachment PUT {label} c={conc}", ["--workload", "att_put", "--concurrency", str(conc),
                                                              "--att-bytes", str(size)], "rate", "req/s", True))
    ATTACHMENTS.append((f"attachment GET {label} c={conc}", ["--workload", "att_get", "--concurrency", str(conc),
                                                              "--att-bytes", str(size)], "rate", "req/s", True))
SETS = {"core": WORKLOADS, "attachments": ATTACHMENTS}


def wait_up(url, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url + "/", timeout=1).read()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def start_servers(tmp):
    settee_dir, pouch_dir = os.path.join(tmp, "settee"), os.path.join(tmp, "pouch")
    os.makedirs(pouch_dir)
    ini = os.path.join(tmp, "settee.ini")
    with open(ini, "w") as f:
        f.write("[log]\nlevel = warning\n")  # otherwise the defaults a user gets
    env = dict(os.environ, SETTEE_ADMIN="bench:bench")
    settee = subprocess.Popen([SETTEE, "--data-dir", settee_dir, "--port", "25990", "--config", ini], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pouch = subprocess.Popen([POUCH, "--port", "25991", "--dir", pouch_dir, "--no-stdout-logs"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=pouch_dir)
    wait_up("http://127.0.0.1:25990")
    wait_up("http://127.0.0.1:25991")
    return {"settee": (settee, ["--url", "http://127.0.0.1:25990", "--auth", "bench:bench"]),
            "pouchdb-server": (pouch, ["--url", "http://127.0.0.1:25991"])}


def start_side_by_side(prefix):
    """(its directory, the servers): both servers fresh (start_servers) in a new temporary
    directory named `prefix`...; exits with what to do when settee is not built or pouchdb-server
    not installed."""
    for path in (SETTEE, POUCH):
        if not os.path.exists(path):
            sys.exit(f"missing {path}: build settee (make build) and run `npm install` in bench/")
    tmp = tempfile.mkdtemp(prefix=prefix)
    return tmp, start_servers(tmp)


def run(server_args, args, db):
    out = subprocess.run([LOADGEN, *server_args, "--db", db, *args], capture_output=True, text=True, timeout=900)
    line = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    fields = dict(re.findall(r"(\w+)=([-\d.]+)", line))
    if out.returncode != 0 or not fields:
        print(f"  run failed ({out.returncode}): {line} {out.stderr[-300:]}", file=sys.stderr)
        return None
    return fields


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--docs", type=int, default=200000)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--write", default=None)
    ap.add_argument("--set", default="core", choices=sorted(SETS))
    a = ap.parse_args()
    workloads = SETS[a.set]
    for path in (LOADGEN, SETTEE, POUCH):
        if not os.path.exists(path):
            sys.exit(f"missing {path}: build settee (make build) and run `npm install` in bench/")
    tmp = tempfile.mkdtemp(prefix="settee-compare-")
    servers = start_servers(tmp)
    results = {name: {s: [] for s in servers} for name, *_ in workloads}
    mb_s = {name: {s: [] for s in servers} for name, *_ in workloads}
    try:
        for run_no in range(a.runs):
            for name, args, metric, unit, _ in workloads:
                for server, (_, server_args) in servers.items():
                    docs = 20 if args[1] == "att_get" else a.docs
                    extra = ["--seconds", str(a.seconds), "--docs", str(docs)]
                    db = {"bulk": f"bulk{run_no}", "put": f"put{run_no}", "longpoll": "lp",
                          "att_put": f"attput{run_no}", "att_get": f"att{args[-1]}"}.get(args[1], "shared")
                    fields = run(server_args, args + extra, db)
                    value = float(fields[metric]) if fields else None
                    results[name][server].append(value)
                    if fields and "mb_s" in fields:
                        mb_s[name][server].append(float(fields["mb_s"]))
                    print(f"run {run_no + 1} {name:24s} {server:15s} {metric}={value}", file=sys.stderr)
    finally:
        for proc, _ in servers.values():
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)

    set_arg = "" if a.set == "core" else f" --set {a.set}"
    lines = [f"Command: `python3 bench/compare.py --runs {a.runs} --docs {a.docs} --seconds {a.seconds:g}{set_arg}` "
             f"({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, generator on the same machine).", "",
             "| workload | settee median (range) | pouchdb-server median (range) | settee advantage |",
             "|---|---|---|---|"]
    for name, args, metric, unit, higher in workloads:
        cells = []
        medians = {}
        for server in servers:
            vals = [v for v in results[name][server] if v is not None]
            if not vals:
                cells.append("failed")
                continue
            medians[server] = statistics.median(vals)
            cell = f"{medians[server]:,.2f} {unit} ({min(vals):,.2f}–{max(vals):,.2f})"
            if mb_s[name][server]:
                cell += f", {statistics.median(mb_s[name][server]):,.1f} MB/s"
            cells.append(cell)
        ratio = "–"
        if len(medians) == 2 and all(medians.values()):
            s, p = medians["settee"], medians["pouchdb-server"]
            ratio = f"{(s / p if higher else p / s):,.1f}×"
        lines.append(f"| {name} | {cells[0]} | {cells[1]} | {ratio} |")
    table = "\n".join(lines)
    print(table)
    if a.write:
        with open(a.write) as f:
            text = f.read()
        marker = "compare" if a.set == "core" else f"compare-{a.set}"
        block = f"<!-- BEGIN {marker} -->\n{table}\n<!-- END {marker} -->"
        if f"<!-- BEGIN {marker} -->" not in text:
            text += f"\n{block}\n"
        text = re.sub(f"<!-- BEGIN {marker} -->.*<!-- END {marker} -->", lambda _: block, text, flags=re.S)
        with open(a.write, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
