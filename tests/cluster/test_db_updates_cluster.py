"""_db_updates on a 3-node cluster: any node answers for every database (rows recorded on other nodes
come through dbUpdates), a node that is down is listed under `unavailable` and its rows come when it
is back, and a token taken on one node continues on another without starting over."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import NodeTest, main  # noqa: E402
from test_membership import Cluster, wait_for  # noqa: E402


class DbUpdatesCluster(NodeTest):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(3, sync_interval_ms=300).start()
        cls.nodes = cls.cluster.nodes
        cls.node = cls.nodes[0]
        names = sorted(cls.cluster.names)
        for n in cls.nodes:
            assert wait_for(lambda n=n: n.get("/_membership", fresh=True).json["all_nodes"] == names)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.cleanup()

    def rows(self, node, since="0"):
        r = node.get(f"/_db_updates?since={since}", fresh=True)
        self.assertEqual(r.status, 200, r)
        return r.json

    def kinds(self, node, db, since="0"):
        return [row["type"] for row in self.rows(node, since)["results"] if row["db_name"] == db]

    def holder(self, db):
        shards = self.node.get(f"/{db}/_shards").json["shards"]
        (nodes,) = shards.values()
        return nodes

    def test_every_node_answers_for_every_database(self):
        self.assertEqual(self.node.put("/solo?q=1&n=1").status, 201)
        (holder,) = self.holder("solo")
        self.assertEqual(self.node.put("/solo/doc", {}).status, 201)
        for n in self.nodes:
            self.assertTrue(wait_for(lambda n=n: self.kinds(n, "solo") == ["created", "updated"], 10),
                            (n.port, self.kinds(n, "solo"), holder))
        # Exactly one `updated`: only the holder recorded the write, and every node reads its log.

    def test_a_node_down_is_unavailable_and_its_rows_come_back(self):
        self.assertEqual(self.node.put("/everywhere?q=1&n=3").status, 201)
        n1, n2, n3 = self.nodes
        since = self.rows(n1, "now")["last_seq"]
        n3.stop()
        self.assertTrue(wait_for(lambda: "unavailable" in self.rows(n1, since), 10))
        res = self.rows(n1, since)
        self.assertEqual(res["unavailable"], [self.cluster.names[2]])
        # Writes still show up from the copies that are up.
        self.assertEqual(n1.put("/everywhere/while-down", {}).status, 201)
        self.assertTrue(wait_for(lambda: "updated" in self.kinds(n1, "everywhere", since), 10))
        n3.start(port=n3.port)
        self.assertTrue(wait_for(lambda: "unavailable" not in self.rows(n1, since), 20))

    def test_a_token_from_one_node_continues_on_another(self):
        n1, n2, _ = self.nodes
        self.assertEqual(n1.put("/handover?q=1&n=3").status, 201)
        self.assertTrue(wait_for(lambda: "created" in self.kinds(n2, "handover"), 10))
        token = self.rows(n1)["last_seq"]
        self.assertEqual(n1.put("/later?q=1&n=3").status, 201)
        self.assertTrue(wait_for(lambda: "created" in self.kinds(n2, "later", token), 10))
        r = n2.get(f"/_db_updates?since={token}", fresh=True)
        self.assertEqual(r.status, 200)
        names = [row["db_name"] for row in r.json["results"]]
        self.assertIn("later", names)
        # The catalog events were read on n1: n2 carries the position over by time (five minutes
        # early, so rows of the last minutes repeat) and says so.
        self.assertIn(self.cluster.names[1], r.header("X-Settee-Since-Resolution") or "", r.json)
        # The same token on n1 continues exactly: only what came after it.
        self.assertEqual([row["db_name"] for row in self.rows(n1, token)["results"]
                          if row["type"] == "created"], ["later"])

if __name__ == "__main__":
    main()
