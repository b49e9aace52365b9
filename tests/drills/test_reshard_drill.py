"""Drill (issue 12 point 3): on a 3-node cluster of this build deployed by ansible, a shard move and
a split by reshard.yml, a fourth node added by add_node.yml and a node retired by
decommission_node.yml, under a steady write load with a continuous `_changes` follower and a
`_db_updates` follower. Asserts: no acknowledged write lost, no request failed except against the
node that went away, no feed rewound, the retired node holds nothing and is no longer a member."""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from drill import BIN, DrillTest, new_version  # noqa: E402


class ReshardDrill(DrillTest):
    def test_move_split_add_and_retire_a_node_under_load(self):
        # Issue 53 item 4: --check on fresh hosts (nothing installed, nothing answers) runs through.
        self.play("deploy.yml", check=True, settee_binary=BIN, settee_expect_version=new_version())
        self.assertEqual([h for h in self.inv.members if self.inv.pid(h)], [])  # and started nothing
        self.play("deploy.yml", settee_binary=BIN, settee_expect_version=new_version())
        # Issue 34 item 6: --check --diff runs every playbook without changing anything, and a
        # second deploy changes nothing.
        self.play("deploy.yml", check=True, settee_binary=BIN, settee_expect_version=new_version())
        out = self.play("deploy.yml", settee_binary=BIN, settee_expect_version=new_version())
        self.assertEqual(self.changed(out), {h: 0 for h in self.inv.members}, out[-3000:])
        self.play("rolling_restart.yml", check=True, settee_binary=BIN)
        self.check_javascript("deployed")
        first = self.inv.client("node1")
        self.assertEqual(first.call("PUT", "/drill?q=2&n=2")[0], 201)
        load = self.start_load("drill")
        try:
            time.sleep(2)
            shards = first.get("/drill/_shards")[1]["shards"]
            low = "00000000-7fffffff"
            source = shards[low][0]
            target = next(self.inv.name(h) for h in self.inv.members if self.inv.name(h) not in shards[low])
            move = dict(reshard_type="move", reshard_db="drill", reshard_range=low,
                        reshard_source=source.split("@")[0], reshard_target=target)
            self.play("reshard.yml", check=True, **move)
            self.assertEqual(first.get("/drill/_shards")[1]["shards"], shards)  # --check moved nothing
            self.assertGreaterEqual(sum(self.changed(self.play("reshard.yml", **move)).values()), 1)
            shards = first.get("/drill/_shards")[1]["shards"]
            self.assertIn(target, shards[low])
            self.assertNotIn(source, shards[low])
            self.check_javascript("moved")
            # Run from the one host that holds no copy of the range (issue 53 item 3): the play asks a
            # node that holds one.
            high = "80000000-ffffffff"
            via = next(h for h in self.inv.members if self.inv.name(h) not in shards[high])
            split = dict(reshard_type="split", reshard_db="drill", reshard_range=high, reshard_via=via)
            self.assertGreaterEqual(sum(self.changed(self.play("reshard.yml", **split)).values()), 1)
            self.assertEqual(sorted(first.get("/drill/_shards")[1]["shards"]),
                             [low, "80000000-bfffffff", "c0000000-ffffffff"])
            self.check_javascript("split")
            # Done already: a second run of either is no error and changes nothing.
            for job in (move, split):
                self.assertEqual(sum(self.changed(self.play("reshard.yml", **job)).values()), 0, job)

            self.inv.add("node4")
            self.inv.set_members(["node1", "node2", "node3", "node4"])
            self.play("add_node.yml", check=True, settee_binary=BIN, settee_new_node="node4")
            self.assertIsNone(self.inv.pid("node4"))  # --check started nothing
            self.play("add_node.yml", settee_binary=BIN, settee_new_node="node4")
            names = sorted(self.inv.name(h) for h in self.inv.members)
            for h in self.inv.members:
                self.assertEqual(self.inv.client(h).get("/_membership")[1]["all_nodes"], names)
            self.check_javascript("node4 added")

            before = first.get("/drill/_shards")[1]["shards"]
            self.play("decommission_node.yml", check=True, settee_binary=BIN, settee_leaving="node3")
            self.assertEqual(first.get("/drill/_shards")[1]["shards"], before)  # --check moved nothing
            self.assertIsNotNone(self.inv.pid("node3"))
            self.play("decommission_node.yml", settee_binary=BIN, settee_leaving="node3")
            self.inv.set_members(["node1", "node2", "node4"])
            time.sleep(1)
        finally:
            load.stop()
        gone = self.inv.name("node3")
        names = sorted(self.inv.name(h) for h in self.inv.members)
        for h in self.inv.members:
            membership = self.inv.client(h).get("/_membership")[1]
            self.assertEqual((membership["all_nodes"], membership["cluster_nodes"]), (names, names), h)
        placement = first.get("/drill/_shards")[1]["shards"]
        self.assertFalse([r for r, nodes in placement.items() if gone in nodes], placement)
        self.assertTrue(all(len(nodes) == 2 for nodes in placement.values()), placement)
        self.assertIsNone(self.inv.pid("node3"), "the retired node still runs")
        self.check_javascript("node3 retired")
        # Writers kept writing to node3 until it stopped; those failures are expected (it was down).
        windows = self.check_load(load, "move, split, add node4, retire node3")
        self.assertEqual([h for h, w in windows.items() if w], ["node3"], windows)
        print(f"  playbook seconds: { {k: round(v, 1) for k, v in self.times.items()} }", file=sys.stderr)



if __name__ == "__main__":
    unittest.main(verbosity=2)
