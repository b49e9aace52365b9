"""Drill (issue 12 point 3): the playbooks in ansible/, run for real by ansible-core on a 3-node
inventory on this host (connection local, each node its own data dir, ports and pid file): deploy
v0.2.0 (built from its release commit), rolling upgrade to this build, rolling downgrade back, under
a steady write load on every node with a continuous `_changes` follower and a `_db_updates`
follower. Asserts: no acknowledged write lost, no request failed except against the node being
restarted (one node at a time), no feed rewound."""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "upgrade"))
from drill import BIN, DrillTest, new_version, version_of  # noqa: E402
from releases import binary  # noqa: E402


class RollingDrill(DrillTest):
    def test_upgrade_then_downgrade_v020_under_load(self):
        old = binary("v0.2.0")
        legacy = {"settee_accept_legacy_peers": True}
        self.play("deploy.yml", settee_binary=old, settee_expect_version="0.2.0", **legacy)
        first = self.inv.client("node1")
        self.assertEqual(first.call("PUT", "/drill?q=2&n=3")[0], 201)
        self.assertEqual({version_of(self.inv.client(h)) for h in self.inv.members}, {"0.2.0"})

        load = self.start_load("drill")
        try:
            time.sleep(2)
            self.play("rolling_upgrade.yml", settee_binary=BIN, settee_expect_version=new_version(), **legacy)
            self.assertEqual({version_of(self.inv.client(h)) for h in self.inv.members}, {new_version()})
            # A database made on the new release: its `created` row reaches the _db_updates follower once.
            self.assertEqual(self.inv.client("node2").call("PUT", "/made_after_upgrade?q=1")[0], 201)
            time.sleep(2)
            self.play("rolling_downgrade.yml", settee_binary=old, settee_expect_version="0.2.0", **legacy)
            time.sleep(1)
        finally:
            load.stop()
        self.assertEqual({version_of(self.inv.client(h)) for h in self.inv.members}, {"0.2.0"})
        windows = self.check_load(load, "v0.2.0 -> this -> v0.2.0")
        for h in self.inv.members:  # each node went away exactly twice (upgrade, downgrade), one at a time
            self.assertEqual(len(windows[h]), 2, windows)
        order = sorted((w, h) for h, ws in windows.items() for w in ws)
        for (a, _), (b, _) in zip(order, order[1:]):
            self.assertLess(a[1], b[0], f"two nodes were down at once: {order}")
        # The database made mid-drill reaches the _db_updates follower exactly once, though the
        # follower moved to another node (resumed its token there) each time its node went away.
        created = [r for r in load.db_rows if r["db_name"] == "made_after_upgrade" and r["type"] == "created"]
        self.assertEqual(len(created), 1, (created, load.db_resolutions))
        translated = [h for h, res in load.db_resolutions if res and "translated" in res]
        self.assertGreaterEqual(len(translated), 1, load.db_resolutions)
        print(f"  _db_updates: `created` of the new database seen once over {len(load.db_resolutions)} feeds "
              f"({len(translated)} resumed on another node)", file=sys.stderr)
        self.assertTrue(any(r["db_name"] == "drill" and r["type"] == "updated" for r in load.db_rows))
        print(f"  playbook seconds: { {k: round(v, 1) for k, v in self.times.items()} }", file=sys.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
