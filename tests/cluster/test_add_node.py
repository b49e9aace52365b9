"""PUT /_node/_local/_nodes/<name>: a fourth node joins a running 3-node cluster and catches up.
DELETE: a member that holds no copy leaves the cluster and stays out (also across restarts)."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import Node, NodeTest, free_port, main  # noqa: E402
from test_membership import Cluster, ClusterTest, wait_for  # noqa: E402


class AddNode(NodeTest):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(3, sync_interval_ms=200).start()
        cls.node = cls.cluster.nodes[0]
        cls.n4_port = free_port()
        cls.n4 = Node(config=f"[node]\nname = n4@127.0.0.1\n[cluster]\nrpc_port = {cls.n4_port}\n"
                             f"sync_interval_ms = 200\n").start()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.cleanup()
        cls.n4.cleanup()

    def test_fourth_node_joins_and_catches_up(self):
        nodes = self.cluster.nodes + [self.n4]
        names = sorted(self.cluster.names + ["n4@127.0.0.1"])
        n1 = nodes[0]
        self.assertEqual(n1.put("/before?q=2").status, 201)
        for i in range(10):
            n1.put(f"/before/d{i}", {"i": i})
        self.assertEqual(self.n4.get("/_membership").json["all_nodes"], ["n4@127.0.0.1"])  # alone so far

        r = n1.put("/_node/_local/_nodes/n4@127.0.0.1", {"rpc_port": self.n4_port})
        self.assertEqual((r.status, r.json), (201, {"ok": True}))
        for node in nodes:  # every node learns every other one (via `_nodes` and introductions)
            self.assertTrue(wait_for(lambda node=node: node.get("/_membership", fresh=True).json["all_nodes"] == names,
                                     20), node.get("/_membership").json)
        # The new node learns the databases that existed before it joined. Their copies stay where
        # they were placed (n=3 on the first three nodes); the new node serves them from there.
        self.assertTrue(wait_for(lambda: "before" in self.n4.get("/_all_dbs", fresh=True).json, 20))
        shards = self.n4.get("/before/_shards").json["shards"]
        self.assertEqual(sorted(shards), ["00000000-7fffffff", "80000000-ffffffff"])
        for copies in shards.values():
            self.assertEqual(sorted(copies), sorted(self.cluster.names))
        self.assertTrue(wait_for(lambda: self.n4.get("/before", fresh=True).json.get("doc_count") == 10, 20))
        # A database created now places copies on the fourth node too (q=4, n=3: 12 copies on 4 nodes).
        self.assertEqual(self.n4.put("/after?q=4").status, 201)
        placed = [n for copies in self.n4.get("/after/_shards").json["shards"].values() for n in copies]
        self.assertEqual({n: placed.count(n) for n in names}, {n: 3 for n in names})

    def test_bad_requests(self):
        n1 = self.cluster.nodes[0]
        self.assertError(n1.put("/_node/_local/_nodes/n9@127.0.0.1", {}), 400, "bad_request",
                         "`rpc_port` must be a port number")
        self.assertError(n1.put("/_node/_local/_nodes/noat", {"rpc_port": 1}), 400, "bad_request",
                         "a node name is name@host")
        self.assertError(n1.put("/_node/_local/_nodes/n9@h", {"rpc_port": 1, "host": 5}), 400, "bad_request")
        self.assertError(n1.get("/_node/_local/_nodes/n9@h"), 405, "method_not_allowed", "Only PUT,DELETE allowed")
        self.assertError(n1.put("/_node/_local/_nodes/n9@h", {"rpc_port": 1}, auth=False), 401, "unauthorized")



class RemoveNode(ClusterTest):
    NODES, SYNC_INTERVAL_MS = 3, 200

    def membership(self, node):
        m = node.get("/_membership", fresh=True).json
        return m["all_nodes"], m["cluster_nodes"]

    def test_remove_a_member_without_copies_then_add_it_back(self):
        nodes, names = self.cluster.nodes, self.cluster.names
        self.assertEqual(nodes[0].put("/keep?q=1&n=2").status, 201)
        holders = nodes[0].get("/keep/_shards").json["shards"]["00000000-ffffffff"]
        free = next(i for i, name in enumerate(names) if name not in holders)
        asker = next(i for i in range(3) if i != free)
        # Refused while it holds copies, for itself, for strangers, for bad names.
        holder = names.index(holders[0])
        other = next(i for i in range(3) if i != holder)
        self.assertError(nodes[other].delete(f"/_node/_local/_nodes/{names[holder]}"), 409, "conflict",
                         f"{names[holder]} still holds a copy of keep range 00000000-ffffffff: move its copies off "
                         "first (POST /_reshard/jobs, type move)")
        self.assertError(nodes[asker].delete(f"/_node/_local/_nodes/{names[asker]}"), 400, "bad_request",
                         "a node cannot remove itself: ask another member")
        self.assertError(nodes[asker].delete("/_node/_local/_nodes/nobody@127.0.0.1"), 404, "not_found",
                         "nobody@127.0.0.1 is not a member")
        self.assertError(nodes[asker].delete("/_node/_local/_nodes/noat"), 400, "bad_request")
        self.assertError(nodes[asker].delete(f"/_node/_local/_nodes/{names[free]}", auth=False), 401, "unauthorized")

        r = nodes[asker].delete(f"/_node/_local/_nodes/{names[free]}")
        self.assertEqual((r.status, r.json), (200, {"ok": True}))
        rest = sorted(n for i, n in enumerate(names) if i != free)
        for i in range(3):
            if i != free:  # every other member forgets it (the deletion is pushed through `_nodes`)
                self.assertTrue(wait_for(lambda i=i: self.membership(nodes[i]) == (rest, rest), 15),
                                self.membership(nodes[i]))
        self.assertError(nodes[asker].delete(f"/_node/_local/_nodes/{names[free]}"), 404, "not_found")
        # A member restarted with the removed node still among its seeds does not bring it back, and
        # the removed node (still running, still dialling) is not let in.
        restarted = next(i for i in range(3) if i not in (free, asker))
        nodes[restarted].stop()
        nodes[restarted].start(port=nodes[restarted].port)
        self.assertTrue(wait_for(lambda: self.membership(nodes[restarted]) == (rest, rest), 15),
                        self.membership(nodes[restarted]))
        time.sleep(1)
        for i in range(3):
            if i != free:
                self.assertEqual(self.membership(nodes[i]), (rest, rest))
        self.assertEqual(nodes[asker].put("/keep/after-removal", {"ok": 1}).status, 201)

        # Added back, it is a member again and connects.
        r = nodes[asker].put(f"/_node/_local/_nodes/{names[free]}", {"rpc_port": self.cluster.rpc_ports[free]})
        self.assertEqual(r.status, 201, r)
        for i in range(3):
            self.assertTrue(wait_for(lambda i=i: self.membership(nodes[i])[0] == sorted(names), 20),
                            (i, self.membership(nodes[i])))


if __name__ == "__main__":
    main()
