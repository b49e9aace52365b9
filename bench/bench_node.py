"""One settee node for a benchmark script: the default configuration, admin bench:bench, a
temporary data directory that stop() removes. The binary is argv[1] or build/settee."""
import base64
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
import harness  # noqa: E402

AUTH = {"Authorization": "Basic " + base64.b64encode(b"bench:bench").decode()}


def proc_status(pid, field):
    """A field of /proc/<pid>/status as a number: kB for the memory fields (VmRSS, RssAnon, VmSize),
    a count for Threads; 0 when the field is missing."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far (/proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def du_mb(path):
    """The disk space `path` takes (du), MB."""
    return int(subprocess.run(["du", "-sk", path], capture_output=True, text=True).stdout.split()[0]) / 1024


class KeptConnection:
    """One kept HTTP connection to a node on loopback as bench:bench, opened again once when the node
    closed an idle one (its keep-alive timeout)."""

    def __init__(self, port):
        self.port, self.c = port, None

    def request(self, method, path, body=None):
        """(status, body bytes, seconds the exchange took)."""
        for _ in range(2):
            try:
                if self.c is None:
                    self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
                h = dict(AUTH, **({"Content-Type": "application/json"} if body is not None else {}))
                t = time.perf_counter()
                self.c.request(method, path, body=None if body is None else json.dumps(body), headers=h)
                r = self.c.getresponse()
                data = r.read()
                return r.status, data, time.perf_counter() - t
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.c.close()
                self.c = None
        raise RuntimeError(f"{method} {path}: the node closed the connection twice")


class BenchNode:
    def __init__(self, prefix, config=None, binary=None):
        """`config`: ini text (a cluster member's name, RPC port and seeds); None: the defaults.
        `binary`: None: argv[1] or build/settee."""
        if binary is None:
            binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "build", "settee")
        self.port = harness.free_port()
        self.data = tempfile.mkdtemp(prefix=prefix)
        args = [binary, "--data-dir", self.data, "--port", str(self.port)]
        if config is not None:
            with open(os.path.join(self.data, "local.ini"), "w") as f:
                f.write(config)
            args += ["--config", os.path.join(self.data, "local.ini")]
        env = dict(os.environ, SETTEE_ADMIN="bench:bench", SETTEE_CLUSTER_SECRET="bench-cluster-secret-0123456789")
        self.args, self.env = args, env
        self.proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def restart(self):
        """Stops the node (SIGTERM) and starts it again on the same data and port; returns at once."""
        self.proc.terminate()
        self.proc.wait()
        self.proc = subprocess.Popen(self.args, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def request(self, method, path, body=None):
        """(status, body bytes) on a connection of its own (threads may call it); waits for the start."""
        for _ in range(100):
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
                h = dict(AUTH)
                if body is not None:
                    h["Content-Type"] = "application/json"
                c.request(method, path, body=None if body is None else json.dumps(body), headers=h)
                r = c.getresponse()
                out = r.read()
                c.close()
                return r.status, out
            except ConnectionRefusedError:
                time.sleep(0.1)
        raise RuntimeError("the node did not start")

    def ok(self, method, path, body=None):
        """The body bytes of a request that must succeed (RuntimeError on a 4xx or 5xx)."""
        status, out = self.request(method, path, body)
        if status >= 400:
            raise RuntimeError(f"{method} {path}: {status} {out[:200]!r}")
        return out

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        subprocess.run(["rm", "-rf", self.data])


def bench_cluster(prefix, n, binary=None):
    """n members on loopback, each seeded with the others (otherwise the default configuration);
    returns (nodes, names) once every node lists every member."""
    names = [f"b{i}@127.0.0.1" for i in range(1, n + 1)]
    ports = [harness.free_port() for _ in range(n)]
    nodes = []
    for i in range(n):
        seeds = ", ".join(f"{names[j]}:{ports[j]}" for j in range(n) if j != i)
        config = f"[node]\nname = {names[i]}\n[cluster]\nrpc_port = {ports[i]}\nseeds = {seeds}\n"
        nodes.append(BenchNode(prefix, config, binary))
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            if all(sorted(json.loads(n.request("GET", "/_membership")[1])["all_nodes"]) == names for n in nodes):
                return nodes, names
            time.sleep(0.2)
        raise RuntimeError("the cluster did not form")
    except BaseException:
        for n in nodes:
            n.stop()
        raise
