"""Memory of a replication (issue 33 point 4): one settee node with its defaults, N small documents
(~150 bytes) replicated one-shot to a new database of the same node; the node's anonymous memory
(RssAnon) sampled every 100 ms before, during and after, and the rate. The replicator holds one read of the feed (workers x
batch size rows) and its batches at a time, so the peak should not grow with N.

    python3 bench/replicate_memory.py [docs=1000000]
    python3 bench/replicate_memory.py attachment [GiB=1]

The second form replicates one document with an attachment of that many GiB of random bytes
(copied as multipart through a spool file, never held in memory). Needs a built settee."""
import http.client
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_node import proc_status  # noqa: E402
from compare import AUTH, PORTS, SETTEE, req  # noqa: E402

ATTACHMENT = len(sys.argv) > 1 and sys.argv[1] == "attachment"
GIB = float(sys.argv[2]) if ATTACHMENT and len(sys.argv) > 2 else 1.0
DOCS = 1 if ATTACHMENT else int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
PORT = PORTS["settee"]  # compare.req's "settee" (user bench:bench)


def rss_mb(pid, field="RssAnon"):
    """The node's anonymous memory (its heap: what the replication holds), or another /proc field
    (VmRSS also counts the LMDB files' pages the kernel keeps mapped)."""
    return proc_status(pid, field) / 1024


def put_attachment(path, size):
    """Writes `size` random bytes to `path` and PUTs them as attachment big.bin of msrc/big, streamed
    from the file; the seconds the upload took."""
    with open(path, "wb") as f:
        for left in range(size, 0, -(16 << 20)):
            f.write(os.urandom(min(left, 16 << 20)))
    t = time.time()
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=3600)
    with open(path, "rb") as f:
        headers = dict(AUTH["settee"], **{"Content-Type": "application/octet-stream", "Content-Length": str(size)})
        conn.request("PUT", "/msrc/big/big.bin", body=f, headers=headers)
        r = conn.getresponse()
        assert r.status == 201, r.read()
    os.unlink(path)
    return time.time() - t


def main():
    tmp = tempfile.mkdtemp(prefix="settee-repmem-")
    ini = os.path.join(tmp, "settee.ini")
    with open(ini, "w") as f:
        f.write("[log]\nlevel = warning\n")
    proc = subprocess.Popen([SETTEE, "--data-dir", os.path.join(tmp, "data"), "--port", str(PORT), "--config", ini],
                            env=dict(os.environ, SETTEE_ADMIN="bench:bench"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                req("settee", "GET", "/")
                break
            except OSError:
                time.sleep(0.1)
        req("settee", "PUT", "/msrc")
        t = time.time()
        if ATTACHMENT:
            fill_s = put_attachment(os.path.join(tmp, "attachment.bin"), int(GIB * (1 << 30)))
        else:
            for b in range(0, DOCS, 5000):
                req("settee", "POST", "/msrc/_bulk_docs", {"docs": [{"_id": f"m{i:08d}", "n": i, "tag": "x" * 100}
                                                          for i in range(b, min(DOCS, b + 5000))]})
            fill_s = time.time() - t
        before, before_vm = rss_mb(proc.pid), rss_mb(proc.pid, "VmRSS")
        samples, stop = [], threading.Event()

        def sample():
            while not stop.is_set():
                samples.append(rss_mb(proc.pid))
                time.sleep(0.1)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        t = time.time()
        out = req("settee", "POST", "/_replicate", {"source": "msrc", "target": "mtgt", "create_target": True})
        rep_s = time.time() - t
        stop.set()
        th.join()
        written = out["history"][0]["docs_written"]
        if ATTACHMENT:
            stubs = [req("settee", "GET", f"/{db}/big")["_attachments"]["big.bin"] for db in ("msrc", "mtgt")]
            assert stubs[0]["digest"] == stubs[1]["digest"] and stubs[0]["length"] == stubs[1]["length"], stubs
            print(f"a {GIB:g} GiB attachment uploaded in {fill_s:.1f} s, replicated (same digest) in {rep_s:.1f} s "
                  f"({GIB * 1024 / rep_s:,.0f} MiB/s); RssAnon before {before:.0f} MB, peak during "
                  f"{max(samples):.0f} MB, after {rss_mb(proc.pid):.0f} MB")
            return
        print(f"{DOCS:,} docs filled in {fill_s:.1f} s; replicated {written:,} in {rep_s:.1f} s "
              f"({DOCS / rep_s:,.0f} docs/s); RssAnon before {before:.0f} MB, peak during {max(samples):.0f} MB, "
              f"median during {sorted(samples)[len(samples) // 2]:.0f} MB, after {rss_mb(proc.pid):.0f} MB; "
              f"VmRSS before {before_vm:.0f} MB, after {rss_mb(proc.pid, 'VmRSS'):.0f} MB (with the files' pages)")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
