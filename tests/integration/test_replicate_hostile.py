"""No endpoint can exhaust a node (issue 57): `_replicator` documents point at an endpoint of the
test's own that misbehaves in every way an HTTP peer can (gzip bombs, endless and lying bodies,
slow bytes and slow headers, redirect loops and redirects elsewhere, a bad certificate, invalid
UTF-8, deep JSON, a huge document or checkpoint, a `_bulk_get` that never ends, a `_revs_diff` that
answers what was never asked, a 3,000,000-row feed that ignores `limit`). The node stays up, its
peak RSS stays under a bound for all of them in turn, its thread count stays bounded, `/_up`
answers meanwhile (p99 printed), every job ends with a reason in `/_scheduler/docs`, and what a
deleted document held is given back. Replications of users who are not server admins are kept
off loopback, this node's ports and denied networks, whatever the spelling, and no reason shows
an endpoint's credentials."""
import hashlib
import json
import os
import socket
import socketserver
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.parse
import zlib

from harness import NodeTest, main, wait_until

PASSWORD = "s3cret-pw"
RSS_BOUND_MB = 200


def rss_mb(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0


def threads_of(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def rev_of(doc_id):
    return "1-" + hashlib.md5(doc_id.encode()).hexdigest()


def bomb(gib):
    """gzip of a feed whose first row's id is `gib` GiB long: about 1 MB on the wire a GiB."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = z.compress(b'{"results":[{"id":"')
    chunk = b"x" * (16 << 20)
    for _ in range(gib * 64):
        out += z.compress(chunk)
    return out + z.flush()


class Hostile(socketserver.ThreadingTCPServer):
    """Answers /<case>/db/... as `case` says; the cases not named for a request answer as a small
    honest CouchDB would (one document)."""
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host="127.0.0.1", tls_context=None):
        self.tls_context = tls_context
        self.requests = []
        self.bombs = {}
        super().__init__((host, 0), HostileHandler)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def get_request(self):
        sock, addr = super().get_request()
        if self.tls_context:
            sock = self.tls_context.wrap_socket(sock, server_side=True)
        return sock, addr


class HostileHandler(socketserver.StreamRequestHandler):
    def send(self, data):
        try:
            self.wfile.write(data)
            self.wfile.flush()
            return True
        except OSError:
            return False

    def answer(self, status, body, headers=None, reason="OK"):
        head = f"HTTP/1.1 {status} {reason}\r\n"
        headers = dict({"Content-Type": "application/json", "Content-Length": str(len(body))}, **(headers or {}))
        for k, v in headers.items():
            head += f"{k}: {v}\r\n"
        return self.send(head.encode() + b"\r\n" + body)

    def chunked_forever(self, first, piece, seconds=60):
        self.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (len(first), first)
        if not self.send(chunk):
            return
        chunk = b"%x\r\n%s\r\n" % (len(piece), piece)
        end = time.monotonic() + seconds
        while time.monotonic() < end and self.send(chunk):
            pass

    def handle(self):
        try:
            while self.one():
                pass
        except (OSError, ValueError, ssl.SSLError):
            pass

    def one(self):
        line = self.rfile.readline(65536)
        if not line:
            return False
        method, target, _ = line.decode("latin-1").split(" ", 2)
        headers = {}
        while True:
            h = self.rfile.readline(65536)
            if h in (b"\r\n", b"\n", b""):
                break
            k, _, v = h.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()
        body = self.rfile.read(int(headers.get("content-length") or 0))
        self.server.requests.append((method, target, headers, body))
        path = urllib.parse.urlparse(target).path
        parts = path.strip("/").split("/")
        case, rest = parts[0], "/".join(parts[2:])
        return self.respond(case, method, rest, target, body)

    def respond(self, case, method, rest, target, body):
        kind = ("info" if rest == "" else "local" if rest.startswith("_local") else
                "changes" if rest.startswith("_changes") else "bulk_get" if rest.startswith("_bulk_get") else
                "revs_diff" if rest.startswith("_revs_diff") else "bulk_docs" if rest.startswith("_bulk_docs")
                else "doc")
        hook = getattr(self, f"{case}_{kind}", None)
        if hook and not (kind == "local" and method == "PUT"):
            return hook(target=target, body=body)
        if kind == "info":
            return self.answer(200, b'{"db_name":"db","update_seq":"1","instance_start_time":"0"}')
        if kind == "local" and method == "PUT":
            return self.answer(201, b'{"ok":true,"id":"_local/x","rev":"0-1"}', reason="Created")
        if kind == "local":
            return self.answer(404, b'{"error":"not_found","reason":"missing"}', reason="Object Not Found")
        if kind == "changes":
            return self.answer(200, json.dumps({"results": [{"seq": "1", "id": "doc1", "changes": [
                {"rev": rev_of("doc1")}]}], "last_seq": "1", "pending": 0}).encode())
        if kind == "bulk_get":
            ids = [d["id"] for d in json.loads(body)["docs"]]
            return self.answer(200, json.dumps({"results": [{"id": i, "docs": [{"ok": {
                "_id": i, "_rev": rev_of(i), "_revisions": {"start": 1, "ids": [rev_of(i)[2:]]}, "v": 1}}]}
                for i in ids]}).encode())
        if kind == "revs_diff":
            asked = json.loads(body)
            return self.answer(200, json.dumps({i: {"missing": revs} for i, revs in asked.items()}).encode())
        if kind == "bulk_docs":
            return self.answer(201, b"[]", reason="Created")
        return self.answer(404, b'{"error":"not_found","reason":"missing"}', reason="Object Not Found")

    # -- the cases -------------------------------------------------------------------------
    def gzipbomb_changes(self, **_):
        data = self.server.bombs["one"]
        return self.answer(200, data, {"Content-Encoding": "gzip"})

    def gzipbomb4_changes(self, **_):
        data = self.server.bombs["four"]
        return self.answer(200, data, {"Content-Encoding": "gzip"})

    def gzipinfo_info(self, **_):
        return self.answer(200, self.server.bombs["one"], {"Content-Encoding": "gzip"})

    def bigjson_changes(self, **_):  # 1 GiB announced and sent
        self.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n")
        piece = b'{"results":[{"id":"' + b"x" * (1 << 20)
        sent = 0
        while sent < (1 << 30) and self.send(piece):
            sent += len(piece)
        return False

    def biginfo_info(self, **_):  # no length: read until the connection closes
        self.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
        piece = b" " * (1 << 20)
        end = time.monotonic() + 60
        while time.monotonic() < end and self.send(piece):
            pass
        return False

    def chunked_changes(self, **_):  # one row that never ends, in 64 KiB chunks
        self.chunked_forever(b'{"results":[{"id":"', b"y" * (64 << 10))
        return False

    def whitespace_changes(self, **_):  # a feed padded without end
        self.chunked_forever(b'{"results":[', b" " * (64 << 10))
        return False

    def slowbytes_changes(self, **_):  # a byte every 0.3 s: never idle long enough for the timeout
        self.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
        end = time.monotonic() + 60
        while time.monotonic() < end and self.send(b" "):
            time.sleep(0.3)
        return False

    def slowheaders_info(self, **_):  # headers that never end
        self.send(b"HTTP/1.1 200 OK\r\n")
        end = time.monotonic() + 60
        n = 0
        while time.monotonic() < end and self.send(b"X-Slow-%d: %d\r\n" % (n, n)):
            n += 1
            time.sleep(0.3)
        return False

    def lieshort_changes(self, **_):  # announces more than it sends, then holds the connection
        self.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n"
                  b'{"results":[')
        time.sleep(30)
        return False

    def lielong_changes(self, **_):  # announces less than it sends
        body = b'{"results":[],"last_seq":"1","pending":0}'
        self.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n" + body * 100)
        return True

    def loop_info(self, target, **_):
        return self.answer(302, b"", {"Location": target})

    def elsewhere_info(self, **_):
        return self.answer(302, b"", {"Location": "http://example.invalid/db/"})

    def scheme_info(self, **_):
        return self.answer(302, b"", {"Location": f"https://127.0.0.1:{self.server.port}/scheme/db/"})

    def utf8_changes(self, **_):
        body = b'{"results":[{"seq":"1","id":"bad\xff\xfe\xc3(","changes":[{"rev":"1-\xe2\x28\xa1"}]},' \
               b'{"seq":"2","id":"doc1","changes":[{"rev":"' + rev_of("doc1").encode() + b'"}]}],' \
               b'"last_seq":"2\xff","pending":0}'
        return self.answer(200, body)

    def deep_changes(self, **_):
        return self.answer(200, b'{"results":[],"last_seq":' + b"[" * 2000000 + b"1" + b"]" * 2000000 + b"}")

    def deeprow_changes(self, **_):
        return self.answer(200, b'{"results":[' + b"[" * 1000000 + b"]" * 1000000 + b'],"last_seq":"1"}')

    def bigdoc_bulk_get(self, **_):  # one document of 100 MB
        head = b'{"results":[{"id":"doc1","docs":[{"ok":{"_id":"doc1","_rev":"' + rev_of("doc1").encode() + \
               b'","big":"'
        tail = b'"}}]}]}'
        size = 100 << 20
        self.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                  % (len(head) + size + len(tail)))
        self.send(head)
        piece = b"z" * (1 << 20)
        for _ in range(100):
            if not self.send(piece):
                return False
        self.send(tail)
        return True

    def endless_bulk_get(self, **_):  # a multipart answer that never ends
        self.send(b"HTTP/1.1 200 OK\r\nContent-Type: multipart/mixed; boundary=\"b\"\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        piece = b"--b\r\nContent-Type: application/json\r\n\r\n" + b"{" * (64 << 10) + b"\r\n"
        chunk = b"%x\r\n%s\r\n" % (len(piece), piece)
        end = time.monotonic() + 60
        while time.monotonic() < end and self.send(chunk):
            pass
        return False

    def endlessrevs_doc(self, **_):  # open_revs as multipart/mixed, one part without end: spooled to disk
        self.send(b"HTTP/1.1 200 OK\r\nContent-Type: multipart/mixed; boundary=\"b\"\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        head = b"--b\r\nContent-Type: multipart/related; boundary=\"c\"\r\n\r\n--c\r\n" \
               b"Content-Type: application/json\r\n\r\n{}\r\n--c\r\nContent-Type: text/plain\r\n\r\n"
        self.send(b"%x\r\n%s\r\n" % (len(head), head))
        piece = b"a" * (1 << 20)
        chunk = b"%x\r\n%s\r\n" % (len(piece), piece)
        end = time.monotonic() + 120
        while time.monotonic() < end and self.send(chunk):
            pass
        return False

    def bigcheckpoint_local(self, **_):  # a checkpoint document of 10 MB
        return self.answer(200, json.dumps({"_id": "_local/x", "_rev": "0-1", "history": [],
                                            "pad": "p" * (10 << 20)}).encode())

    def manyrows_changes(self, target, **_):  # 3,000,000 rows whatever `limit` says
        q = urllib.parse.parse_qs(urllib.parse.urlparse(target).query)
        since = int(q.get("since", ["0"])[0] or 0)
        self.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        buf = [b'{"results":[\n']
        for i in range(since + 1, 3000001):
            doc_id = f"m{i:07d}"
            buf.append(b'{"seq":%d,"id":"%s","changes":[{"rev":"%s"}]},\n' % (i, doc_id.encode(),
                                                                               rev_of(doc_id).encode()))
            if len(buf) >= 2000:
                data = b"".join(buf)
                if not self.send(b"%x\r\n%s\r\n" % (len(data), data)):
                    return False
                buf = []
        buf.append(b'{"seq":3000001,"id":"end","changes":[]}],"last_seq":3000001,"pending":0}')
        data = b"".join(buf)
        self.send(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
        return True

    def echo_info(self, **_):  # an error that echoes the request: URL, credentials, headers
        return self.answer(500, json.dumps({"error": "boom", "reason": (
            f"could not serve http://hostile:{PASSWORD}@127.0.0.1/echo/db/ "
            f"Authorization: Basic {__import__('base64').b64encode(('hostile:' + PASSWORD).encode()).decode()} "
            f"{PASSWORD}")}).encode(), reason="Internal Server Error")

    def unasked_revs_diff(self, body, **_):  # a target that answers revisions never asked for
        asked = json.loads(body)
        out = {i: {"missing": revs + ["9-" + "f" * 32]} for i, revs in asked.items()}
        for k in range(20000):
            out[f"never{k}"] = {"missing": [rev_of(f"never{k}")]}
        return self.answer(200, json.dumps(out).encode())


def self_signed(tmp):
    key, cert = os.path.join(tmp, "k.pem"), os.path.join(tmp, "c.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=wrong.example"], check=True, capture_output=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return ctx


class HostileEndpoints(NodeTest):
    # Certificates are checked (CouchDB's verify_ssl_certificates); idle memory goes back soon.
    config = "[replicator]\nverify_ssl_certificates = true\nallowed_hosts = 127.0.0.2\n[node]\nidle_release_s = 2\n"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.hostile = Hostile()
        one = bomb(1)
        cls.hostile.bombs = {"one": one, "four": one * 4}  # four gzip members in one stream
        cls.tmp = tempfile.mkdtemp(prefix="settee-hostile-")
        cls.tls = Hostile(tls_context=self_signed(cls.tmp))
        cls.honest = Hostile(host="127.0.0.2")  # a loopback address allowed_hosts lets through
        cls.up_times = []
        cls.up_stop = threading.Event()
        cls.up_thread = threading.Thread(target=cls.probe_up, daemon=True)
        cls.up_thread.start()

    @classmethod
    def tearDownClass(cls):
        cls.up_stop.set()
        cls.up_thread.join()
        times = sorted(cls.up_times)
        if times:
            p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
            print(f"\n/_up during the hostile cases: {len(times)} requests, median {times[len(times) // 2]:.1f} ms, "
                  f"p99 {p99:.1f} ms, max {times[-1]:.1f} ms")
        for s in (cls.hostile, cls.tls, cls.honest):
            s.shutdown()
            s.server_close()
        super().tearDownClass()

    @classmethod
    def probe_up(cls):
        import http.client
        conn = None
        while not cls.up_stop.is_set():
            try:
                conn = conn or http.client.HTTPConnection("127.0.0.1", cls.node.port, timeout=30)
                t = time.monotonic()
                conn.request("GET", "/_up")
                conn.getresponse().read()
                cls.up_times.append((time.monotonic() - t) * 1000)
            except OSError:
                conn = None
            cls.up_stop.wait(0.05)

    def admin_url(self, db):
        return f"http://admin:{urllib.parse.quote(self.node.admin[1])}@127.0.0.1:{self.node.port}/{db}"

    def sched(self, doc_id):
        r = self.node.get(f"/_scheduler/docs/_replicator/{doc_id}")
        return r.json if r.status == 200 else {}

    def delete_doc(self, doc_id, user=None):
        # A one-shot replication writes its end into the document: a 409 means read it again.
        def deleted():
            doc = self.node.request("GET", f"/_replicator/{doc_id}", user=user).json
            return self.node.request("DELETE", f"/_replicator/{doc_id}?rev={doc['_rev']}", user=user).status == 200
        self.assertTrue(wait_until(deleted, seconds=10), doc_id)

    def run_case(self, case, reason, source=None, target=None, extra=None, user=None, seconds=60):
        """A document replicating from /case/db of the hostile endpoint: its job must end up with
        `reason` in /_scheduler/docs; then it is deleted."""
        doc_id = "h-" + case
        body = {"source": source or f"http://127.0.0.1:{self.hostile.port}/{case}/db",
                "target": target or self.admin_url("hostile_" + case), "create_target": True,
                "connection_timeout": 1000, "retries_per_request": 0}
        body.update(extra or {})
        r = self.node.request("PUT", f"/_replicator/{doc_id}", body=body, user=user)
        self.assertEqual(r.status, 201, r)
        seen = {}

        def ended():
            row = self.sched(doc_id)
            seen.update(row)
            err = ((row.get("info") or {}).get("error") or "")
            return row.get("state") in ("crashing", "failed") and reason in err or \
                (reason == "completed" and row.get("state") == "completed")
        ok = wait_until(ended, seconds=seconds)
        self.delete_doc(doc_id, user=user)
        self.assertTrue(ok, (case, seen))
        self.assertLess(rss_mb(self.node.proc.pid, "VmHWM"), RSS_BOUND_MB, case)
        return seen

    def test_1_every_hostile_source_ends_with_a_reason_within_the_memory_bound(self):
        pid = self.node.proc.pid
        start_rss = rss_mb(pid)
        cases = [
            ("gzipbomb", "compression bomb"),
            ("gzipbomb4", "compression bomb"),
            ("gzipinfo", "compression bomb"),
            ("bigjson", "larger than"),
            ("chunked", "max_document_size"),
            ("whitespace", "twice [chttpd] max_http_request_size"),
            ("slowbytes", "deadline"),
            ("slowheaders", "deadline"),
            ("lieshort", "could not open"),
            ("lielong", "something else than a feed"),
            ("loop", "redirected more than 10 times"),
            ("elsewhere", "another origin"),
            ("scheme", "another origin"),
            ("deep", "besides its rows"),
            ("bigdoc", "larger than"),
            ("endless", "larger than"),
            ("bigcheckpoint", "larger than 8000000 bytes"),
        ]
        for case, reason in cases:
            with self.subTest(case=case):
                t = time.monotonic()
                self.run_case(case, reason)
                print(f"  {case}: '{reason}' in {time.monotonic() - t:.1f} s, "
                      f"RSS {rss_mb(pid):.0f} MB (peak {rss_mb(pid, 'VmHWM'):.0f} MB)")
        # A body without a length that goes on past the limit: the database's info.
        self.run_case("biginfo", "larger than 8000000")
        # An open_revs answer (a source without _bulk_get) spooled to disk stops at
        # max_attachment_size + max_document_size, and its file goes with it.
        def open_fds():  # sockets and unnamed files (shard files of new databases apart)
            out = []
            for f in os.listdir(f"/proc/{pid}/fd"):
                try:
                    link = os.readlink(f"/proc/{pid}/fd/{f}")
                except OSError:
                    continue
                if "/shards/" not in link:
                    out.append(link)
            return sorted(out)
        fds = open_fds()
        self.run_case("endlessrevs", "larger than 1081741824", extra={"use_bulk_get": False})
        self.assertTrue(wait_until(lambda: len(open_fds()) <= len(fds)), (fds, open_fds()))
        self.assertFalse([f for f in open_fds() if "(deleted)" in f])
        # What the endpoints made the node hold is given back once they are gone (after a trim).
        self.assertTrue(wait_until(lambda: rss_mb(pid) < start_rss + 50, seconds=30), (start_rss, rss_mb(pid)))
        self.assertIsNone(self.node.proc.poll())

    def test_2_a_bad_certificate_invalid_utf8_and_deep_rows(self):
        self.run_case("tls", "could not open", source=f"https://127.0.0.1:{self.tls.port}/tls/db")
        self.run_case("utf8", "is not JSON")
        self.run_case("deeprow", "is not JSON")
        self.assertEqual(self.node.get("/hostile_utf8/doc1").status, 404)  # nothing of a broken page

    def test_3_a_target_that_answers_revisions_never_asked_for(self):
        self.node.put("/hostile_source")
        self.node.post("/hostile_source/_bulk_docs", {"docs": [{"_id": f"s{i}"} for i in range(5)]})
        # The source is this node: a timeout of its own under load would back the job off past the wait.
        row = self.run_case("unasked", "completed", source=self.admin_url("hostile_source"),
                            target=f"http://127.0.0.1:{self.hostile.port}/unasked/db",
                            extra={"connection_timeout": 30000})
        # Only what was asked about is fetched (a retried attempt asks again: counts grow alike).
        info = row["info"]
        self.assertGreaterEqual(info["docs_read"], 5, row)
        self.assertLessEqual(info["missing_revisions_found"], info["revisions_checked"], row)
        self.assertLessEqual(info["docs_read"], info["revisions_checked"], row)

    def test_4_a_source_of_three_million_rows_ignoring_limit_holds_threads_and_memory_bounded(self):
        pid = self.node.proc.pid
        threads_before, rss_before = threads_of(pid), rss_mb(pid)
        body = {"source": f"http://127.0.0.1:{self.hostile.port}/manyrows/db",
                "target": self.admin_url("hostile_many"), "create_target": True, "continuous": True}
        self.assertEqual(self.node.put("/_replicator/h-many", body).status, 201)
        peak_threads, peak_rss = 0, 0

        def progressed():
            nonlocal peak_threads, peak_rss
            peak_threads = max(peak_threads, threads_of(pid))
            peak_rss = max(peak_rss, rss_mb(pid))
            r = self.node.get("/hostile_many")
            return r.status == 200 and r.json["doc_count"] >= 20000
        self.assertTrue(wait_until(progressed, seconds=120))
        self.delete_doc("h-many")
        print(f"\n3,000,000-row source: threads {threads_before} -> peak {peak_threads}; "
              f"RSS {rss_before:.0f} -> peak {peak_rss:.0f} MB")
        # One step at a time: the lane's thread and at most worker_processes - 1 batch threads
        # (started with the node), and one connection pair per worker.
        self.assertLess(peak_threads - threads_before, 8, (threads_before, peak_threads))
        self.assertLess(peak_rss, RSS_BOUND_MB)

    def test_5_no_reason_shows_an_endpoint_credentials(self):
        source = {"url": f"http://hostile:{PASSWORD}@127.0.0.1:{self.hostile.port}/echo/db",
                  "headers": {"X-Api-Key": "key-" + PASSWORD}}
        self.run_case("echo", "could not serve", source=source)
        for path in ("/_scheduler/docs", "/_scheduler/jobs", "/_active_tasks", "/_replicator/_all_docs"):
            self.assertNotIn(PASSWORD, self.node.get(path).raw, path)
        with open(self.node.log.name) as f:
            self.assertNotIn(PASSWORD, f.read())


class WhereUserReplicationsConnect(NodeTest):
    config = "[replicator]\nallowed_hosts = 127.0.0.2\n"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.honest = Hostile(host="127.0.0.2")
        cls.loop = Hostile()
        r = cls.node.put("/_users/org.couchdb.user:ruth", {"name": "ruth", "password": "ruthpw", "roles": [],
                                                          "type": "user"})
        assert r.status == 201, r

    @classmethod
    def tearDownClass(cls):
        for s in (cls.honest, cls.loop):
            s.shutdown()
            s.server_close()
        super().tearDownClass()

    user = ("ruth", "ruthpw")

    def sched(self, doc_id):
        r = self.node.get(f"/_scheduler/docs/_replicator/{doc_id}")
        return r.json if r.status == 200 else {}

    def replicate(self, doc_id, source, user, want):
        """The row of `doc_id` once it is `want`: "completed", or crashing with `want` in its error."""
        body = {"source": source, "target": f"http://127.0.0.2:{self.honest.port}/t/db",
                "connection_timeout": 5000}
        r = self.node.request("PUT", f"/_replicator/{doc_id}", body=body, user=user)
        self.assertEqual(r.status, 201, r)
        seen = {}

        def reached():
            seen.update(self.sched(doc_id))
            if want == "completed":
                return seen.get("state") == "completed"
            return seen.get("state") == "crashing" and want in ((seen.get("info") or {}).get("error") or "")
        ok = wait_until(reached, seconds=60)
        HostileEndpoints.delete_doc(self, doc_id, user=user)
        self.assertTrue(ok, (doc_id, want, seen))
        return seen

    def test_every_spelling_of_a_loopback_address_is_refused_to_users(self):
        port = self.loop.port
        before = len(self.loop.requests)
        spellings = ["127.0.0.1", "localhost", "localhost.", "2130706433", "0177.0.0.1", "0x7f.0.0.1", "127.1",
                     "0", "[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "0.0.0.0", "127.9.9.9"]
        for i, host in enumerate(spellings):
            with self.subTest(host=host):
                self.replicate(f"u{i}", f"http://{host}:{port}/x/db", self.user, "may not connect")
        # This node's own HTTP port.
        self.replicate("own", f"http://localhost:{self.node.port}/_users", self.user, "may not connect")
        # Nothing reached the loopback endpoint.
        self.assertEqual(self.loop.requests[before:], [])

    def test_allowed_hosts_server_admins_and_redirects(self):
        # An allowed host works for the user...
        self.replicate("ok", f"http://127.0.0.2:{self.honest.port}/plain/db", self.user, "completed")
        # ... but a redirect from it to a denied address is not followed.
        self.replicate("redir", f"http://127.0.0.2:{self.honest.port}/redirect/db", self.user, "another origin")
        # A server admin's document is not restricted.
        self.replicate("adm", f"http://127.0.0.1:{self.loop.port}/plain/db", None, "completed")


def _redirect_info(self, **_):
    return self.answer(302, b"", {"Location": f"http://127.0.0.1:{self.server.port}/plain/db/"})


HostileHandler.redirect_info = _redirect_info

if __name__ == "__main__":
    main()
