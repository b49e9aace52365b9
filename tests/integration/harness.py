"""Test harness: starts real settee processes on free loopback ports and talks HTTP to them.

Every node gets its own temporary data dir and is killed at the end of the test. Requests go
through http.client so tests see exact status codes, headers and bodies.
"""
import atexit
import base64
import fcntl
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

BIN = os.environ.get("SETTEE_BIN", os.path.join(os.path.dirname(__file__), "../../build/settee"))


def is_sanitized(binary=BIN):
    """True for a sanitizer build (its allocator ignores malloc tuning; preloads must not precede it)."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    return "libasan" in out
ADMIN = ("admin", "s3cret")
# Every test node gets this cluster secret unless a test says otherwise (docs/security.md).
CLUSTER_SECRET = "test-cluster-secret-0123456789abcdef"


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
            return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


# Ports this process has claimed: port -> the open file whose lock is the claim.
_claimed = {}
_CLAIM_DIR = os.path.join(tempfile.gettempdir(), "settee-test-ports")
atexit.register(lambda: [f.close() for f in _claimed.values()])


def _claim(port):
    """True when no other test process (ctest runs two at once) has claimed `port`. A claim is an
    flock on a file named for the port, held until this process exits, so a port picked here but
    not yet bound by its node (a Cluster picks every RPC port before it starts the first node) is
    never handed to another test meanwhile (seen in CI: 'Address already in use' on an RPC port)."""
    if port in _claimed:
        return False
    os.makedirs(_CLAIM_DIR, exist_ok=True)
    f = open(os.path.join(_CLAIM_DIR, str(port)), "a")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        return False
    _claimed[port] = f
    return True


def free_port():
    """A loopback port nobody listens on and no other test process has claimed, chosen below the
    kernel's ephemeral range: a port the kernel handed out for bind(0) is also handed to outgoing
    connections (the tests' own clients and the nodes' peer links), which can take it before
    settee listens on it."""
    lo, _ = _ephemeral_range()
    for _ in range(200):
        if lo > 12000:
            port = random.randrange(10000, lo)
        else:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        if _claim(port):
            return port
    raise RuntimeError("no free loopback port")


def mount_small_tmpfs(size, filler_bytes):
    """A fresh tmpfs of `size` (e.g. "4m") on a new temporary directory, with a file of `filler_bytes`
    in it that a test removes to free space. Returns (mount point, filler path); skips the test where
    mounting is not allowed (it needs root)."""
    mnt = tempfile.mkdtemp(prefix="settee-full-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mnt], capture_output=True, text=True)
    if r.returncode != 0:
        os.rmdir(mnt)
        raise unittest.SkipTest(f"cannot mount a tmpfs here (needs root): {r.stderr.strip()}")
    filler = os.path.join(mnt, "filler")
    with open(filler, "wb") as f:
        f.write(b"\0" * filler_bytes)
    return mnt, filler


def unmount(mnt):
    subprocess.run(["umount", mnt], check=False)
    os.rmdir(mnt)


class PortTaken(RuntimeError):
    pass


class Response:
    def __init__(self, status, headers, raw):
        self.status = status
        self.headers = headers
        self.raw = raw
        try:
            self.json = json.loads(raw) if raw else None
        except (ValueError, RecursionError):
            self.json = None

    def header(self, name):
        return self.headers.get(name.lower())

    def __repr__(self):
        return f"<{self.status} {self.raw[:300]!r}>"


class Node:
    """One settee process."""

    def __init__(self, data_dir=None, config=None, env=None, admin=ADMIN, bin=None):
        self.bin = bin or BIN  # another release's binary for upgrade tests
        self.own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="settee-it-")
        self.config = config
        self.admin = admin
        self.env = env
        self.proc = None
        self.port = None
        self.conn = None

    def start(self, port=None):
        # A free port can be taken by another process before settee binds it: try again elsewhere.
        for attempt in range(5):
            try:
                return self._start(port)
            except PortTaken:
                if port is not None or attempt == 4:
                    raise
        raise AssertionError("unreachable")

    def _start(self, port=None):
        self.port = port or free_port()
        args = [self.bin, "--data-dir", self.data_dir, "--port", str(self.port)]
        if self.config is not None:
            path = os.path.join(self.data_dir, "..", os.path.basename(self.data_dir) + ".ini")
            with open(path, "w") as f:
                f.write(self.config)
            args += ["--config", path]
        env = dict(os.environ)
        if self.admin:
            env["SETTEE_ADMIN"] = f"{self.admin[0]}:{self.admin[1]}"
        env.setdefault("SETTEE_CLUSTER_SECRET", CLUSTER_SECRET)
        env.update(self.env or {})
        self.log = open(os.path.join(self.data_dir, "..", os.path.basename(self.data_dir) + ".log"), "a")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, env=env, text=True)
        self.banner = ""
        while "listening on" not in self.banner:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.banner += line
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                if self.request("GET", "/_up", auth=False).status == 200:
                    return self
            except OSError:
                pass
            if self.proc.poll() is not None:
                self.proc.stdout.close()
                self.log.close()
                with open(self.log.name) as f:
                    err = f.read()
                self.proc = None
                if "cannot listen" in err:
                    raise PortTaken(err)
                raise RuntimeError(f"settee exited: {err[-2000:]}")
            time.sleep(0.05)
        raise RuntimeError("settee did not come up")

    def stop(self, sig=signal.SIGTERM):
        if self.conn:
            self.conn.close()
            self.conn = None
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.proc.stdout.close()
            self.log.close()
            self.check_log()
        self.proc = None

    def check_log(self):
        """Sanitizer builds report to stderr (the log); any report fails the test. The log is
        UTF-8, whatever bytes clients sent (node/log.cpp utf8_only)."""
        with open(self.log.name, "rb") as f:
            raw = f.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            line = raw[raw.rfind(b"\n", 0, e.start) + 1:raw.find(b"\n", e.start)]
            raise AssertionError(f"{self.log.name} is not UTF-8 at byte {e.start}: {line!r}")
        for marker in ("runtime error:", "AddressSanitizer", "LeakSanitizer", "ThreadSanitizer"):
            if marker in text:
                raise AssertionError(f"sanitizer report in {self.log.name}:\n{text[-4000:]}")

    def kill(self):
        self.stop(signal.SIGKILL)

    def cleanup(self):
        self.stop()
        if self.own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def auth_header(self, user=None):
        user = user or self.admin
        token = base64.b64encode(f"{user[0]}:{user[1]}".encode()).decode()
        return {"Authorization": "Basic " + token}

    def request(self, method, path, body=None, auth=True, headers=None, user=None, raw_body=None, fresh=False):
        """One request. `body` is JSON-encoded; `raw_body` is sent as is. auth=False: anonymous."""
        h = {}
        if auth:
            h.update(self.auth_header(user))
        if body is not None:
            raw_body = json.dumps(body)
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        for attempt in range(2):
            if self.conn is None or fresh:
                if self.conn is not None:
                    self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            try:
                self.conn.request(method, path, body=raw_body, headers=h)
                r = self.conn.getresponse()
                data = r.read()
                res = Response(r.status, {k.lower(): v for k, v in r.getheaders()}, data.decode("utf-8", "replace"))
                res.data = data  # the bytes as sent (attachments)
                return res
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    # Shorthands
    def raw_stream(self, path, seconds):
        """Reads a streaming response for `seconds`, then hangs up. Returns the decoded body so far."""
        s = socket.create_connection(("127.0.0.1", self.port))
        auth = self.auth_header()["Authorization"]
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\n\r\n".encode())
        s.settimeout(0.05)
        data = b""
        end = time.time() + seconds
        while time.time() < end:
            try:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            except socket.timeout:
                pass
        s.close()
        head, _, body = data.partition(b"\r\n\r\n")
        out, rest = b"", body  # undo chunked encoding
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            try:
                size = int(size_line, 16)
            except ValueError:
                break
            out += rest[:size]
            rest = rest[size + 2:]
        return out.decode()

    def call(self, method, path, body=None):
        """(status, JSON) of one request on a connection of its own: for threads, which must not
        share the node's connection."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = dict(self.auth_header())
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, path, body=data, headers=headers)
            r = conn.getresponse()
            return r.status, json.loads(r.read() or b"null")
        finally:
            conn.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def put(self, path, body=None, **kw):
        return self.request("PUT", path, body, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)


class NodeTest(unittest.TestCase):
    """A test case with one node shared by its tests (started once per class)."""

    config = None

    @classmethod
    def setUpClass(cls):
        cls.node = Node(config=cls.config).start()

    @classmethod
    def tearDownClass(cls):
        cls.node.cleanup()

    def assertError(self, r, status, error, reason=None):
        self.assertEqual(r.status, status, r)
        self.assertIsInstance(r.json, dict, r)
        self.assertEqual(r.json.get("error"), error, r)
        if reason is not None:
            self.assertEqual(r.json.get("reason"), reason, r)
        self.assertEqual(set(r.json), {"error", "reason"}, r)

    def new_db(self, name, q=None):
        path = "/" + name + (f"?q={q}" if q else "")
        r = self.node.put(path)
        self.assertEqual(r.status, 201, r)
        return name


class SlowBuildTest(NodeTest):
    """A node whose requests time out after 300 ms, and databases (q=2, 600 documents) whose design
    document `design` (a class's own) indexes ~2 ms a document: a first query outlasts a request."""

    config = "[couchdb]\nrequest_timeout_ms = 300\n"
    design = None

    def slow_db(self, n, db):
        self.assertEqual(n.put(f"/{db}?q=2").status, 201)
        self.assertEqual(n.post(f"/{db}/_bulk_docs", {"docs": [{"i": i} for i in range(600)]}).status, 201)
        # ~2 ms a document, 600 documents over 2 ranges: at least 0.6 s on two cores.
        self.assertEqual(n.put(f"/{db}/_design/slow", self.design).status, 201)

    def get_outlasting_a_request(self, path):
        """GET `path` of the shared node: 200, after longer than request_timeout_ms."""
        started = time.monotonic()
        r = self.node.get(path)
        self.assertEqual(r.status, 200, r.raw)
        self.assertGreater(time.monotonic() - started, 0.3)  # it did outlast request_timeout_ms
        return r

    def timed_out_then_built(self, db, path):
        """On a node of its own whose view_permsg_timeout is 100 ms: GET `path` of a new slow
        database `db` is a 500 timeout; the build goes on without its asker, and once built `path`
        answers 200: that answer's JSON."""
        n = Node(config=self.config + "[fabric]\nview_permsg_timeout = 100\n").start()
        try:
            self.slow_db(n, db)
            r = n.get(path)
            self.assertEqual(r.status, 500, r.raw)
            self.assertEqual(r.json["error"], "timeout")
            self.assertTrue(wait_until(lambda: n.get(path).status == 200, 60))
            return n.get(path).json
        finally:
            n.stop()
            n.cleanup()


class OwnNodesTest(NodeTest):
    """A test case whose tests start their own nodes: NodeTest's assertions, no shared node."""

    @classmethod
    def setUpClass(cls):
        cls.node = None

    @classmethod
    def tearDownClass(cls):
        pass


class ClockedNodeTest(NodeTest):
    """A node whose clock is a file the test writes (SETTEE_CLOCK_FILE), starting at START."""

    START = 2000000000

    @classmethod
    def setUpClass(cls):
        cls.clock_dir = tempfile.mkdtemp(prefix="settee-clock-")
        cls.clock_file = os.path.join(cls.clock_dir, "now")
        cls.set_time(cls.START)
        cls.node = Node(env={"SETTEE_CLOCK_FILE": cls.clock_file}).start()

    @classmethod
    def tearDownClass(cls):
        cls.node.cleanup()
        shutil.rmtree(cls.clock_dir, ignore_errors=True)

    @classmethod
    def set_time(cls, t):
        write_clock(cls.clock_file, t)


def write_clock(path, t):
    """Sets the time of the nodes reading clock file `path` (SETTEE_CLOCK_FILE) to Unix seconds `t`."""
    with open(path + ".tmp", "w") as f:
        f.write(str(t))
    os.replace(path + ".tmp", path)


# The real clients the tests drive (tests/clients/package.json: PouchDB, pouchdb-server, playwright).
CLIENTS_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients")
CLIENTS_DIR = os.environ.get("SETTEE_CLIENTS_DIR", "/tmp/settee-clients")


def install_clients():
    """Installs them in CLIENTS_DIR (once: install.sh does nothing when they are there)."""
    subprocess.run(["bash", os.path.join(CLIENTS_SRC, "install.sh"), CLIENTS_DIR], check=True, timeout=900)


def wait_until(predicate, seconds=30):
    """Whether `predicate()` held within `seconds` (asked every 50 ms; never sleeps past it)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def main():
    unittest.main(verbosity=2)
