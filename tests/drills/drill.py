"""The ansible drills' parts: a local inventory of settee nodes on this host (each its own data dir,
ports and pid file, started by start-stop-daemon), a runner for the playbooks in ansible/, and a
client load (writers, a continuous `_changes` follower, a `_db_updates` follower, an /_up monitor)
that records what a real client would see while the playbooks work."""
import base64
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import free_port  # noqa: E402

BIN = os.path.abspath(os.environ.get("SETTEE_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                                                 "settee")))
SOURCE = os.environ.get("SETTEE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
ANSIBLE_DIR = os.path.join(SOURCE, "ansible")
PASSWORD = "drill-admin-password"
SECRET = "drill-cluster-secret-0123456789abcdef0123"


class Client:
    """Admin requests to one node, each on a connection of its own (threads share nothing)."""

    def __init__(self, port, timeout=15):
        self.port, self.timeout = port, timeout
        self.auth = "Basic " + base64.b64encode(f"admin:{PASSWORD}".encode()).decode()

    def call(self, method, path, body=None, timeout=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout or self.timeout)
        headers = {"Authorization": self.auth}
        data = None
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body), "application/json"
        try:
            conn.request(method, path, body=data, headers=headers)
            r = conn.getresponse()
            raw = r.read()
            try:
                return r.status, json.loads(raw or b"null")
            except ValueError:
                return r.status, raw.decode(errors="replace")
        finally:
            conn.close()

    def get(self, path, **kw):
        return self.call("GET", path, **kw)


class Inventory:
    """n nodes on 127.0.0.1 as ansible hosts `node1`.. with connection local, under one temp dir."""

    def __init__(self, n, group="settee"):
        self.dir = tempfile.mkdtemp(prefix="settee-drill-")
        self.group = group
        self.hosts = {}
        for i in range(1, n + 1):
            self.add(f"node{i}")

    def add(self, host):
        root = os.path.join(self.dir, host)
        self.hosts[host] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": "/usr/bin/python3",
            "settee_host": "127.0.0.1",
            "settee_node_name": f"{host}@127.0.0.1",
            "settee_http_port": free_port(),
            "settee_rpc_port": free_port(),
            "settee_bin": os.path.join(root, "bin", "settee"),
            "settee_config_dir": os.path.join(root, "etc"),
            "settee_data_dir": os.path.join(root, "data"),
            "settee_run_dir": os.path.join(root, "run"),
        }
        return host

    def write(self, groups=None):
        """The inventory file; `groups` maps further group names to host lists."""
        children = {self.group: {"hosts": {h: v for h, v in self.hosts.items() if h in self.members}}}
        for name, hosts in (groups or {}).items():
            children[name] = {"hosts": {h: self.hosts[h] for h in hosts}}
        inv = {"all": {"vars": {
            "settee_install_method": "binary",
            "settee_service_manager": "process",
            "settee_sync_interval_ms": 300,
            "settee_wait_seconds": 60,
        }, "children": children}}
        path = os.path.join(self.dir, "hosts.json")
        with open(path, "w") as f:
            json.dump(inv, f, indent=1)
        return path

    members = property(lambda self: getattr(self, "_members", list(self.hosts)))

    def set_members(self, hosts):
        self._members = list(hosts)

    def client(self, host):
        return Client(self.hosts[host]["settee_http_port"])

    def name(self, host):
        return self.hosts[host]["settee_node_name"]

    def pid(self, host):
        try:
            with open(os.path.join(self.hosts[host]["settee_run_dir"], "settee.pid")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def log(self, host):
        try:
            with open(os.path.join(self.hosts[host]["settee_run_dir"], "settee.log")) as f:
                return f.read()
        except OSError:
            return ""

    def stop_all(self):
        for host in self.hosts:
            pid = self.pid(host)
            if pid:
                try:
                    os.kill(pid, 15)
                except OSError:
                    pass
        deadline = time.time() + 30
        for host in self.hosts:
            pid = self.pid(host)
            while pid and time.time() < deadline and os.path.exists(f"/proc/{pid}"):
                time.sleep(0.1)

    def cleanup(self):
        self.stop_all()
        shutil.rmtree(self.dir, ignore_errors=True)


def playbook(inventory_path, name, log_dir, check=False, **extra):
    """Runs ansible/<name> against the inventory (check: with --check --diff, changing nothing);
    returns (seconds, output). Fails with the output's end when the play fails."""
    env = dict(os.environ)
    env.update({"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8",  # ansible refuses to run without a UTF-8 locale
                "SETTEE_ADMIN_PASSWORD": PASSWORD, "SETTEE_CLUSTER_SECRET": SECRET,
                "ANSIBLE_CONFIG": os.path.join(ANSIBLE_DIR, "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_LOCAL_TEMP": os.path.join(log_dir, ".ansible-tmp"),
                "ANSIBLE_HOME": os.path.join(log_dir, ".ansible")})
    args = ["ansible-playbook", "-i", inventory_path, name,
            "-e", f"settee_admin_password={PASSWORD}", "-e", f"settee_cluster_secret={SECRET}"]
    for k, v in extra.items():
        args += ["-e", json.dumps({k: v})]
    if check:
        args += ["--check", "--diff"]
    started = time.time()
    r = subprocess.run(args, cwd=ANSIBLE_DIR, env=env, capture_output=True, text=True, timeout=900)
    took = time.time() - started
    out = r.stdout + r.stderr
    with open(os.path.join(log_dir, name.replace("/", "_") + ".log"), "a") as f:
        f.write(out)
    if r.returncode != 0:
        raise AssertionError(f"ansible-playbook {name} failed ({r.returncode}):\n{out[-6000:]}")
    return took, out


class Load:
    """Client load on every node while a playbook runs.

    - writers: one per node, PUTting new documents `w<k>-<i>` into `db` on node k only; `acked`
      holds the revs answered 201/202, `failures` (host, time, what) the rest;
    - a continuous `_changes` follower of `db` that moves to the next node when its node goes away
      and resumes from the last seq it read: `seen` maps ids to revs, `replays` lists the rows it
      had already been given (a feed resumed on another copy repeats what came after that copy's
      last internal-replication checkpoint), `resolutions` each resume's X-Settee-Since-Resolution,
      `feed_errors` answers other than a dropped connection;
    - a continuous `_db_updates` follower, on whichever node serves it (releases before 0.3 answer
      400 illegal_database_name): `db_rows` are its rows, `db_resolutions` each resume's
      X-Settee-Since-Resolution, `db_errors` answers other than a dropped connection or a 404;
    - an /_up monitor: `down[host]` lists the times a node did not answer, to tell the failures of
      the node being restarted from any other."""

    def __init__(self, inv, hosts, db):
        self.inv, self.hosts, self.db = inv, list(hosts), db
        self.acked, self.failures = {}, []
        self.seen, self.feed_errors, self.feed_resumes = {}, [], 0
        self.replays, self.resolutions = [], []
        self.db_rows, self.db_errors, self.db_resolutions = [], [], []
        self.down = {h: [] for h in self.hosts}
        self.lock, self.stop_event, self.writers_stop = threading.Lock(), threading.Event(), threading.Event()
        self.writers = [threading.Thread(target=self._writer, args=(k, h), daemon=True)
                        for k, h in enumerate(self.hosts)]
        self.threads = self.writers + [threading.Thread(target=f, daemon=True)
                                       for f in (self._changes, self._db_updates, self._monitor)]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self, catch_up_s=60):
        """Stops the writers, lets the `_changes` follower read up to the last acknowledged write
        (at most `catch_up_s`), then stops the followers and the monitor."""
        self.writers_stop.set()
        for t in self.writers:
            t.join(60)
        deadline = time.time() + catch_up_s
        while time.time() < deadline and any(d not in self.seen for d in list(self.acked)):
            time.sleep(0.2)
        self.stop_event.set()
        for t in self.threads:
            t.join(60)

    def _writer(self, k, host):
        client, i = self.inv.client(host), 0
        while not self.writers_stop.is_set():
            doc_id = f"w{k}-{i:06d}"
            i += 1
            try:
                status, body = client.call("PUT", f"/{self.db}/{doc_id}", {"k": k, "i": i})
            except OSError as e:
                status, body = "connection", str(e)
            if status in (201, 202):
                with self.lock:
                    self.acked[doc_id] = body["rev"]
                time.sleep(0.02)  # a steady load, not a flood: ~30-40 writes/s per node
            else:
                with self.lock:
                    self.failures.append((host, time.time(), status, body))
                time.sleep(0.1)

    def _follow(self, path, first, on_open, on_refused, on_row, count_resumes=False):
        """A continuous feed (`path` + `since=`) from the hosts in turn, starting at index `first`:
        on a dropped connection or a refusal it goes on from the next host at the last seq read.
        on_open(host, response) when a feed starts; on_refused(host, status, body) for an answer
        other than 200; on_row(host, row, since) for each row."""
        since, k = "0", first
        while not self.stop_event.is_set():
            host = self.hosts[k % len(self.hosts)]
            port = self.inv.hosts[host]["settee_http_port"]
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            try:
                conn.request("GET", f"{path}?feed=continuous&heartbeat=1000&since={since}",
                             headers={"Authorization": Client(port).auth})
                r = conn.getresponse()
                if r.status != 200:
                    on_refused(host, r.status, r.read()[:300])
                    raise OSError(f"status {r.status}")
                on_open(host, r)
                while not self.stop_event.is_set():
                    line = r.readline()
                    if not line:
                        raise OSError("feed closed")
                    if not line.strip():
                        continue
                    row = json.loads(line)
                    if "last_seq" in row:
                        since = row["last_seq"]
                        break
                    with self.lock:
                        on_row(host, row, since)
                    since = row["seq"]
            except (OSError, http.client.HTTPException, ValueError):
                k += 1  # the node went away: go on from another
                self.feed_resumes += count_resumes
                time.sleep(0.2)
            finally:
                conn.close()

    def _changes(self):
        def row(host, row, since):
            rev = row["changes"][0]["rev"]
            if self.seen.get(row["id"]) == rev:
                self.replays.append((host, self.feed_resumes, since, row["id"]))
            self.seen[row["id"]] = rev

        self._follow(f"/{self.db}/_changes", len(self.hosts) - 1,
                     lambda host, r: self.resolutions.append(
                         (host, self.feed_resumes, r.getheader("X-Settee-Since-Resolution"))),
                     lambda host, status, body: self.feed_errors.append((host, status, body)), row,
                     count_resumes=True)

    def _db_updates(self):
        def refused(host, status, body):
            # Releases before 0.3 have no _db_updates: they take it for a database name.
            if status != 503 and b"illegal_database_name" not in body:
                self.db_errors.append((host, status, body))

        self._follow("/_db_updates", 0,
                     lambda host, r: self.db_resolutions.append((host, r.getheader("X-Settee-Since-Resolution"))),
                     refused,
                     lambda host, row, since: self.db_rows.append(row))

    def _monitor(self):
        while not self.stop_event.is_set():
            for h in self.hosts:
                try:
                    status, _ = Client(self.inv.hosts[h]["settee_http_port"], timeout=1).call("GET", "/_up")
                    up = status == 200
                except OSError:
                    up = False
                if not up:
                    self.down[h].append(time.time())
            time.sleep(0.1)

    def unexpected_failures(self, margin=3.0):
        """Failures of a node that was answering /_up around that moment (within `margin` s of a
        moment it did not), and any failure that is not a dropped connection or a 503."""
        bad = []
        for host, t, status, body in self.failures:
            near_down = any(abs(t - d) <= margin for d in self.down[host])
            if status not in ("connection", 503) or not near_down:
                bad.append((host, round(t, 2), status, str(body)[:200]))
        return bad

    def most_repeated(self):
        """The most rows one resume of the `_changes` follower repeated."""
        per = {}
        for _, resume, _, _ in self.replays:
            per[resume] = per.get(resume, 0) + 1
        return max(per.values(), default=0)

    def down_windows(self):
        """host -> [(first, last)] moments it did not answer, runs split by gaps over 5 s."""
        out = {}
        for h, times in self.down.items():
            runs = []
            for t in times:
                if runs and t - runs[-1][1] <= 5:
                    runs[-1][1] = t
                else:
                    runs.append([t, t])
            out[h] = [tuple(r) for r in runs]
        return out


def version_of(client):
    return client.get("/")[1]["vendor"]["version"]


_NEW = []


def new_version():
    """This build's version (what `settee --version` prints, as GET / answers it)."""
    if not _NEW:
        out = subprocess.run([BIN, "--version"], capture_output=True, text=True).stdout.split()
        _NEW.append(out[-1])
    return _NEW[0]


class DrillTest(unittest.TestCase):
    """A test on a fresh 3-node inventory (`self.inv`), removed afterwards."""

    def setUp(self):
        self.inv = Inventory(3)
        self.logs = self.inv.dir
        self.times = {}
        # SETTEE_KEEP_DRILL=1 keeps the nodes' directories, logs and the playbooks' output.
        self.addCleanup(self.inv.stop_all if os.environ.get("SETTEE_KEEP_DRILL") else self.inv.cleanup)

    def play(self, name, check=False, **extra):
        try:
            took, out = playbook(self.inv.write(), name, self.logs, check=check, **extra)
        except AssertionError as e:  # the nodes' own words, e.g. why one did not start
            logs = "".join(f"\n--- {h} log (end) ---\n{self.inv.log(h)[-1500:]}" for h in self.inv.hosts)
            raise AssertionError(f"{e}{logs}") from None
        self.times[" ".join([name] + [str(extra[k]) for k in ("reshard_type",) if k in extra] +
                            (["--check"] if check else []))] = took
        return out

    @staticmethod
    def changed(out):
        """{host: changed count} from a playbook's PLAY RECAP."""
        return {h: int(n) for h, n in re.findall(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", out, re.M)}

    def check_load(self, load, label):
        bad = load.unexpected_failures()
        self.assertEqual(bad, [], f"{label}: requests failed against nodes that were answering")
        self.assertEqual(load.feed_errors, [], f"{label}: the _changes follower got errors")
        # Not rewound: no resume said so, and a resume on another copy repeats only what came after
        # that copy's last internal-replication checkpoint (a few hundred ms of writes; a rewind to
        # 0, CouchDB's answer, would repeat every row since the start).
        self.assertNotIn("rewound", [r for _, _, r in load.resolutions], f"{label}: {load.resolutions}")
        self.assertLess(load.most_repeated(), 1000, f"{label}: a resume repeated many rows: {load.replays[:5]}")
        self.assertEqual(load.db_errors, [], f"{label}: the _db_updates follower got errors")
        self.assertGreater(len(load.acked), 100, label)
        client = self.inv.client(self.inv.members[0])
        for h in self.inv.members:  # every node pushes what it has, then every acked write is everywhere
            status, body = self.inv.client(h).call("POST", f"/{load.db}/_sync_shards", {})
            self.assertEqual((status, body.get("ok")), (200, True), body)
        lost = [d for d, rev in load.acked.items() if client.get(f"/{load.db}/{d}")[1].get("_rev") != rev]
        self.assertEqual(lost, [], f"{label}: acknowledged writes lost")
        unseen = [d for d in load.acked if d not in load.seen]
        self.assertEqual(unseen, [], f"{label}: the _changes follower never saw these acknowledged writes")
        windows = {h: [(round(a - load.t0, 1), round(b - load.t0, 1)) for a, b in w]
                   for h, w in load.down_windows().items()}
        print(f"\n  {label}: {len(load.acked)} writes acked, {len(load.failures)} failed against a restarting "
              f"node, feed resumed {load.feed_resumes} times (at most {load.most_repeated()} rows repeated; "
              f"{[r for _, _, r in load.resolutions]}), {len(load.db_rows)} _db_updates rows; "
              f"nodes down (s from start): {windows}", file=sys.stderr)
        return windows

    def check_javascript(self, label):
        """Saves a design document with a view and a validate_doc_update on one of the members (a
        different one each call) and uses both: issue 53 item 2, a binary-mode deploy once left
        settee-js behind, and such a save answered 500 "JavaScript is not available"."""
        n = getattr(self, "js_checks", 0)
        self.js_checks = n + 1
        host = self.inv.members[n % len(self.inv.members)]
        c = self.inv.client(host)
        status, body = c.call("PUT", "/jsdrill")
        self.assertIn(status, (201, 412), (label, host, body))
        ddoc = {"views": {"v": {"map": "function(doc) { if (doc.k) emit(doc.k, 1); }", "reduce": "_count"}},
                "validate_doc_update": "function(doc) { if (doc.bad) throw({forbidden: 'bad ' + doc._id}); }"}
        status, body = c.call("PUT", f"/jsdrill/_design/js{n}", ddoc)
        self.assertEqual(status, 201, (label, host, body))
        status, body = c.call("PUT", f"/jsdrill/bad{n}", {"bad": True})
        self.assertEqual((status, body), (403, {"error": "forbidden", "reason": f"bad bad{n}"}), (label, host))
        self.assertEqual(c.call("PUT", f"/jsdrill/good{n}", {"k": label})[0], 201, (label, host))
        key = urllib.parse.quote(json.dumps(label))
        # A write is acknowledged by a quorum of copies (2 of 3); the view reads one copy of each
        # range, which may be the third, a moment behind (CouchDB's views read the same way): the
        # row is waited for, a bounded time.
        deadline = time.time() + 30
        while True:
            status, body = c.get(f"/jsdrill/_design/js{n}/_view/v?key={key}&reduce=false")
            got = (status, [r["id"] for r in body.get("rows", [])])
            if got == (200, [f"good{n}"]) or time.time() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(got, (200, [f"good{n}"]), (label, host, body))

    def start_load(self, db):
        load = Load(self.inv, self.inv.members, db)
        load.t0 = time.time()
        return load.start()

