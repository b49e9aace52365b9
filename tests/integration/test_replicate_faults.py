"""Replication through faults (issue 33 point 4): the source behind a proxy this test controls
answers 5xx, answers garbage, cuts connections mid-answer or is down for a while; the replication
retries and backs off, resumes from its last checkpoint, and ends with every document and no
revision the source does not have (no extra conflicts)."""
import http.client
import http.server
import os
import socketserver
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.parse

from harness import NodeTest, free_port, main, wait_until


# Valid JSON of every wrong shape: what a broken or hostile endpoint may answer to anything.
WEIRD = (b'{"results":[3,{"id":5,"changes":"x"},{"id":"zz","changes":[{"rev":7},5]},{"id":"zz","changes":[]}],'
         b'"last_seq":[1],"pending":-1,"zz":5,"docs":7,"rev":{"a":1},"_rev":[],"history":"h"}')


class FaultProxy:
    """Forwards HTTP requests to a node; `plan` is a list of faults for the next requests whose path
    contains `match` ("500", "404", "garbage", "weird", "cut", "half": half the answer, then the
    connection drops, "slow": the answer after slow_s seconds); `down` refuses every request while set."""

    def __init__(self, node, tls=False):
        self.node, self.plan, self.match, self.down, self.seen, self.tls = node, [], "", False, 0, tls
        self.bytes_out = 0  # body bytes relayed from the node
        self.paths = []  # every request's path, in order
        self.slow_s = 2.0  # how late a "slow" answer comes
        self.plans = {}  # more plans: path substring -> faults, for the requests whose path has it
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def relay(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fault = None
                if proxy.down:
                    fault = "cut"
                elif proxy.plan and proxy.match in self.path:
                    fault = proxy.plan.pop(0)
                else:
                    for part, faults in proxy.plans.items():
                        if faults and part in self.path:
                            fault = faults.pop(0)
                            break
                proxy.seen += 1
                proxy.paths.append(self.path)
                if fault == "slow":  # answers, but only after the replicator's read timeout
                    time.sleep(proxy.slow_s)
                if fault == "cut":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if fault in ("500", "404", "garbage", "weird"):
                    data = {"500": b'{"error":"unknown_error","reason":"injected"}', "garbage": b'{"results": [tru',
                            "404": b'{"error":"not_found","reason":"missing"}', "weird": WEIRD}[fault]
                    self.send_response(int(fault) if fault in ("500", "404") else 200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                conn = http.client.HTTPConnection("127.0.0.1", proxy.node.port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                r = conn.getresponse()
                data = r.read()
                proxy.bytes_out += len(data)
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if fault == "half":  # the connection dies halfway through the body
                    self.wfile.write(data[:len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)
                else:
                    self.wfile.write(data)
                conn.close()

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = relay

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.port = free_port()
        self.server = Server(("127.0.0.1", self.port), Handler)
        if tls:  # a self-signed certificate (the replicator, as CouchDB's by default, does not verify)
            self.certs = tempfile.mkdtemp(prefix="settee-tls-")
            key, cert = os.path.join(self.certs, "key.pem"), os.path.join(self.certs, "cert.pem")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                            "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, db):
        user = self.node.admin
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{user[0]}:{urllib.parse.quote(user[1])}@127.0.0.1:{self.port}/{db}"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class ProxiedNodeTest(NodeTest):
    """A node and a FaultProxy in front of it (`self.proxy`)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.proxy = FaultProxy(cls.node)

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        super().tearDownClass()


class ReplicationFaults(ProxiedNodeTest):

    def fill(self, db, start, n):
        r = self.node.post(f"/{db}/_bulk_docs", {"docs": [{"_id": f"f{i:05d}", "i": i} for i in range(start, start + n)]})
        self.assertEqual(r.status, 201, r)

    def exact_copy(self, src, tgt):
        rows = self.node.get(f"/{tgt}/_all_docs?conflicts=true&include_docs=true").json["rows"]
        self.assertFalse([r["id"] for r in rows if "_conflicts" in r["doc"]])
        self.assertEqual([r["id"] for r in rows], [r["id"] for r in self.node.get(f"/{src}/_all_docs").json["rows"]])

    def test_5xx_garbage_and_cut_answers_are_retried(self):
        self.new_db("fsrc1")
        self.fill("fsrc1", 0, 300)
        # Each kind of fault on the source's _bulk_get and _changes: retried within the request
        # (5xx, cut) or by the job (garbage), and the one-shot replication still ends complete.
        self.proxy.match, self.proxy.plan = "_bulk_get", ["500", "cut", "500"]
        r = self.node.post("/_replicate", {"source": self.proxy.url("fsrc1"), "target": "ftgt1", "create_target": True,
                                           "worker_batch_size": 50})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.proxy.plan, [])
        self.exact_copy("fsrc1", "ftgt1")
        self.fill("fsrc1", 300, 50)
        self.proxy.match, self.proxy.plan = "_changes", ["garbage"]
        r = self.node.post("/_replicate", {"source": self.proxy.url("fsrc1"), "target": "ftgt1"})
        self.assertEqual(r.status, 200, r)
        # From the checkpoint, once (figures count on from the checkpoint's, as CouchDB's).
        self.assertEqual(r.json["history"][0]["docs_written"] - r.json["history"][1]["docs_written"], 50)
        self.exact_copy("fsrc1", "ftgt1")

    def test_https_endpoints(self):
        tls = FaultProxy(self.node, tls=True)
        self.addCleanup(tls.stop)
        self.new_db("fsrc5")
        self.fill("fsrc5", 0, 40)
        r = self.node.post("/_replicate", {"source": tls.url("fsrc5"), "target": tls.url("ftgt5"), "create_target": True})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["history"][0]["docs_written"], 40)
        self.exact_copy("fsrc5", "ftgt5")
        self.assertGreater(tls.seen, 5)  # every request went through TLS

    def test_a_source_without_bulk_get_is_read_with_open_revs(self):
        self.new_db("fsrc4")
        self.fill("fsrc4", 0, 30)
        r = self.node.post("/fsrc4/_bulk_docs", {"new_edits": False, "docs": [
            {"_id": "f00003", "_rev": "1-zzzz", "side": "b"},
            {"_id": "att", "_rev": "1-aaaa", "_attachments": {"a.txt": {"content_type": "text/plain", "data": "aGk="}}}]})
        self.assertEqual(r.status, 201, r)
        self.proxy.match, self.proxy.plan = "_bulk_get", ["404"]
        r = self.node.post("/_replicate", {"source": self.proxy.url("fsrc4"), "target": "ftgt4", "create_target": True})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["history"][0]["bulk_get_attempts"], 1)  # then GET ?open_revs= per document
        self.assertEqual(r.json["history"][0]["docs_written"], 32)
        self.assertEqual(self.node.get("/ftgt4/att/a.txt").raw, "hi")
        self.assertEqual(self.node.get("/ftgt4/f00003?conflicts=true").json.get("_conflicts") is not None, True)

    def test_answers_of_every_wrong_shape_never_break_the_node(self):
        self.new_db("fsrc3")
        self.fill("fsrc3", 0, 20)
        for match in ("_changes", "_revs_diff", "_bulk_get", "_local", "fsrc3/"):
            self.proxy.match, self.proxy.plan = match, ["weird"] * 3
            r = self.node.post("/_replicate", {"source": self.proxy.url("fsrc3"), "target": self.proxy.url("ftgt3"),
                                               "create_target": True, "retries_per_request": 0})
            self.assertIn(r.status, (200, 500), (match, r))
            self.assertEqual(self.node.get("/_up").status, 200)
        self.proxy.plan = []
        r = self.node.post("/_replicate", {"source": self.proxy.url("fsrc3"), "target": "ftgt3", "create_target": True})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.node.get("/ftgt3").json["doc_count"], 20)

    def test_a_source_down_for_a_while_is_waited_for_and_resumed_from_the_checkpoint(self):
        self.new_db("fsrc2")
        self.fill("fsrc2", 0, 200)
        body = {"source": self.proxy.url("fsrc2"), "target": "ftgt2", "create_target": True, "continuous": True,
                "checkpoint_interval": 200, "retries_per_request": 1}
        r = self.node.post("/_replicate", body)
        self.assertEqual(r.status, 202, r)
        rep_id = r.json["_local_id"]
        self.addCleanup(lambda: self.node.post("/_replicate", {"replication_id": rep_id, "cancel": True}))
        self.assertTrue(wait_until(lambda: self.node.get("/ftgt2").json.get("doc_count") == 200))
        self.proxy.down = True
        self.fill("fsrc2", 200, 100)
        self.assertTrue(wait_until(lambda: self.node.get(f"/_scheduler/jobs/{urllib.parse.quote(rep_id)}")
                                   .json["info"]["error"] is not None))
        job = self.node.get(f"/_scheduler/jobs/{urllib.parse.quote(rep_id)}").json
        self.assertIn("crashed", [h["type"] for h in job["history"]])
        self.assertEqual(self.node.get("/ftgt2").json["doc_count"], 200)
        self.proxy.down = False  # back: the job's backoff ends and it goes on from its checkpoint
        self.assertTrue(wait_until(lambda: self.node.get("/ftgt2").json.get("doc_count") == 300, 60))
        self.exact_copy("fsrc2", "ftgt2")

    def test_slow_answers_time_out_and_are_retried(self):
        self.new_db("fsrc7")
        self.fill("fsrc7", 0, 120)
        # The source answers _bulk_get and _changes late, after the replication's 500 ms read
        # timeout: each late request is abandoned and sent again, and the copy ends exact.
        self.proxy.plans = {"_bulk_get": ["slow"], "_changes": ["slow"]}
        self.addCleanup(self.proxy.plans.clear)
        self.proxy.slow_s = 1.5
        r = self.node.post("/_replicate", {"source": self.proxy.url("fsrc7"), "target": "ftgt7", "create_target": True,
                                           "connection_timeout": 500, "worker_batch_size": 40})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.proxy.plans, {"_bulk_get": [], "_changes": []})
        self.assertEqual(r.json["history"][0]["docs_written"], 120)
        self.exact_copy("fsrc7", "ftgt7")

    def test_a_caught_up_continuous_replication_waits_on_a_longpoll_of_the_source(self):
        self.new_db("fsrc6")
        self.fill("fsrc6", 0, 10)
        r = self.node.post("/_replicate", {"source": self.proxy.url("fsrc6"), "target": "ftgt6", "create_target": True,
                                           "continuous": True})
        self.assertEqual(r.status, 202, r)
        rep_id = r.json["_local_id"]
        self.addCleanup(lambda: self.node.post("/_replicate", {"replication_id": rep_id, "cancel": True}))
        self.assertTrue(wait_until(lambda: self.node.get("/ftgt6").json.get("doc_count") == 10))
        self.assertTrue(wait_until(lambda: any("feed=longpoll" in p for p in self.proxy.paths)))
        # Caught up, it reads nothing until the longpoll answers (a 200 ms poll would read ~5 times).
        before = len(self.proxy.paths)
        time.sleep(1)  # to see that nothing happens
        self.assertLessEqual(len(self.proxy.paths) - before, 1, self.proxy.paths[before:])
        # A write answers the longpoll: the replication wakes and copies it.
        self.fill("fsrc6", 10, 1)
        self.assertTrue(wait_until(lambda: self.node.get("/ftgt6").json.get("doc_count") == 11))
        self.exact_copy("fsrc6", "ftgt6")


if __name__ == "__main__":
    main()
