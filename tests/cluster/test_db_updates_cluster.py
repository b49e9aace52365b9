"""_db_updates on a 3-node cluster: any node answers for every database (rows recorded on other nodes
come through dbUpdates), a node that is down is listed under `unavailable` and its rows come when it
is back, and a token taken on one node continues on another with each lifecycle row exactly once."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import main  # noqa: E402
from test_membership import ClusterTest, wait_for  # noqa: E402


class DbUpdatesCluster(ClusterTest):
    NODES, SYNC_INTERVAL_MS = 3, 300

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

    def lifecycle(self, node, since):
        r = node.get(f"/_db_updates?since={since}", fresh=True)
        self.assertEqual(r.status, 200, r)
        return r, [(row["db_name"], row["type"]) for row in r.json["results"] if row["type"] != "updated"]

    def test_a_token_from_one_node_continues_on_another_exactly_once(self):
        n1, n2, n3 = self.nodes
        self.assertEqual(n1.put("/handover?q=1&n=3").status, 201)
        self.assertEqual(n1.put("/gone?q=1&n=3").status, 201)
        self.assertEqual(n1.delete("/gone").status, 200)
        self.assertTrue(wait_for(lambda: ("gone", "deleted") in self.lifecycle(n2, "0")[1], 10))
        token = self.rows(n1)["last_seq"]
        self.assertEqual(n1.put("/later?q=1&n=3").status, 201)
        self.assertTrue(wait_for(lambda: ("later", "created") in self.lifecycle(n2, "0")[1], 10))
        r, rows = self.lifecycle(n2, token)
        # The catalog events were read on n1: n2 carries the position over (a window early, passing
        # over the events the token lists as seen) and says so; nothing seen on n1 comes again.
        self.assertEqual(rows, [("later", "created")], r.json)
        self.assertIn(self.cluster.names[1], r.header("X-Settee-Since-Resolution") or "", r.json)
        # The same token on n1 continues exactly: only what came after it.
        self.assertEqual(self.lifecycle(n1, token)[1], [("later", "created")])
        # And on to a third node, with the token n2 gave.
        self.assertEqual(n2.put("/third?q=1&n=3").status, 201)
        self.assertTrue(wait_for(lambda: ("third", "created") in self.lifecycle(n3, "0")[1], 10))
        self.assertEqual(self.lifecycle(n3, r.json["last_seq"])[1], [("third", "created")])

    def test_since_now_and_since_a_time_carry_over_exactly_once(self):
        n1, n2, _ = self.nodes
        self.assertEqual(n1.put("/before_now?q=1&n=3").status, 201)
        self.assertTrue(wait_for(lambda: ("before_now", "created") in self.lifecycle(n2, "0")[1], 10))
        now = self.rows(n1, "now")["last_seq"]
        self.assertEqual(n1.put("/after_now?q=1&n=3").status, 201)
        self.assertTrue(wait_for(lambda: ("after_now", "created") in self.lifecycle(n2, "0")[1], 10))
        self.assertEqual(self.lifecycle(n2, now)[1], [("after_now", "created")])
        # since=<a time in the future>: nothing yet, and its token shows nothing older on n2 either.
        future = self.rows(n1, "2100-01-01T00:00:00Z")
        self.assertEqual(future["results"], [])
        self.assertEqual(self.lifecycle(n2, future["last_seq"])[1], [])

if __name__ == "__main__":
    main()
