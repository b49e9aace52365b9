"""A mixed 3-node cluster: one node of an older release (v0.1.0, then v0.2.0) and two of this
release (issue 5 point 5c; issue 14: the typed node protocol keeps talking to both)."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cluster"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import Node, NodeTest, OwnNodesTest, main  # noqa: E402
from releases import binary  # noqa: E402
from test_membership import Cluster, wait_for  # noqa: E402

# Releases before 0.3 cannot prove the cluster secret: nodes of this release let them in only with
# this switch, which an upgrade or downgrade sets on every node until the last old node is gone.
LEGACY = "accept_legacy_peers = true\n"


class OldMemberTest(NodeTest):
    """Three nodes, the first of release OLD, every one a connected member."""
    OLD = "v0.1.0"
    EXTRA_CONFIG = LEGACY

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(3, sync_interval_ms=300, extra_config=cls.EXTRA_CONFIG)
        cls.cluster.nodes[0].bin = binary(cls.OLD)
        cls.cluster.start()
        cls.old, cls.n2, cls.n3 = cls.cluster.nodes
        cls.node = cls.n2
        names = sorted(cls.cluster.names)
        for n in cls.cluster.nodes:
            assert wait_for(lambda n=n: n.get("/_membership", fresh=True).json["all_nodes"] == names, 20)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.cleanup()


class MixedCluster(OldMemberTest):
    OLD = "v0.1.0"
    OLD_HAS_TIME_SEQ = False  # v0.1.0 keeps no bins

    def test_reads_writes_feeds_and_time_seq_across_releases(self):
        self.assertEqual(self.old.get("/").json["vendor"]["version"], self.OLD[1:])
        self.assertEqual(self.n2.put("/mixed?q=2").status, 201)
        revs = {}
        for i in range(12):
            r = self.cluster.nodes[i % 3].put(f"/mixed/d{i:02d}", {"i": i})
            self.assertEqual(r.status, 201, r)
            revs[f"d{i:02d}"] = r.json["rev"]
        ids = [f"d{i:02d}" for i in range(12)]
        for n in self.cluster.nodes:
            # w=2 of 3: the third copy of the last writes may land a moment after their 201.
            self.assertTrue(wait_for(lambda n=n: [r["id"] for r in n.get("/mixed/_all_docs").json["rows"]] == ids, 10))
            self.assertEqual(sorted(r["id"] for r in n.get("/mixed/_changes").json["results"]), ids)
            self.assertEqual(n.get("/mixed/d07").json["i"], 7)
        # Each copy made the revision of each edit itself, all alike (MD5 while an older release
        # holds a copy: storage/rev_tree.hpp rev_hash): every copy's leaves are the one answered.
        for n in (self.n2, self.n3):
            for doc_id, rev in revs.items():
                leaves = [x["ok"]["_rev"] for x in n.get(f"/mixed/{doc_id}?open_revs=all&r=3").json]
                self.assertEqual(leaves, [rev], doc_id)

        # _time_seq: v0.1.0's copies cannot answer and are listed as such; v0.2.0's answer.
        ts = self.n2.get("/mixed/_time_seq").json
        old_name = self.cluster.names[0]
        if self.OLD_HAS_TIME_SEQ:
            self.assertNotIn("unavailable", ts)
            for copies in ts["time_seq"].values():
                self.assertEqual(sorted(copies), sorted(self.cluster.names))
        else:
            self.assertEqual(sorted({u["node"] for u in ts["unavailable"]}), [old_name])
            self.assertEqual(sorted(u["range"] for u in ts["unavailable"]),
                             ["00000000-7fffffff", "80000000-ffffffff"])
            for copies in ts["time_seq"].values():
                self.assertEqual(sorted(copies), sorted(self.cluster.names[1:]))
        # since=<time>: every change at or after the time (here: all of them), on every new node.
        for n in (self.n2, self.n3):
            got = sorted(r["id"] for r in n.get("/mixed/_changes?since=2025-09-01T00:00:00Z").json["results"])
            self.assertEqual(got, ids)
            self.assertEqual(n.get("/mixed/_changes?since=2999-01-01T00:00:00Z").json["results"], [])
        # _revs_limit reaches the copies of this release; older ones cannot set a copy's limit for
        # another node: listed.
        r = self.n2.put("/mixed/_revs_limit", 50)
        self.assertEqual(r.status, 202, r.json)
        self.assertEqual({u["node"] for u in r.json["unavailable"]}, {old_name})
        for n in (self.n2, self.n3):
            self.assertEqual(n.get("/mixed/_revs_limit").json, 50)

    def test_db_updates_lists_the_old_node_and_keeps_its_lifecycle(self):
        """_db_updates on a new node: the old node cannot serve its update log (listed under
        `unavailable`), but databases it creates and deletes still appear exactly once, from the
        catalog every node holds."""
        old_name = self.cluster.names[0]
        since = self.n2.get("/_db_updates?since=now").json["last_seq"]

        def rows():
            res = self.n2.get(f"/_db_updates?since={since}", fresh=True).json
            return res, [(r["type"], r["instance"]) for r in res["results"] if r["db_name"] == "by-old"]

        self.assertEqual(self.old.put("/by-old?q=1").status, 201)
        instance = self.old.get("/by-old").json["instance_start_time"]
        self.assertTrue(wait_for(lambda: rows()[1] == [("created", instance)], 15), rows())
        self.assertEqual(rows()[0]["unavailable"], [old_name])
        self.assertEqual(self.old.delete("/by-old").status, 200)
        self.assertTrue(wait_for(lambda: rows()[1] == [("created", instance), ("deleted", instance)], 15), rows())

    def test_attachments_wait_for_the_old_node(self):
        """A copy on an old node would keep a body naming bytes it cannot hold: a write with
        attachments is refused (501, naming the node) while one holds a copy; without attachments
        the same database takes writes."""
        old_name = self.cluster.names[0]
        self.assertEqual(self.n2.put("/mixed-att?q=1&n=3").status, 201)
        r = self.n2.put("/mixed-att/d", {"_attachments": {"a": {"data": "aGk="}}})
        self.assertError(r, 501, "not_implemented",
                         f"node {old_name} holds a copy of this database and cannot store attachments "
                         "(an older release): upgrade it first")
        self.assertIn(self.n2.put("/mixed-att/plain", {"v": 1}).status, (201, 202))

    def test_validate_doc_update_waits_for_the_old_node(self):
        """An older member coordinates writes without running validate_doc_update: a design
        document with one is refused (501, naming the node) while one is a member; one without is
        stored (issue 30)."""
        old_name = self.cluster.names[0]
        self.assertEqual(self.n2.put("/mixed-vdu?q=1&n=3").status, 201)
        r = self.n2.put("/mixed-vdu/_design/v", {"validate_doc_update": "function(d) { throw({forbidden: 'no'}); }"})
        self.assertEqual(r.status, 501)
        self.assertEqual(r.json["error"], "not_implemented")
        self.assertIn(f"node {old_name} does not run validate_doc_update functions", r.json["reason"])
        self.assertIn(self.n2.put("/mixed-vdu/_design/f", {"filters": {"f": "function(d) { return true; }"}}).status,
                      (201, 202))
        self.assertIn(self.n2.put("/mixed-vdu/plain", {"v": 1}).status, (201, 202))

    def test_no_split_starts_while_an_old_release_is_a_member(self):
        # n=1: the range on this node is its own, which it could split, but the old node would
        # route the split database by q alone: the job is refused and nothing changes.
        self.assertEqual(self.n2.put("/nosplit?q=3&n=1").status, 201)
        old_name = self.cluster.names[0]
        r = self.n2.post("/_reshard/jobs", {"type": "split", "db": "nosplit"})
        self.assertEqual(r.status, 409, r.json)
        self.assertEqual(r.json["error"], "conflict")
        self.assertIn(old_name, r.json["reason"])
        self.assertEqual(self.n2.get("/_reshard/jobs").json["total_rows"], 0)
        self.assertEqual(len(self.n2.get("/nosplit/_changes/_meta").json["shards"]), 3)
        self.assertEqual(self.n3.put("/nosplit/still-serving", {}).status, 201)
        # Nor a move between two nodes of this release.
        shards = self.n2.get("/nosplit/_shards").json["shards"]
        [(rng, [holder])] = [(r, c) for r, c in shards.items() if c[0] in self.cluster.names[1:]][:1]
        [shard] = [s["id"] for s in self.n2.get("/nosplit/_changes/_meta").json["shards"] if s["range"] == rng]
        other = [n for n in self.cluster.names[1:] if n != holder][0]
        r = self.n2.post("/_reshard/jobs", {"type": "move", "shard": f"shards/{rng}/nosplit.{shard.split('.')[1]}",
                                            "source": holder, "target": other})
        self.assertEqual(r.status, 409, r.json)
        self.assertIn(old_name, r.json["reason"])
        self.assertEqual(self.n2.get("/nosplit/_shards").json["shards"][rng], [holder])

    def test_the_resharding_state_reaches_every_member_that_can_take_it(self):
        # The old node cannot be asked (a PUT on itself sets its own): the answer names it, after
        # both nodes of this release took the state.
        old_name = self.cluster.names[0]
        r = self.n2.put("/_reshard/state", {"state": "stopped", "reason": "mixed"})
        self.assertEqual(r.status, 501, r.json)
        self.assertIn(old_name, r.json["reason"])
        for n in (self.n2, self.n3):
            self.assertEqual(n.get("/_reshard/state").json, {"state": "stopped", "reason": "mixed"})
        self.assertEqual(self.n3.put("/_reshard/state", {"state": "running"}).status, 501)
        for n in (self.n2, self.n3):
            self.assertEqual(n.get("/_reshard/state").json["state"], "running")
        # Its figures cannot be asked either: 501, not a hang.
        self.assertEqual(self.n2.get(f"/_node/{old_name}/_system").status, 501)

    def test_documents_of_a_range_one_release_alone_holds(self):
        # n=1, q=3: each range on one node. Every node answers for every document: this release asks
        # an old node's copy through its readDoc (v0.2.0 and v0.1.0 alike) and answers an old
        # coordinator's readDoc from its own copy.
        self.assertEqual(self.n2.put("/alone?q=3&n=1").status, 201)
        ids = [f"k{i:02d}" for i in range(18)]
        for i, doc_id in enumerate(ids):
            self.assertEqual(self.cluster.nodes[i % 3].put(f"/alone/{doc_id}", {"i": i}).status, 201)
        where = {d: self.n2.get(f"/alone/_shards/{d}").json["nodes"][0] for d in ids}
        self.assertEqual(len(set(where.values())), 3, where)
        revs = {}
        for n in self.cluster.nodes:
            for i, doc_id in enumerate(ids):
                r = n.get(f"/alone/{doc_id}?revs=true")
                self.assertEqual(r.status, 200, (n.port, doc_id, r.json))
                self.assertEqual((r.json["i"], r.json["_revisions"]["start"]), (i, 1))
                revs[doc_id] = r.json["_rev"]
                self.assertEqual(n.get(f"/alone/{doc_id}", headers={"If-None-Match": f'"{revs[doc_id]}"'}).status, 304)
            self.assertEqual(n.get("/alone/missing").json, {"error": "not_found", "reason": "missing"})
            body = {"docs": [{"id": d} for d in ids] + [{"id": "missing"}]}
            got = n.post("/alone/_bulk_get", body).json["results"]
            self.assertEqual([g["docs"][0]["ok"]["i"] for g in got[:-1]], list(range(18)))
            self.assertEqual(got[-1]["docs"][0]["error"]["error"], "not_found")
            diff = n.post("/alone/_revs_diff", {d: [revs[d], "2-x"] for d in ids}).json
            self.assertEqual({d: v["missing"] for d, v in diff.items()}, {d: ["2-x"] for d in ids})
        # An update and a delete coordinated by each node, on documents of every range.
        for k, n in enumerate(self.cluster.nodes):
            doc_id = ids[k]
            r = n.put(f"/alone/{doc_id}", {"i": 100 + k, "_rev": revs[doc_id]})
            self.assertEqual(r.status, 201, r.json)
            self.assertEqual(n.delete(f"/alone/{doc_id}?rev={r.json['rev']}").status, 200)
            for other in self.cluster.nodes:
                self.assertEqual(other.get(f"/alone/{doc_id}").json["reason"], "deleted")
        # _local documents (replication checkpoints) written and read through every node.
        for k, n in enumerate(self.cluster.nodes):
            for doc_id in ids[3:9]:
                r = n.put(f"/alone/_local/cp-{doc_id}-{k}", {"seq": k})
                self.assertEqual(r.status, 201, (n.port, r.json))
                self.assertEqual(r.json["rev"], "0-1")
        for n in self.cluster.nodes:
            for k in range(3):
                for doc_id in ids[3:9]:
                    self.assertEqual(n.get(f"/alone/_local/cp-{doc_id}-{k}").json["seq"], k)

    def test_time_feed_over_a_range_only_the_old_node_holds(self):
        # n=1, q=3 over 3 nodes: one range lives only on v0.1.0, which keeps no bins and ignores the
        # skip request; the coordinator starts that range at 0 and drops its rows from before the
        # second itself (by_seq carried commit times since v0.1.0), so the feed stays exact.
        self.assertEqual(self.n2.put("/solo?q=3&n=1").status, 201)
        shards = self.n2.get("/solo/_shards").json["shards"]
        old_name = self.cluster.names[0]
        self.assertEqual(sum(nodes == [old_name] for nodes in shards.values()), 1, shards)

        def write(prefix):
            ids = [f"{prefix}{i:02d}" for i in range(15)]
            for i, doc_id in enumerate(ids):
                self.assertEqual(self.cluster.nodes[i % 3].put(f"/solo/{doc_id}", {"i": i}).status, 201)
            on_old = [d for d in ids if self.n2.get(f"/solo/_shards/{d}").json["nodes"] == [old_name]]
            self.assertTrue(on_old, "some documents must live on the old node")
            return ids

        before = write("a")
        t = int(time.time()) + 1
        while time.time() < t + 0.05:
            time.sleep(0.05)
        after = write("b")
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
        for n in (self.n2, self.n3):
            for feed in ("normal", "longpoll"):
                body = n.get(f"/solo/_changes?feed={feed}&since={since}").json
                self.assertEqual(sorted(r["id"] for r in body["results"]), after, (n.port, feed))
            whole_bins = n.get(f"/solo/_changes?since={since}&time_precision=bin").json["results"]
            self.assertLessEqual(set(after), {r["id"] for r in whole_bins})  # more rows, never fewer
            early = n.get("/solo/_changes?since=2025-09-01T00:00:00Z").json["results"]
            self.assertEqual(sorted(r["id"] for r in early), sorted(before + after))


class MixedClusterV020(MixedCluster):
    OLD = "v0.2.0"
    OLD_HAS_TIME_SEQ = True


class MixedClusterV030(OldMemberTest):
    """A v0.3.0 member (issue 30): it proves the cluster secret and stores attachments, but runs no
    JavaScript. Writes it coordinates would pass any validate_doc_update unvalidated, so a design
    document with one is refused while it is a member, as with 0.1 and 0.2 (the feature
    javascript-v1 it lacks); filters and update handlers run on the members that have them."""
    OLD = "v0.3.0"
    EXTRA_CONFIG = ""  # 0.3 proves the cluster secret

    test_validate_doc_update_waits_for_the_old_node = MixedCluster.test_validate_doc_update_waits_for_the_old_node

    def test_filters_and_update_handlers_run_beside_it(self):
        self.assertEqual(self.old.get("/").json["vendor"]["version"], "0.3.0")
        self.assertEqual(self.n2.put("/mixed-js?q=1&n=3").status, 201)
        ddoc = {"filters": {"odd": "function(doc) { return doc.n % 2 === 1; }"},
                "updates": {"make": "function(doc, req) { return [{_id: req.id, n: Number(req.query.n)}, 'made']; }"}}
        self.assertIn(self.n2.put("/mixed-js/_design/app", ddoc).status, (201, 202))
        # A 202 (w copies not all answered in time under load) may leave n3's copy behind for a
        # moment: the handler runs on n3 once its copy has the design document.
        self.assertTrue(wait_for(lambda: self.n3.get("/mixed-js/_design/app?r=1").status == 200, 10))
        for i in range(4):
            r = self.n3.post(f"/mixed-js/_design/app/_update/make/d{i}?n={i}")
            self.assertIn(r.status, (201, 202), r.raw)
        # The old member holds a copy of everything written through the update handler.
        self.assertTrue(wait_for(lambda: self.old.get("/mixed-js/d3").status == 200, 10))
        ids = [row["id"] for row in self.n2.get("/mixed-js/_changes?filter=app/odd").json["results"]]
        self.assertEqual(sorted(ids), ["d1", "d3"])


    def test_what_a_0_3_member_cannot_do_is_named(self):
        """Views, Mango JSON indexes, purge and partitioned databases came with 0.4 (full-text search
        with 0.5): while a 0.3
        member holds copies they answer from this release's copies, and what only the old member
        could answer is refused with its name (501 or 400), never a wrong or partial answer."""
        old_name = self.cluster.names[0]
        # n=1, q=3 over 3 nodes: one range lives only on the old member.
        self.assertEqual(self.n2.put("/mixed-q?q=3&n=1").status, 201)
        shards = self.n2.get("/mixed-q/_shards").json["shards"]
        self.assertEqual(sum(nodes == [old_name] for nodes in shards.values()), 1, shards)
        for i in range(12):
            self.assertIn(self.n2.put(f"/mixed-q/d{i:02d}", {"n": i}).status, (201, 202))
        ddoc = {"views": {"by_n": {"map": "function(doc) { emit(doc.n, null); }"}}}
        self.assertIn(self.n2.put("/mixed-q/_design/v", ddoc).status, (201, 202))
        # Views: the range the old member alone holds cannot be read.
        r = self.n2.get("/mixed-q/_design/v/_view/by_n")
        self.assertEqual(r.status, 501, r.raw)
        self.assertIn(f"node {old_name} runs a release without views", r.json["reason"])
        # Full-text search (0.5, search-v1): the same, the old member named.
        nouveau = {"nouveau": {"idx": {"index": "function(doc) { index('double', 'n', doc.n); }"}}}
        self.assertIn(self.n2.put("/mixed-q/_design/s", nouveau).status, (201, 202))
        r = self.n2.get("/mixed-q/_design/s/_nouveau/idx?q=n:[0%20TO%2020]")
        self.assertEqual(r.status, 501, r.raw)
        self.assertIn(f"node {old_name} runs a release without full-text search", r.json["reason"])
        # A Mango text index (0.5, mango-text-v1): the same.
        self.assertEqual(self.n2.post("/mixed-q/_index", {"index": {}, "type": "text", "name": "t"}).status, 200)
        r = self.n2.post("/mixed-q/_find", {"selector": {"n": {"$gt": 3}}})
        self.assertEqual(r.status, 501, r.raw)
        self.assertIn(old_name, r.json["reason"])
        # Mango on a JSON index: the same (the old member keeps no JSON index).
        self.assertEqual(self.n2.post("/mixed-q/_index", {"index": {"fields": ["n"]}, "name": "n", "ddoc": "nidx"}).status, 200)
        r = self.n2.post("/mixed-q/_find", {"selector": {"n": {"$gt": 3}}, "use_index": ["nidx", "n"]})
        self.assertEqual(r.status, 501, r.raw)
        self.assertIn(old_name, r.json["reason"])
        # Purge: refused while a member lacks it (a purge it never applied would come back).
        rev = self.n2.get("/mixed-q/d00").json["_rev"]
        r = self.n2.post("/mixed-q/_purge", {"d00": [rev]})
        self.assertEqual(r.status, 400, r.raw)
        self.assertIn(old_name, r.json["reason"])
        self.assertEqual(self.n2.get("/mixed-q/d00").status, 200)  # nothing was purged
        # Partitioned databases: refused while a member would place their documents by id.
        r = self.n2.put("/mixed-p?partitioned=true")
        self.assertIn(r.status, (400, 501), r.raw)
        self.assertIn(old_name, r.json["reason"])
        self.assertEqual(self.n2.get("/mixed-p").status, 404)
        # Its configuration (0.5's configRequest): on it only, said so.
        r = self.n2.get(f"/_node/{old_name}/_config/couchdb")
        self.assertEqual(r.status, 501, r.raw)
        self.assertIn(old_name, r.json["reason"])
        # With n=3 every range has a copy of this release: views and _find answer in full.
        self.assertEqual(self.n2.put("/mixed-n3?q=2&n=3").status, 201)
        for i in range(6):
            self.assertIn(self.n3.put(f"/mixed-n3/d{i}", {"n": i}).status, (201, 202))
        self.assertIn(self.n3.put("/mixed-n3/_design/v", ddoc).status, (201, 202))
        self.assertTrue(wait_for(lambda: self.n2.get("/mixed-n3/_design/v/_view/by_n").json.get("total_rows") == 6, 10))
        got = self.n2.post("/mixed-n3/_find", {"selector": {"n": {"$gte": 4}}}).json["docs"]
        self.assertEqual(sorted(d["n"] for d in got), [4, 5])
        self.assertIn(self.n3.put("/mixed-n3/_design/s", nouveau).status, (201, 202))
        self.assertTrue(wait_for(lambda: self.n2.get("/mixed-n3/_design/s").status == 200, 10))
        r = self.n2.get("/mixed-n3/_design/s/_nouveau/idx?q=n:[4%20TO%20*]")
        self.assertEqual((r.status, r.json.get("total_hits")), (200, 2), r.raw)


class LegacyRefused(NodeTest):
    """Without accept_legacy_peers, a v0.2.0 node (which cannot prove the cluster secret) is refused
    both ways: it cannot call this release's node, and this release's node does not call it."""

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(2, sync_interval_ms=300)
        cls.cluster.nodes[0].bin = binary("v0.2.0")
        cls.cluster.start()
        cls.old, cls.node = cls.cluster.nodes

    @classmethod
    def tearDownClass(cls):
        cls.cluster.cleanup()

    def test_old_node_is_not_a_connected_member(self):
        self.assertEqual(self.old.get("/").json["vendor"]["version"], "0.2.0")
        old_name, new_name = self.cluster.names
        time.sleep(2)  # several reconnect rounds
        self.assertEqual(self.node.get("/_membership", fresh=True).json["all_nodes"], [new_name])
        self.assertEqual(self.old.get("/_membership", fresh=True).json["all_nodes"], [old_name])
        with open(self.node.log.name) as f:
            log = f.read()
        self.assertIn("runs a release without cluster authentication", log)
        self.assertIn("did not prove the cluster secret", log)


class MovedDataDir(OwnNodesTest):
    """A data directory whose catalog records a moved copy (lineage 0.2 cannot read) is refused by
    v0.2.0 and v0.1.0 at start, never served wrongly; it opens here again."""

    def test_older_releases_refuse_a_data_dir_that_saw_a_move(self):
        cluster = Cluster(2, sync_interval_ms=300).start().wait_connected()
        self.addCleanup(cluster.cleanup)
        a = cluster.nodes[0]
        self.assertEqual(a.put("/moved?q=1&n=1").status, 201)
        [[holder]] = a.get("/moved/_shards").json["shards"].values()
        [shard] = [s["id"] for s in a.get("/moved/_changes/_meta").json["shards"]]
        rng, suffix = shard.split(".")
        other = [n for n in cluster.names if n != holder][0]
        a.post("/moved/_bulk_docs", {"docs": [{"_id": f"d{i}"} for i in range(20)]})
        r = a.post("/_reshard/jobs", {"type": "move", "shard": f"shards/{rng}/moved.{suffix}", "source": holder,
                                      "target": other})
        self.assertEqual(r.status, 201, r.json)
        self.assertTrue(wait_for(lambda: a.get(f"/_reshard/jobs/{r.json[0]['id']}").json["job_state"] == "completed", 30))
        self.assertTrue(wait_for(lambda: all(n.get("/moved/_shards").json["shards"][rng] == [other]
                                             for n in cluster.nodes), 10))
        for n in cluster.nodes:
            n.stop()
            for tag in ("v0.1.0", "v0.2.0"):
                old = Node(data_dir=n.data_dir, bin=binary(tag), config=n.config)
                with self.assertRaises(RuntimeError) as refused:
                    old.start()
                self.assertIn("_dbs.lmdb: unreadable header", str(refused.exception), tag)
        for n in cluster.nodes:
            n.start()
        cluster.wait_connected()
        self.assertEqual(len(a.get("/moved/_all_docs").json["rows"]), 20)


if __name__ == "__main__":
    main()
