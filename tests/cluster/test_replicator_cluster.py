"""`_replicator` documents in a 3-node cluster (issue 33 point 3): each document's replication runs
on exactly one member, the one CouchDB's mem3:owner picks among the live members; when that member
is killed with -9, the others take its documents over and their replications go on."""
import os
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import main  # noqa: E402
from test_membership import ClusterTest, wait_for  # noqa: E402

DOCS = [f"rep{i}" for i in range(8)]


class ReplicatorOwners(ClusterTest):
    NODES, SYNC_INTERVAL_MS = 3, 300

    def runners(self, nodes):
        """doc id -> the nodes whose scheduler runs it."""
        out = {}
        for n in nodes:
            r = n.get("/_scheduler/jobs")
            if r.status != 200:
                continue
            for j in r.json["jobs"]:
                if j.get("doc_id"):
                    out.setdefault(j["doc_id"], []).append(n.port)
        return out

    def test_each_document_runs_on_one_member_and_moves_when_it_dies(self):
        first = self.nodes[0]
        user = first.admin
        base = f"http://{user[0]}:{urllib.parse.quote(user[1])}@127.0.0.1:{first.port}"
        self.assertEqual(first.put("/csrc?q=2&n=3").status, 201)
        self.assertTrue(wait_for(lambda: all(n.get("/csrc").status == 200 for n in self.nodes), 15))
        for doc_id in DOCS:
            r = first.put(f"/_replicator/{doc_id}", {"source": f"{base}/csrc", "target": f"{base}/c{doc_id}",
                                                     "create_target": True, "continuous": True})
            self.assertEqual(r.status, 201, r)
        # Every document runs, each on exactly one member, and not all on the same one.
        self.assertTrue(wait_for(lambda: sorted(self.runners(self.nodes)) == DOCS, 30), self.runners(self.nodes))
        placed = self.runners(self.nodes)
        self.assertTrue(all(len(ports) == 1 for ports in placed.values()), placed)
        self.assertGreater(len({ports[0] for ports in placed.values()}), 1, placed)
        self.assertEqual(first.put("/csrc/before", {}).status, 201)
        self.assertTrue(wait_for(lambda: all(first.get(f"/c{d}/before").status == 200 for d in DOCS), 30))
        # The member running the most documents dies; the others take them over.
        counts = {}
        for ports in placed.values():
            counts[ports[0]] = counts.get(ports[0], 0) + 1
        victim_port = max(counts, key=counts.get)
        if victim_port == first.port:  # keep the node the URLs name
            victim_port = sorted((p for p in counts if p != first.port), key=counts.get)[-1]
        victim = next(n for n in self.nodes if n.port == victim_port)
        victim.kill()
        self.addCleanup(victim.start)
        survivors = [n for n in self.nodes if n is not victim]
        self.assertTrue(wait_for(lambda: sorted(self.runners(survivors)) == DOCS, 60), self.runners(survivors))
        self.assertTrue(all(len(p) == 1 for p in self.runners(survivors).values()), self.runners(survivors))
        self.assertEqual(first.put("/csrc/after", {}).status, 201)
        self.assertTrue(wait_for(lambda: all(first.get(f"/c{d}/after").status == 200 for d in DOCS), 30))
        for doc_id in DOCS:  # clean up: stop them
            rev = first.get(f"/_replicator/{doc_id}").json["_rev"]
            self.assertEqual(first.delete(f"/_replicator/{doc_id}?rev={rev}").status, 200)


if __name__ == "__main__":
    main()
