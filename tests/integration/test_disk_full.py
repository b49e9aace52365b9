"""A full file system is an answer, not a crash (issue 13, point 3).

The node's data dir lives on a small tmpfs this test mounts (root only; skipped with a reason
elsewhere). A filler file takes part of it; the test fills the rest with databases and documents,
checks every refusal is a 507 insufficient_storage that says why, that reads go on, that nothing
acknowledged is lost (also across kill -9), and that writes resume once the filler is removed."""
import os

from harness import Node, NodeTest, main, mount_small_tmpfs, unmount

PAD = "a" * 3000


class DiskFull(NodeTest):
    @classmethod
    def setUpClass(cls):
        cls.mnt, cls.filler = mount_small_tmpfs("4m", 1_800_000)
        os.mkdir(os.path.join(cls.mnt, "data"))
        cls.node = Node(data_dir=os.path.join(cls.mnt, "data")).start()

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()
        unmount(cls.mnt)

    def assertFull(self, r):
        self.assertError(r, 507, "insufficient_storage")
        self.assertIn("no space left on the device", r.json["reason"])

    def test_full_disk(self):
        n = self.node
        self.assertEqual(n.put("/full").status, 201)
        db = "full"
        # Documents until every write is refused: 201 or 507, never anything else.
        acked = []
        for i in range(2000):
            r = n.put(f"/{db}/d{i:04d}", {"pad": PAD})
            if r.status == 201:
                acked.append(f"d{i:04d}")
                continue
            self.assertFull(r)
            break
        for i in range(3):  # still refused, still alive
            self.assertFull(n.put(f"/{db}/late{i}", {"pad": PAD}))
        r = n.post(f"/{db}/_bulk_docs", {"docs": [{"_id": "b1", "pad": PAD * 10}, {"_id": "b2"}]})
        self.assertEqual(r.status, 507, r)
        self.assertEqual(r.json[0]["error"], "insufficient_storage", r)
        # The two documents may live in different shard files: each row tells the truth about its own.
        if r.json[1].get("ok"):
            acked.append("b2")
        else:
            self.assertEqual(r.json[1]["error"], "insufficient_storage", r)
        # A database is created whole or not at all.
        self.assertFull(n.put("/another"))
        self.assertEqual(n.get("/another").status, 404)
        self.assertNotIn("another", n.get("/_all_dbs").json)

        # Reads go on while the disk is full.
        self.assertEqual(n.get(f"/{db}/{acked[0]}").status, 200)
        rows = n.get(f"/{db}/_all_docs").json["rows"]
        self.assertEqual([row["id"] for row in rows], sorted(acked))
        self.assertEqual(sorted(row["id"] for row in n.get(f"/{db}/_changes").json["results"]), sorted(acked))

        # Space back: writes and new databases work again.
        os.remove(self.filler)
        self.assertEqual(n.put(f"/{db}/after", {"pad": PAD}).status, 201)
        self.assertEqual(n.put("/another").status, 201)
        acked.append("after")

        # Nothing acknowledged was lost, across a kill -9 too.
        n.kill()
        n.start(port=n.port)
        got = [row["id"] for row in n.get(f"/{db}/_all_docs").json["rows"]]
        self.assertEqual(got, sorted(acked))
        self.assertEqual(n.get("/another").status, 200)


if __name__ == "__main__":
    main()
