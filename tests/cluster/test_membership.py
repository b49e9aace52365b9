"""Cluster membership over Cap'n Proto RPC between real settee processes on loopback."""
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import Node, NodeTest, free_port, main  # noqa: E402


def wait_for(predicate, seconds=15):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


class Cluster:
    """n settee processes, each seeded with all the others. Automatic sync is off unless asked for:
    these tests drive internal replication by hand."""

    def __init__(self, n, seed_all=True, sync_interval_ms=0, extra_config=""):
        self.names = [f"n{i}@127.0.0.1" for i in range(1, n + 1)]
        self.rpc_ports = [free_port() for _ in range(n)]
        self.nodes = []
        for i in range(n):
            peers = [f"{self.names[j]}:{self.rpc_ports[j]}" for j in range(n) if j != i and (seed_all or j == 0)]
            config = (f"[node]\nname = {self.names[i]}\n[cluster]\nrpc_port = {self.rpc_ports[i]}\n"
                      f"seeds = {', '.join(peers)}\nsync_interval_ms = {sync_interval_ms}\n{extra_config}")
            self.nodes.append(Node(config=config))

    def start(self):
        try:
            for node in self.nodes:
                node.start()
        except BaseException:
            self.cleanup()  # setUpClass failed: tearDownClass will not run, so stop what did start
            raise
        return self

    def cleanup(self):
        for node in self.nodes:
            node.cleanup()

    def wait_connected(self, timeout=20):
        """Waits until every node lists every member as connected; returns self."""
        names = sorted(self.names)
        for n in self.nodes:
            assert wait_for(lambda n=n: n.get("/_membership", fresh=True).json["all_nodes"] == names, timeout)
        return self


class ClusterTest(NodeTest):
    """A test case over one Cluster shared by its tests: NODES members (automatic sync every
    SYNC_INTERVAL_MS, 0 = off), all connected before the first test; `cluster`, `nodes` and `node`
    (the first member)."""

    NODES, SYNC_INTERVAL_MS = 3, 0
    EXTRA_CONFIG = ""  # ini text added to every member's

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(cls.NODES, sync_interval_ms=cls.SYNC_INTERVAL_MS, extra_config=cls.EXTRA_CONFIG).start()
        try:
            cls.cluster.wait_connected()
        except BaseException:
            cls.cluster.cleanup()  # tearDownClass will not run
            raise
        cls.nodes = cls.cluster.nodes
        cls.node = cls.nodes[0]

    @classmethod
    def tearDownClass(cls):
        cls.cluster.cleanup()


class Writers:
    """One thread per node, each PUTting new documents `w<k>-<n>` into `db` (at most `limit`) until
    stopped: `acked` maps the ids answered 201/202 to their revs, `failures` holds the rest."""

    def __init__(self, nodes, db, limit=3000):
        self.acked, self.failures, self._stop = {}, [], threading.Event()
        self._threads = [threading.Thread(target=self._write, args=(k, n, db, limit)) for k, n in enumerate(nodes)]

    def _write(self, k, node, db, limit):
        n = 0
        while not self._stop.is_set() and n < limit:
            doc_id = f"w{k}-{n:05d}"
            status, body = node.call("PUT", f"/{db}/{doc_id}", {"n": n})
            if status in (201, 202):
                self.acked[doc_id] = body["rev"]
            else:
                self.failures.append((k, status, body))
            n += 1

    def start(self):
        for t in self._threads:
            t.start()
        return self

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join()


class Membership(NodeTest):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(3).start()
        cls.node = cls.cluster.nodes[0]

    @classmethod
    def tearDownClass(cls):
        cls.cluster.cleanup()

    def membership(self, i):
        return self.cluster.nodes[i].get("/_membership", fresh=True).json

    def test_all_nodes_connect_then_follow_a_node_down_and_back(self):
        c = self.cluster
        everyone = sorted(c.names)
        for i in range(3):
            self.assertTrue(wait_for(lambda i=i: self.membership(i)["all_nodes"] == everyone), self.membership(i))
            self.assertEqual(self.membership(i)["cluster_nodes"], everyone)
        # Kill -9 the third node: the others notice (connection reset or ping deadline).
        c.nodes[2].kill()
        for i in range(2):
            self.assertTrue(wait_for(lambda i=i: self.membership(i)["all_nodes"] == everyone[:2]), self.membership(i))
            self.assertEqual(self.membership(i)["cluster_nodes"], everyone)  # still a member
        c.nodes[2].start(port=c.nodes[2].port)
        for i in range(3):
            self.assertTrue(wait_for(lambda i=i: self.membership(i)["all_nodes"] == everyone), self.membership(i))

    def test_a_hung_node_is_detected_by_the_ping_deadline(self):
        c = self.cluster
        everyone = sorted(c.names)
        self.assertTrue(wait_for(lambda: self.membership(0)["all_nodes"] == everyone))
        c.nodes[1].proc.send_signal(signal.SIGSTOP)  # connection stays open, nothing answers
        try:
            self.assertTrue(wait_for(lambda: c.names[1] not in self.membership(0)["all_nodes"], 10))
        finally:
            c.nodes[1].proc.send_signal(signal.SIGCONT)
        self.assertTrue(wait_for(lambda: self.membership(0)["all_nodes"] == everyone))

    def test_membership_endpoint_rules(self):
        self.assertError(self.node.get("/_membership", auth=False), 401, "unauthorized")
        self.assertError(self.node.post("/_membership", {}), 405, "method_not_allowed", "Only GET allowed")
        self.assertEqual(self.node.get("/_up").status, 200)


class Introductions(NodeTest):
    def test_nodes_seeded_with_one_node_are_dialled_back(self):
        cluster = Cluster(3, seed_all=False).start()  # n2 and n3 know only n1
        try:
            n1 = cluster.nodes[0]
            everyone = sorted(cluster.names)
            self.assertTrue(wait_for(lambda: n1.get("/_membership", fresh=True).json["all_nodes"] == everyone))
            n2 = cluster.nodes[1].get("/_membership", fresh=True).json
            self.assertIn("n1@127.0.0.1", n2["all_nodes"])
        finally:
            cluster.cleanup()


class BadClusterConfig(NodeTest):
    @classmethod
    def setUpClass(cls):
        pass

    @classmethod
    def tearDownClass(cls):
        pass

    def test_bad_seeds_and_ports_stop_the_node_with_a_reason(self):
        import subprocess
        import tempfile
        from harness import BIN
        for cfg, needle in [("[cluster]\nrpc_port = 0\nseeds = nonsense\n", "seed `nonsense`"),
                            ("[cluster]\nrpc_port = 99999\n", "rpc_port"),
                            ("[cluster]\nrpc_port = 0\nseeds = a@h:1,,b@h:2\n", "empty entry")]:
            with tempfile.TemporaryDirectory() as d:
                ini = os.path.join(d, "c.ini")
                with open(ini, "w") as f:
                    f.write(cfg)
                r = subprocess.run([BIN, "--data-dir", d, "--port", "0", "--config", ini], capture_output=True,
                                   text=True, timeout=30, env={**os.environ, "SETTEE_ADMIN": "a:b"})
                self.assertEqual(r.returncode, 1, r)
                self.assertIn(needle, r.stderr)


if __name__ == "__main__":
    main()
