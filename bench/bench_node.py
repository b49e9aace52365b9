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


class BenchNode:
    def __init__(self, prefix):
        binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "build", "settee")
        self.port = harness.free_port()
        self.data = tempfile.mkdtemp(prefix=prefix)
        env = dict(os.environ, SETTEE_ADMIN="bench:bench", SETTEE_CLUSTER_SECRET="bench-cluster-secret-0123456789")
        self.proc = subprocess.Popen([binary, "--data-dir", self.data, "--port", str(self.port)], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

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

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        subprocess.run(["rm", "-rf", self.data])
