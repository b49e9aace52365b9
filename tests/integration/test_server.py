"""Server endpoints, the CLI contract, configuration and shutdown."""
import http.client
import os
import re
import signal
import subprocess
import tempfile
import time
import unittest

from harness import BIN, Node, NodeTest, main


class ServerEndpoints(NodeTest):
    def test_welcome(self):
        r = self.node.get("/", auth=False)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json["couchdb"], "Welcome")
        self.assertEqual(list(r.json)[:2], ["couchdb", "version"])
        self.assertEqual(len(r.json["uuid"]), 32)
        self.assertEqual(r.json["uuid"], self.node.get("/").json["uuid"])  # stable
        self.assertError(self.node.post("/", {}), 405, "method_not_allowed", "Only GET,HEAD allowed")
        self.assertEqual(self.node.request("HEAD", "/").status, 200)

    def test_up_is_open(self):
        r = self.node.get("/_up", auth=False)
        self.assertEqual((r.status, r.json), (200, {"status": "ok", "seeds": {}}))

    def test_all_dbs(self):
        for name in ["alpha", "beta", "gamma"]:
            self.node.put("/" + name)
        names = self.node.get("/_all_dbs").json
        self.assertEqual(names, sorted(names))
        self.assertTrue({"alpha", "beta", "gamma", "_users", "_replicator"} <= set(names))
        self.assertEqual(self.node.get('/_all_dbs?startkey="b"&endkey="beta"').json, ["beta"])
        self.assertEqual(self.node.get('/_all_dbs?start_key="alpha"&limit=2').json, ["alpha", "beta"])
        self.assertEqual(self.node.get('/_all_dbs?startkey="alpha"&skip=1&limit=1').json, ["beta"])
        self.assertEqual(self.node.get('/_all_dbs?descending=true&startkey="beta"&endkey="alpha"').json,
                         ["beta", "alpha"])
        self.assertEqual(self.node.get('/_all_dbs?startkey="alpha"&endkey="beta"&inclusive_end=false').json,
                         ["alpha"])
        self.assertError(self.node.get("/_all_dbs?limit=abc"), 400, "query_parse_error",
                         'Invalid value for integer: "abc"')
        self.assertError(self.node.get("/_all_dbs?descending=yes"), 400, "query_parse_error",
                         'Invalid boolean parameter: "yes"')
        self.assertError(self.node.get("/_all_dbs?skip=-1"), 400, "query_parse_error")
        self.assertError(self.node.get("/_all_dbs?startkey=notjson"), 400, "bad_request")
        self.assertError(self.node.get("/_all_dbs", auth=False), 401, "unauthorized", "You are not a server admin.")
        self.assertError(self.node.get("/_all_dbs/x"), 404, "not_found")

    def test_uuids(self):
        r = self.node.get("/_uuids", auth=False)
        self.assertEqual(r.status, 200)
        self.assertEqual(len(r.json["uuids"]), 1)
        self.assertIn("no-cache", r.header("Cache-Control"))
        many = self.node.get("/_uuids?count=1000").json["uuids"]
        self.assertEqual(len(set(many)), 1000)
        self.assertTrue(all(len(u) == 32 for u in many))
        self.assertEqual(many, sorted(many))  # sequential algorithm: ordered within a prefix
        self.assertError(self.node.get("/_uuids?count=1001"), 400, "bad_request", "count parameter too large")
        self.assertError(self.node.get("/_uuids?count=-1"), 400, "bad_request", "count must be a positive integer")
        self.assertError(self.node.get("/_uuids?count=x"), 400, "bad_request", "count must be a positive integer")
        self.assertError(self.node.post("/_uuids", {}), 405, "method_not_allowed", "Only GET allowed")

    def test_unknown_endpoints(self):
        name_reason = ("Name: '_nope'. Only lowercase characters (a-z), digits (0-9), and any of the "
                       "characters _, $, (, ), +, -, and / are allowed. Must begin with a letter.")
        # As CouchDB: only a creation validates the name; any other request finds no such database.
        self.assertError(self.node.put("/_nope"), 400, "illegal_database_name", name_reason)
        self.assertError(self.node.get("/_nope"), 404, "not_found", "Database does not exist.")
        self.assertError(self.node.get("/_nope", auth=False), 401, "unauthorized")
        self.assertError(self.node.put("/Upper"), 400, "illegal_database_name")
        self.assertError(self.node.get("/Upper"), 404, "not_found", "Database does not exist.")
        self.assertError(self.node.delete("/Upper"), 404, "not_found", "Database does not exist.")
        self.assertError(self.node.get("/nosuchdb"), 404, "not_found", "Database does not exist.")
        self.assertError(self.node.get("/nosuchdb/doc"), 404, "not_found", "Database does not exist.")

    def test_node_local(self):
        self.assertEqual(self.node.get("/_node/_local").json, {"name": "settee@127.0.0.1"})
        self.assertError(self.node.get("/_node/other@host"), 404, "not_found", "no such node: other@host")

    def test_malformed_http_never_kills_the_node(self):
        import socket
        for junk in [b"GARBAGE\r\n\r\n", b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
                     b"\x00\xff\xfe" * 100 + b"\r\n\r\n", b"POST /db HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc"]:
            with socket.create_connection(("127.0.0.1", self.node.port), timeout=5) as s:
                s.sendall(junk)
                s.shutdown(socket.SHUT_WR)
                try:
                    s.recv(1000)
                except OSError:
                    pass
        self.assertEqual(self.node.get("/_up", fresh=True).status, 200)


class Shutdown(unittest.TestCase):
    def test_sigterm_with_live_feeds_open_exits_at_once(self):
        # Open feeds hold the shards they read: SIGTERM must close them, not wait a minute for each
        # shard (a rolling restart found 60 s stops, then a SIGKILL, with a `_db_updates` follower).
        node = Node().start()
        try:
            node.put("/fed")
            feeds = []
            for path in ("/_db_updates?feed=continuous&heartbeat=1000", "/fed/_changes?feed=continuous&heartbeat=1000"):
                conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=30)
                conn.request("GET", path, headers=dict(node.auth_header()))
                self.assertEqual(conn.getresponse().status, 200)
                feeds.append(conn)
            started = time.time()
            node.proc.send_signal(signal.SIGTERM)
            self.assertEqual(node.proc.wait(timeout=30), 0)
            self.assertLess(time.time() - started, 15, "the node waited for its feeds")
            for conn in feeds:
                conn.close()
            with open(node.log.name) as f:
                self.assertNotIn("still referenced", f.read())
        finally:
            node.cleanup()


class RequestLimits(NodeTest):
    config = "[chttpd]\nmax_http_request_size = 4096\n[future_section]\nunknown_key = kept\n"

    def test_body_over_the_limit_is_413(self):
        self.new_db("limits")
        r = self.node.put("/limits/big", {"x": "y" * 10000}, fresh=True)
        self.assertError(r, 413, "too_large", "the request entity is too large")
        self.assertEqual(self.node.put("/limits/small", {"x": "y"}, fresh=True).status, 201)
        self.assertError(self.node.get("/limits/big", fresh=True), 404, "not_found", "missing")


class CommandLine(NodeTest):
    def run_bin(self, *args, env=None):
        return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=30, env=env)

    def test_help_and_version(self):
        r = self.run_bin("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--data-dir", r.stdout)
        r = self.run_bin("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^settee \d+\.\d+\.\d+(-dev)?\n$")

    def test_time_seq_simulate(self):
        r = self.run_bin("time-seq", "simulate", "--start", "2025-09-01T00:00:00Z", "--step", "3600", "--count", "8")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "   2025-09-01T00:00:00Z -> 3\n"
                                   "   2025-09-01T03:00:00Z -> 3\n"
                                   "   2025-09-01T06:00:00Z -> 2\n")
        # 183 hourly updates: the first roll-up has happened (spec test 13): 32 bins, 6 ... 3.
        r = self.run_bin("time-seq", "simulate", "--start", "3000-01-01T00:00:00Z", "--step", "3600", "--count", "183")
        lines = r.stdout.splitlines()
        self.assertEqual((len(lines), lines[0], lines[-1]), (32, "   3000-01-01T00:00:00Z -> 6", "   3000-01-08T12:00:00Z -> 3"))
        for bad in (["simulate", "--start", "2025-02-30T00:00:00Z", "--step", "1", "--count", "1"],
                    ["simulate", "--start", "2025-09-01T00:00:00Z", "--step", "0", "--count", "1"],
                    ["simulate", "--start", "2025-09-01T00:00:00Z", "--step", "60", "--count", "-3"],
                    ["simulate", "--start", "2025-09-01T00:00:00Z", "--step"],
                    ["simulate", "--bogus", "1"], ["resample"], []):
            r = self.run_bin("time-seq", *bad)
            self.assertEqual(r.returncode, 2, bad)
            self.assertIn("usage: settee time-seq simulate", r.stderr)

    def test_bad_arguments(self):
        self.assertEqual(self.run_bin("--bogus").returncode, 2)
        self.assertEqual(self.run_bin("--port", "99999").returncode, 2)
        self.assertEqual(self.run_bin("--port").returncode, 2)
        with tempfile.TemporaryDirectory() as d:
            r = self.run_bin("--data-dir", d, "--config", os.path.join(d, "missing.ini"))
            self.assertEqual(r.returncode, 1)
            self.assertIn("missing.ini", r.stderr)
            bad = os.path.join(d, "bad.ini")
            with open(bad, "w") as f:
                f.write("[log]\nthis is not ini\n")
            r = self.run_bin("--data-dir", d, "--config", bad)
            self.assertEqual(r.returncode, 1)
            self.assertIn("bad.ini:2", r.stderr)

    def test_port_in_use(self):
        r = self.run_bin("--data-dir", tempfile.mkdtemp(), "--port", str(self.node.port),
                         env={**os.environ, "SETTEE_ADMIN": "a:b"})
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"cannot listen on 127.0.0.1:{self.node.port}: bind: Address already in use", r.stderr)

    def test_a_second_node_on_the_same_data_dir_is_refused(self):
        # Issue 53 item 10: the running node holds DIR/settee.lock; a second process exits at once,
        # naming it, and the first goes on serving.
        with open(os.path.join(self.node.data_dir, "local.ini")) as f:
            before = f.read()
        r = self.run_bin("--data-dir", self.node.data_dir, "--port", "0", env={**os.environ, "SETTEE_ADMIN": "a:b"})
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f"data directory {self.node.data_dir} is in use by another settee process (pid ", r.stderr)
        self.assertEqual(self.node.get("/_up").status, 200)
        with open(os.path.join(self.node.data_dir, "local.ini")) as f:
            self.assertEqual(f.read(), before)  # nothing of it touched

    def test_settee_admin_applies_to_an_existing_data_dir(self):
        # Issue 34: the README's second command (SETTEE_ADMIN=... make run after a first make run)
        # used to be ignored silently once data/ existed.
        env = {k: v for k, v in os.environ.items() if k != "SETTEE_ADMIN"}
        node = Node(admin=None, env=env)
        try:
            node.start()
            generated = node.banner.split("password '")[1].split("'")[0]
            node.stop()
            node.env = {**env, "SETTEE_ADMIN": "admin:chosen"}
            node.start()
            self.assertIn("server admin 'admin' set from SETTEE_ADMIN", node.banner)
            self.assertEqual(node.get("/_all_dbs", user=("admin", "chosen")).status, 200)
            self.assertEqual(node.get("/_all_dbs", user=("admin", generated)).status, 401)
            node.stop()
            node.start()  # the same password again: nothing to change, nothing printed
            self.assertNotIn("SETTEE_ADMIN", node.banner)
            self.assertEqual(node.get("/_all_dbs", user=("admin", "chosen")).status, 200)
        finally:
            node.stop()

    def test_the_cluster_secret_has_one_source(self):
        # Issue 34: with SETTEE_CLUSTER_SECRET set, local.ini held a generated secret the node did not
        # use (the README's "copy it from local.ini" then made a node that never joined).
        def local_ini(node):
            with open(os.path.join(node.data_dir, "local.ini")) as f:
                return f.read()

        given = Node(env={"SETTEE_CLUSTER_SECRET": "s" * 32})
        generated = Node(env={"SETTEE_CLUSTER_SECRET": ""})
        try:
            given.start()
            generated.start()
            self.assertNotIn("[cluster]", local_ini(given))
            self.assertRegex(local_ini(generated), r"\[cluster\]\nsecret = [0-9a-f]{64}\n")
            generated.stop()
            generated.env = {"SETTEE_CLUSTER_SECRET": "t" * 32}
            generated.start()  # given later: the generated one leaves local.ini
            self.assertNotIn("[cluster]", local_ini(generated))
        finally:
            given.stop()
            generated.stop()

    def test_generated_admin_password_is_printed_once_and_stored_hashed(self):
        env = {k: v for k, v in os.environ.items() if k != "SETTEE_ADMIN"}
        node = Node(admin=None, env=env)
        try:
            node.start()
            banner_lines = node.banner
            self.assertIn("created server admin 'admin' with password", banner_lines)
            password = banner_lines.split("password '")[1].split("'")[0]
            with open(os.path.join(node.data_dir, "local.ini")) as f:
                ini = f.read()
            self.assertNotIn(password, ini)
            self.assertIn("admin = -pbkdf2:sha256-", ini)
            self.assertEqual(node.get("/_all_dbs", user=("admin", password)).status, 200)
            self.assertEqual(node.get("/_all_dbs", user=("admin", "wrong")).status, 401)
            node.stop()
            node.start()  # second start: nothing generated, nothing printed
            self.assertNotIn("password", node.banner)
            self.assertEqual(node.get("/_all_dbs", user=("admin", password)).status, 200)
        finally:
            node.cleanup()

    def test_plain_text_admin_in_config_is_hashed(self):
        # Neither the data directory's local.ini nor the operator's file keeps the plain text: the
        # operator's line is replaced by the hash in place (comments, order and mode kept).
        node = Node(admin=None, config="; ops team\n[admins]\n; on call\nops = hunter2\n[log]\nlevel = warning\n")
        operator_ini = os.path.join(node.data_dir, "..", os.path.basename(node.data_dir) + ".ini")
        try:
            node.start()
            self.assertEqual(node.get("/_all_dbs", user=("ops", "hunter2")).status, 200)
            with open(os.path.join(node.data_dir, "local.ini")) as f:
                self.assertNotIn("hunter2", f.read())
            with open(operator_ini) as f:
                lines = f.read().splitlines()
            self.assertEqual(lines[:3], ["; ops team", "[admins]", "; on call"])
            self.assertRegex(lines[3], r"^ops = -pbkdf2:sha256-[0-9a-f]+,[0-9a-f]+,\d+$")
            self.assertEqual(lines[4:], ["[log]", "level = warning"])
            node.stop()
            node.config = "\n".join(lines) + "\n"  # the harness writes its config at each start: as rewritten
            node.start()
            self.assertEqual(node.get("/_all_dbs", user=("ops", "hunter2")).status, 200)
            self.assertEqual(node.get("/_all_dbs", user=("ops", "wrong")).status, 401)
        finally:
            node.cleanup()


class Logs(NodeTest):
    """Issue 34 item 2: timestamped lines with the node's name, a request log by setting, and a
    crash that leaves its signal and a backtrace in the log."""
    config = "[log]\naccess = true\n"

    def log_text(self, node):
        node.log.flush()
        with open(node.log.name) as f:
            return f.read()

    def test_lines_are_stamped_and_requests_logged(self):
        n = self.node
        self.assertEqual(n.get("/_up").status, 200)
        self.assertEqual(n.get("/_all_dbs", auth=False).status, 401)
        line = re.compile(r"^\[info\] \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z settee@127\.0\.0\.1 ")
        # The request log line is written before the answer goes out: it is there once we have it.
        text = self.log_text(n)
        mine = [l for l in text.splitlines() if " admin GET /_up " in l or " GET /_all_dbs " in l]
        self.assertEqual(len(mine), 2, text[-2000:])
        for l in mine:
            self.assertRegex(l, line)
        self.assertRegex(mine[0], r" 127\.0\.0\.1:\d+ admin GET /_up 200 ok \d+$")
        self.assertRegex(mine[1], r" 127\.0\.0\.1:\d+ undefined GET /_all_dbs 401 ok \d+$")

    def test_a_crash_leaves_its_signal_and_a_backtrace(self):
        node = Node()
        try:
            node.start()
            os.kill(node.proc.pid, signal.SIGSEGV)
            self.assertEqual(node.proc.wait(timeout=30), -signal.SIGSEGV)
            text = self.log_text(node)
            # Stamped and naming the node, as every other line (issue 53 item 7).
            self.assertRegex(text, r"\[error\] \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \S+@\S+ settee: "
                                   r"fatal signal 11 \(SIGSEGV\); backtrace:")
            after = text.split("backtrace:", 1)[1].strip().splitlines()
            self.assertGreater(len(after), 2)  # frames
        finally:
            node.cleanup()


if __name__ == "__main__":
    main()
