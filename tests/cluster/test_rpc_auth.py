"""The cluster RPC port serves only nodes that prove the cluster secret (issue 13, point 1).

A hand-built Cap'n Proto client (tests/tools/rpc_probe.cpp) calls every method of the Node
interface without a handshake, with a handshake from an older release, with a wrong secret and with a
replayed proof: every call is refused. With the right secret every call answers (the control that
shows the probe can tell the difference). Two nodes with different secrets never connect."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import CLUSTER_SECRET, Node, NodeTest, free_port, main  # noqa: E402
from test_membership import Cluster, wait_for  # noqa: E402

PROBE = os.environ.get("SETTEE_RPC_PROBE", os.path.join(os.path.dirname(__file__), "../../build/tests/rpc_probe"))
METHODS = ["ping", "shardInfo", "applyChanges", "updateDocs", "changesPage", "resolveSince", "readDoc",
           "allDocsPage", "timeSeq"]


OTHER_SECRET = "another-secret-0123456789abcdef"


def stranger(config):
    """A node that holds another cluster secret."""
    return Node(config=config, env={"SETTEE_CLUSTER_SECRET": OTHER_SECRET}).start()


def all_nodes(node):
    return node.get("/_membership", fresh=True).json["all_nodes"]


def probe(port, *mode):
    out = subprocess.run([PROBE, "127.0.0.1", str(port), *mode], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return {row["method"]: row for row in map(json.loads, out.stdout.splitlines())}


class RpcAuth(NodeTest):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(2).start()
        cls.node = cls.cluster.nodes[0]
        cls.port = cls.cluster.rpc_ports[0]

    @classmethod
    def tearDownClass(cls):
        cls.cluster.cleanup()

    def assertRefused(self, rows, mode):
        for m in METHODS:
            self.assertIn(m, rows, (mode, rows))
            self.assertFalse(rows[m]["ok"], (mode, m, rows[m]))
        # Still alive and serving its own clients.
        self.assertEqual(self.node.get("/_up", fresh=True).status, 200)

    def test_every_method_refused_without_a_handshake(self):
        rows = probe(self.port, "none")
        self.assertRefused(rows, "none")
        self.assertIn("unauthenticated", rows["shardInfo"]["error"])
        self.assertTrue(rows["challenge"]["ok"], rows)  # the one call open to anyone

    def test_every_method_refused_for_a_legacy_handshake(self):
        rows = probe(self.port, "legacy")
        self.assertFalse(rows["handshake"]["ok"], rows)
        self.assertIn("did not prove the cluster secret", rows["handshake"]["error"])
        self.assertRefused(rows, "legacy")

    def test_every_method_refused_with_a_wrong_secret(self):
        rows = probe(self.port, "wrong")
        self.assertFalse(rows["handshake"]["ok"], rows)
        self.assertIn("wrong cluster secret", rows["handshake"]["error"])
        self.assertRefused(rows, "wrong")
        # The refusing node says so in its own log (issue 53), naming the name the peer gave.
        def logged():
            with open(self.node.log.name) as f:
                return [l for l in f if "cluster RPC: refused a peer: wrong cluster secret from a peer calling itself" in l]
        self.assertTrue(wait_for(lambda: logged(), 10), "no log line for the refused peer")
        self.assertRegex(logged()[0], r"^\[warning\] \d{4}-\d\d-\d\dT[\d:.]+Z \S+ cluster RPC: refused a peer")

    def test_a_replayed_proof_is_refused(self):
        rows = probe(self.port, "replay", CLUSTER_SECRET)
        self.assertTrue(rows["handshake-original"]["ok"], rows)
        self.assertFalse(rows["handshake"]["ok"], rows)
        self.assertRefused(rows, "replay")

    def test_the_right_secret_opens_every_method(self):
        rows = probe(self.port, "right", CLUSTER_SECRET)
        for m in ["handshake"] + METHODS:
            self.assertTrue(rows[m]["ok"], (m, rows[m]))
        self.assertFalse(rows["challenge"]["ok"], rows)  # one handshake per connection

    def test_json_in_rpc_payloads_is_depth_limited(self):
        self.assertEqual(self.node.put("/deep?q=1").status, 201)
        rows = probe(self.port, "deep", CLUSTER_SECRET, "deep")
        self.assertTrue(rows["handshake"]["ok"], rows)
        for m in ("updateDocs", "updateDocs-replicated", "applyChanges"):
            self.assertFalse(rows[m]["ok"], rows)
            self.assertIn("nests deeper than 1000 levels", rows[m]["error"], rows)
        for m in ("bulk_get", "revs_diff"):
            self.assertFalse(rows[m]["ok"], rows)
            self.assertIn("400", rows[m]["error"], rows)
        self.assertEqual(self.node.get("/_up", fresh=True).status, 200)
        self.assertEqual(self.node.get("/deep/deep").status, 404)

    def test_malformed_calls_from_a_member_are_errors_never_aborts(self):
        """Issue 27: every method, each field malformed in turn (splitSeal with a shard id without
        a dot aborted the node). Each call is answered and the node lives on."""
        self.assertEqual(self.node.put("/malformed?q=1").status, 201)
        self.assertEqual(self.node.put("/malformed/d", {"v": 1}).status, 201)
        out = subprocess.run([PROBE, "127.0.0.1", str(self.port), "malformed", CLUSTER_SECRET, "malformed"],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        rows = [json.loads(line) for line in out.stdout.splitlines()]
        self.assertTrue(rows[0]["ok"], rows[0])  # the handshake
        calls = rows[1:]
        self.assertGreater(len(calls), 300)
        methods = {row["method"].split("#")[0] for row in calls}
        self.assertEqual(len(methods), 32, sorted(methods))  # every method but handshake and challenge
        # A call that threw lost its connection (or the node): none may.
        lost = [row for row in calls if not row["ok"]]
        self.assertEqual(lost, [])
        self.alive_and_serving()
        # The document stays readable and writable: no malformed history reached its record (one
        # with a revision path skipping generations once made it unreadable, "corrupt document
        # record"). Well-formed replicated revisions among the calls may legitimately win.
        doc = self.node.get("/malformed/d")
        self.assertEqual(doc.status, 200, doc)
        self.assertEqual(self.node.put("/malformed/d", {"_rev": doc.json["_rev"], "v": 2}).status, 201)
        with open(self.node.log.name) as f:
            self.assertNotIn("corrupt document record", f.read())

    def test_refusals_do_not_flood_the_log(self):
        def refusal_lines():
            with open(self.node.log.name) as f:
                return sum("cluster RPC: refused a peer" in line for line in f)

        before = refusal_lines()
        for _ in range(30):
            self.assertFalse(probe(self.port, "wrong")["handshake"]["ok"])
        # At most one line per 10 s, however many strangers knock (this loop takes a few seconds).
        self.assertLessEqual(refusal_lines() - before, 2)

    def test_garbage_frames_are_harmless(self):
        import random
        seed = int(time.time())
        print(f"\n  GARBAGE_SEED={seed}")
        rng = random.Random(seed)
        frames = 0
        for _ in range(200):
            with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
                for _ in range(15):
                    n = rng.choice([1, 8, 64, 4096])
                    # Cap'n Proto framing (segment count, sizes) followed by noise, or noise alone.
                    head = rng.choice([b"", b"\x00\x00\x00\x00" + rng.randbytes(4), b"\xff\xff\xff\x7f"])
                    try:
                        s.sendall(head + rng.randbytes(n))
                    except OSError:
                        break
                    frames += 1
        self.assertGreaterEqual(frames, 200)
        self.alive_and_serving()

    def alive_and_serving(self):
        self.assertEqual(self.node.get("/_up", fresh=True).status, 200)
        self.assertEqual(probe(self.port, "right", CLUSTER_SECRET)["ping"]["ok"], True)

    def test_a_silent_connection_is_closed(self):
        import socket
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            start = time.time()
            self.assertEqual(s.recv(1), b"")  # closed by the node, not by us
            self.assertLess(time.time() - start, 8)

    def test_a_node_with_another_secret_never_joins(self):
        names = self.cluster.names
        other = stranger(f"[node]\nname = n9@127.0.0.1\n[cluster]\nrpc_port = 0\n"
                         f"seeds = {names[0]}:{self.port}\nsync_interval_ms = 0\n")
        try:
            # The first node refuses it and says so in its log, naming it (issue 53).
            def refused():
                with open(self.node.log.name) as f:
                    return "refused a peer: wrong cluster secret from a peer calling itself n9@127.0.0.1" in f.read()
            self.assertTrue(wait_for(refused, 15), "no log line on the refusing node")
            self.assertEqual(all_nodes(other), ["n9@127.0.0.1"])
            self.assertEqual(all_nodes(self.node), sorted(names))
            # Nor did it learn the first node's databases.
            self.assertEqual(self.node.put("/secretdb").status, 201)
            time.sleep(0.5)
            self.assertEqual(other.get("/secretdb").status, 404)
        finally:
            other.cleanup()

    def test_short_secret_stops_the_node_with_a_reason(self):
        n = Node(config="[cluster]\nrpc_port = 0\nsecret = short\n")
        with self.assertRaises(RuntimeError) as e:
            n.start()
        n.cleanup()
        self.assertIn("[cluster] secret must be at least 16 bytes", str(e.exception))


class Tap:
    """A TCP proxy on loopback that records every byte it forwards (both directions)."""

    def __init__(self, target_port):
        self.port = free_port()
        self.target = target_port
        self.seen = bytearray()
        self.lock = threading.Lock()
        self.server = socket.create_server(("127.0.0.1", self.port))
        self.stopped = False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.stopped:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.pipe, args=(a, b), daemon=True).start()

    def pipe(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                with self.lock:
                    self.seen += data
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.stopped = True
        self.server.close()


class RpcTls(NodeTest):
    """[cluster] tls = on: node-to-node traffic is encrypted (a tap between the nodes never sees a
    document's text; with tls = off it does, which shows the tap works), and neither a plain client
    nor a node with another secret gets through the TLS handshake."""

    def start_pair(self, tls):
        ports = [free_port(), free_port()]
        tap = Tap(ports[0])
        nodes = []
        for i, seed in ((0, f"n2@127.0.0.1:{ports[1]}"), (1, f"n1@127.0.0.1:{tap.port}")):
            nodes.append(Node(config=f"[node]\nname = n{i + 1}@127.0.0.1\n[cluster]\nrpc_port = {ports[i]}\n"
                                     f"seeds = {seed}\nsync_interval_ms = 0\ntls = {tls}\n").start())
        return nodes, tap, ports

    def traffic_carries(self, tls, canary):
        nodes, tap, ports = self.start_pair(tls)
        try:
            names = ["n1@127.0.0.1", "n2@127.0.0.1"]
            for n in nodes:
                self.assertTrue(wait_for(lambda n=n: all_nodes(n) == names, 20))
            with open(nodes[0].log.name) as f:
                self.assertIn("(TLS)" if tls == "on" else "(plain TCP)", f.read())
            self.assertEqual(nodes[1].put("/tapped?q=1&n=2").status, 201)
            self.assertEqual(nodes[1].put("/tapped/doc", {"canary": canary}).status, 201)
            self.assertTrue(wait_for(lambda: nodes[0].get("/tapped/doc?r=1").status == 200, 10))
            if tls == "on":
                rows = probe(ports[0], "right", CLUSTER_SECRET)  # plain TCP against a TLS port
                self.assertFalse(rows.get("handshake", {}).get("ok", False), rows)
                for m in METHODS:
                    self.assertFalse(rows[m]["ok"], (m, rows[m]))
            with tap.lock:
                return canary.encode() in tap.seen and len(tap.seen) > 0
        finally:
            tap.close()
            for n in nodes:
                n.cleanup()

    def test_plain_tcp_shows_documents_tls_does_not(self):
        self.assertTrue(self.traffic_carries("off", "plaintext-canary-0001"))
        self.assertFalse(self.traffic_carries("on", "plaintext-canary-0002"))

    def test_auto_is_tls_unless_rpc_listens_on_loopback(self):
        # rpc_bind = 0.0.0.0 is not loopback: TLS without asking (the nodes still dial 127.0.0.1).
        ports = [free_port(), free_port()]
        nodes = [Node(config=f"[node]\nname = n{i + 1}@127.0.0.1\n[cluster]\nrpc_port = {ports[i]}\n"
                             f"rpc_bind = 0.0.0.0\nseeds = n{2 - i}@127.0.0.1:{ports[1 - i]}\n").start()
                 for i in range(2)]
        try:
            names = ["n1@127.0.0.1", "n2@127.0.0.1"]
            for n in nodes:
                self.assertTrue(wait_for(lambda n=n: all_nodes(n) == names, 20))
                with open(n.log.name) as f:
                    log = f.read()
                self.assertRegex(log, r"cluster RPC listening on 0\.0\.0\.0:\d+ \(TLS\)")
            rows = probe(ports[0], "right", CLUSTER_SECRET)  # plain TCP is not spoken there
            self.assertFalse(rows["ping"]["ok"], rows)
        finally:
            for n in nodes:
                n.cleanup()
        # The harness's clusters listen on 127.0.0.1: plain TCP (test_plain_tcp_shows_documents...).

    def test_tls_with_another_secret_never_connects(self):
        p1, p2 = free_port(), free_port()
        a = Node(config=f"[node]\nname = n1@127.0.0.1\n[cluster]\nrpc_port = {p1}\ntls = on\n").start()
        b = stranger(f"[node]\nname = n2@127.0.0.1\n[cluster]\nrpc_port = {p2}\ntls = on\n"
                     f"seeds = n1@127.0.0.1:{p1}\n")
        try:
            time.sleep(2)
            self.assertEqual(all_nodes(b), ["n2@127.0.0.1"])
            self.assertEqual(all_nodes(a), ["n1@127.0.0.1"])
            with open(a.log.name) as f:
                self.assertIn("TLS handshake with a client failed", f.read())
        finally:
            a.cleanup()
            b.cleanup()


if __name__ == "__main__":
    main()
