"""The HTTP front against idle, slow and malformed clients, with the default configuration.

Before the event-driven front (issue 14), 500 idle keep-alive connections or 200 slowloris clients
kept a new client's GET /_up waiting for 70 s, a node served 96 live feeds, a pipelined request was
dropped, and bad framing waited out a 60 s timeout. Each test below failed on that main.
"""
import resource
import socket
import time

from harness import NodeTest, main


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def read_responses(s, count, timeout=5.0):
    """Reads `count` complete (Content-Length framed) responses; returns [(status, body)]."""
    s.settimeout(timeout)
    data, out = b"", []
    while len(out) < count:
        head_end = data.find(b"\r\n\r\n")
        if head_end >= 0:
            head = data[:head_end].decode()
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            if len(data) >= head_end + 4 + length:
                status = int(head.split(" ")[1])
                if status != 100:
                    out.append((status, data[head_end + 4:head_end + 4 + length].decode()))
                data = data[head_end + 4 + length:]
                continue
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return out


class HttpFront(NodeTest):
    config = "[chttpd]\nheader_timeout = 2\nbody_timeout = 3\n"

    def raw(self, payload, count=1, timeout=5.0):
        with socket.create_connection(("127.0.0.1", self.node.port), timeout=timeout) as s:
            s.sendall(payload)
            return read_responses(s, count, timeout)

    def up(self):
        """GET /_up on a new connection; fails the test if it is not answered within 5 s."""
        got = self.raw(b"GET /_up HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual([g[0] for g in got], [200])

    def test_http10_keep_alive_is_answered_as_such(self):
        # ab -k: HTTP/1.0 with Connection: keep-alive waits for the answer to say it stays open
        # (issue 53 item 8); two requests on one connection, the second answered too.
        with socket.create_connection(("127.0.0.1", self.node.port), timeout=5) as s:
            s.settimeout(5)
            for _ in range(2):
                s.sendall(b"GET /_up HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                head = b""
                while b"\r\n\r\n" not in head:
                    head += s.recv(1)
                self.assertIn(b"\r\nConnection: keep-alive\r\n", head, head)
                length = int([ln.split(b":")[1] for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length")][0])
                body = b""
                while len(body) < length:
                    body += s.recv(length - len(body))
        # Without it HTTP/1.0 closes after the answer, and says so.
        with socket.create_connection(("127.0.0.1", self.node.port), timeout=5) as s:
            s.sendall(b"GET /_up HTTP/1.0\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
            self.assertIn(b"\r\nConnection: close\r\n", data)

    def test_idle_and_slowloris_clients_do_not_block_a_new_one(self):
        raise_fd_limit()
        idle, slow = [], []
        for i in range(1500):  # connected, said nothing
            idle.append(socket.create_connection(("127.0.0.1", self.node.port)))
        for i in range(300):  # used once, then idle on keep-alive
            s = socket.create_connection(("127.0.0.1", self.node.port))
            s.sendall(b"GET /_up HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(read_responses(s, 1)[0][0], 200)
            idle.append(s)
        for i in range(300):  # slowloris: a request line and one header, then nothing
            s = socket.create_connection(("127.0.0.1", self.node.port))
            s.sendall(b"GET /_up HTTP/1.1\r\nX-a: b\r\n")
            slow.append(s)
        for _ in range(50):
            self.up()
        # Slow senders are cut off after [chttpd] header_timeout (2 s here; 15 s by default).
        time.sleep(3)
        closed = 0
        for s in slow:
            s.settimeout(5)
            try:
                while s.recv(65536):
                    pass
                closed += 1
            except ConnectionResetError:
                closed += 1
            except socket.timeout:
                pass  # still open: counted as a failure below
        self.assertEqual(closed, 300)
        for s in idle + slow:
            s.close()
        self.up()

    def test_a_trickling_body_is_cut_at_the_body_deadline(self):
        """One byte every second keeps the 60 s stall timer happy; the whole body has 3 s here."""
        with socket.create_connection(("127.0.0.1", self.node.port), timeout=20) as s:
            s.sendall(b"PUT /x/y HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 1000\r\n\r\n")
            t0 = time.time()
            closed = False
            while time.time() - t0 < 15 and not closed:
                try:
                    s.sendall(b" ")
                    s.settimeout(1)
                    closed = s.recv(4096) == b""
                except socket.timeout:
                    pass
                except OSError:
                    closed = True
            self.assertTrue(closed)
            self.assertLess(time.time() - t0, 10)
        self.up()

    def test_pipelined_requests_are_answered_in_order(self):
        got = self.raw(b"GET /_up HTTP/1.1\r\nHost: x\r\n\r\n"
                       b"GET /_uuids?count=3 HTTP/1.1\r\nHost: x\r\n\r\n"
                       b"GET /nope-db HTTP/1.1\r\nHost: x\r\n\r\n"
                       b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", count=4)
        self.assertEqual([g[0] for g in got], [200, 200, 404, 200])
        self.assertIn('"status":"ok"', got[0][1])
        self.assertIn('"uuids"', got[1][1])
        self.assertIn('"couchdb":"Welcome"', got[3][1])

    def test_malformed_framing_is_400_at_once(self):
        cases = {
            "negative length": b"PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
            "length not a number": b"PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 12abc\r\n\r\n",
            "conflicting lengths": b"PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef",
            "negative chunk size": b"PUT /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nabc\r\n",
            "HTTP/2 preface": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            "no method": b"\r\n\r\nGARBAGE\r\n\r\n",
            "binary": b"\x00\xff\xfe" * 100 + b"\r\n\r\n",
        }
        for name, payload in cases.items():
            t0 = time.time()
            got = self.raw(payload)
            self.assertEqual(len(got), 1, name)
            self.assertEqual(got[0][0], 400, (name, got))
            self.assertIn('"error":"bad_request"', got[0][1], name)
            self.assertLess(time.time() - t0, 4, name)  # not a timeout's answer (60 s before)
        self.up()

    def test_expect_100_continue_and_head(self):
        self.new_db("front")
        auth = self.node.auth_header()["Authorization"].encode()
        body = b'{"x":"' + b"y" * 5000 + b'"}'
        with socket.create_connection(("127.0.0.1", self.node.port), timeout=5) as s:
            s.sendall(b"PUT /front/big HTTP/1.1\r\nHost: x\r\nAuthorization: " + auth +
                      b"\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " +
                      str(len(body)).encode() + b"\r\n\r\n")
            self.assertTrue(s.recv(100).startswith(b"HTTP/1.1 100 Continue\r\n\r\n"))
            s.sendall(body)
            self.assertEqual(read_responses(s, 1)[0][0], 201)
        r = self.node.request("HEAD", "/front/big")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.raw, "")
        self.assertEqual(int(r.header("Content-Length")), len(self.node.get("/front/big").raw))

    def test_framing_by_the_rfc(self):
        """Issue 27: what a proxy in front could read otherwise (request smuggling) is a 400."""
        cases = {
            "space before colon": b"PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length : 7\r\n\r\n{\"a\":1}",
            "tab in a name": b"GET /_up HTTP/1.1\r\nHost: x\r\nX\tY: 1\r\n\r\n",
            "no Host": b"GET /_up HTTP/1.1\r\n\r\n",
            "two Hosts": b"GET /_up HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
            "gzip, chunked": b"PUT /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            "identity": b"PUT /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n",
            "two codings": b"PUT /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                           b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "chunked and a length": b"PUT /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                                    b"Content-Length: 5\r\n\r\n0\r\n\r\n",
        }
        counted = lambda: self.node.get("/_node/_local/_stats").json["couchdb"]["httpd_status_codes"].get(  # noqa: E731
            "400", {"value": 0})["value"]
        before = counted()
        for name, payload in cases.items():
            got = self.raw(payload)
            self.assertEqual([g[0] for g in got], [400], name)
            self.assertIn('"error":"bad_request"', got[0][1], name)
        # Counted as any answer, and said in the log (issue 53 item 7; at most a line every 10 s).
        self.assertEqual(counted() - before, len(cases))
        with open(self.node.log.name) as f:
            self.assertRegex(f.read(), r"\[warning\] .* refused a request from 127\.0\.0\.1:\d+ \(400\): ")
        # What stays allowed: HTTP/1.0 without Host, a chunked body, case and spaces in the coding.
        self.assertEqual([g[0] for g in self.raw(b"GET /_up HTTP/1.0\r\n\r\n")], [200])
        got = self.raw(b"POST /_session HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:  Chunked \r\n"
                       b"Content-Type: application/json\r\n\r\nc\r\n{\"name\":\"x\"}\r\n0\r\n\r\n")
        self.assertEqual(got[0][0], 401, got)  # read whole, then refused as a wrong password
        self.up()

    def test_expect_100_continue_without_a_body_is_answered_at_once(self):
        for payload in (b"GET /_up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n",
                        b"GET /_up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n"):
            t0 = time.time()
            got = self.raw(payload, timeout=5)
            self.assertEqual([g[0] for g in got], [200], payload)  # and no 100 before it
            self.assertLess(time.time() - t0, 3)
        # A body sent at once with the headers (no wait for 100) is answered too.
        got = self.raw(b"POST /_session HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                       b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", timeout=5)
        self.assertEqual(len(got), 1, got)

    def test_range_is_ignored_on_json(self):
        self.new_db("ranged")
        r = self.node.put("/ranged/d", {"x": 1}, headers={"Range": "bytes=0-1"})
        self.assertEqual(r.status, 201)
        self.assertTrue(r.json["ok"])


if __name__ == "__main__":
    main()
