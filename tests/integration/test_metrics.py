"""GET /_node/_local/_prometheus and /_node/_local/_stats (issue 12 point 4): names and values that
move with load, in Prometheus text format and in CouchDB's shape."""
import http.client
import os
import re
import shutil
import subprocess
import threading
import time

from harness import BIN, NodeTest, free_port, main

LINE = re.compile(r'^((?:settee|process)_[a-z_]+)(\{[^}]*\})? (\S+)$')


def scrape(node):
    r = node.get("/_node/_local/_prometheus")
    assert r.status == 200, r
    values, types = {}, {}
    for line in r.raw.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
        elif line and not line.startswith("#"):
            m = LINE.match(line)
            assert m, line
            values[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return r, values, types


def promtool():
    """Debian's promtool: on PATH, or unpacked beside the binary by scripts/setup.sh --tests."""
    beside = os.path.join(os.path.dirname(os.path.abspath(BIN)), "tools", "promtool")
    return shutil.which("promtool") or (beside if os.access(beside, os.X_OK) else None)


def promtool_check(test, text):
    """`promtool check metrics` on the exposition: exit 0 and no lint findings."""
    tool = promtool()
    if tool is None:
        test.skipTest("promtool not found (scripts/setup.sh --tests unpacks it from Debian's prometheus package)")
    out = subprocess.run([tool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    test.assertEqual((out.returncode, out.stdout + out.stderr), (0, ""), "promtool check metrics")


class Metrics(NodeTest):
    def test_prometheus_counters_and_histograms_move_with_load(self):
        r, before, types = scrape(self.node)
        self.assertEqual(r.header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8")
        for name, kind in (("settee_http_requests_total", "counter"), ("settee_http_request_duration_seconds", "histogram"),
                           ("settee_commit_duration_seconds", "histogram"), ("settee_commit_ops", "histogram"),
                           ("settee_fsync_duration_seconds", "histogram"), ("settee_open_shards", "gauge"),
                           ("settee_live_feeds", "gauge"), ("settee_rpc_calls_total", "counter")):
            self.assertEqual(types.get(name), kind, name)
        self.new_db("metered")
        for i in range(20):
            self.assertEqual(self.node.put(f"/metered/d{i}", {"i": i}).status, 201)
        _, after, _ = scrape(self.node)

        def grew(key):
            return after.get(key, 0) - before.get(key, 0)

        self.assertGreaterEqual(grew('settee_http_requests_total{method="PUT"}'), 21)  # the db and 20 docs
        self.assertGreaterEqual(grew('settee_http_responses_total{status="201"}'), 21)
        self.assertGreaterEqual(grew("settee_http_request_duration_seconds_count"), 21)
        self.assertGreaterEqual(grew("settee_commit_ops_count"), 1)
        self.assertGreaterEqual(grew("settee_commit_ops_sum"), 20)  # every document write went into a commit
        self.assertGreaterEqual(grew("settee_fsync_duration_seconds_count"), 1)
        self.assertGreaterEqual(after["settee_open_shards"], 1)
        # Buckets are cumulative and end with +Inf == count.
        buckets = [(k, v) for k, v in after.items() if k.startswith("settee_commit_duration_seconds_bucket")]
        counts = [v for _, v in buckets]
        self.assertEqual(counts, sorted(counts))
        self.assertEqual(after['settee_commit_duration_seconds_bucket{le="+Inf"}'],
                         after["settee_commit_duration_seconds_count"])

    def test_the_query_engine_has_series(self):
        # Issue 53 item 6: Mango, views, the JavaScript workers and the replicator (CouchDB's mango.*,
        # couchdb.mrview.*, couchdb.query_server.*, couch_replicator.*), bounded labels only.
        n = self.node
        _, before, _ = scrape(n)
        self.new_db("engine")
        self.assertEqual(n.post("/engine/_bulk_docs", {"docs": [{"_id": f"e{i}", "t": i % 2} for i in range(12)]}).status,
                         201)
        self.assertEqual(len(n.post("/engine/_find", {"selector": {"t": 1}}).json["docs"]), 6)  # no index: unindexed
        self.assertEqual(n.put("/engine/_design/d", {"views": {"v": {"map": "function(d) { emit(d.t, 1); }"}},
                                                      "validate_doc_update": "function(d) {}"}).status, 201)
        self.assertEqual(len(n.get("/engine/_design/d/_view/v?key=0").json["rows"]), 6)
        r = n.post("/_replicate", {"source": f"http://{n.admin[0]}:{n.admin[1]}@127.0.0.1:{n.port}/engine",
                                   "target": f"http://{n.admin[0]}:{n.admin[1]}@127.0.0.1:{n.port}/engine-copy",
                                   "create_target": True})
        self.assertEqual(r.status, 200, r)
        r, after, types = scrape(n)

        def grew(key):
            return after.get(key, 0) - before.get(key, 0)
        self.assertEqual(grew("settee_mango_queries_total"), 1)
        self.assertEqual(grew("settee_mango_unindexed_queries_total"), 1)
        self.assertEqual(grew("settee_mango_docs_examined_total"), 12)
        self.assertEqual(grew("settee_mango_results_returned_total"), 6)
        self.assertEqual(grew("settee_view_queries_total"), 1)
        self.assertEqual(grew("settee_view_docs_mapped_total"), 12)  # the design document is not mapped
        self.assertGreaterEqual(grew("settee_view_index_updates_total"), 1)
        self.assertGreaterEqual(grew("settee_js_calls_total"), 2)  # the save's compile and the map at least
        self.assertGreaterEqual(after["settee_js_workers"], 1)
        self.assertEqual(types["settee_js_workers_busy"], "gauge")
        # The scrape itself runs; every request before it (the replication's too) has ended.
        self.assertEqual(types["settee_http_requests_running"], "gauge")
        self.assertEqual(after["settee_http_requests_running"], 1)
        self.assertEqual(grew("settee_replication_docs_written_total"), 13)  # and the design document
        self.assertGreaterEqual(grew("settee_replication_checkpoints_total"), 1)
        self.assertEqual(types["settee_replication_jobs"], "gauge")
        self.assertEqual({k for k in after if k.startswith("settee_replication_jobs{")} >=
                         {f'settee_replication_jobs{{state="{s}"}}' for s in ("running", "pending", "crashing")}, True)
        stats = n.get("/_node/_local/_stats").json
        self.assertEqual(stats["mango"]["unindexed_queries"]["value"], after["settee_mango_unindexed_queries_total"])
        self.assertGreaterEqual(stats["couch_replicator"]["docs_written"]["value"], 13)
        self.assertGreaterEqual(stats["couchdb"]["mrview"]["map_doc"]["value"], 12)

    def test_promtool_finds_nothing_to_lint(self):
        self.new_db("linted")
        self.node.post("/linted/_bulk_docs", {"docs": [{"_id": f"d{i}", "k": i} for i in range(20)]})
        self.node.put("/linted/_design/d", {"views": {"v": {"map": "function(doc){ emit(doc.k, 1); }", "reduce": "_sum"}}})
        self.assertEqual(self.node.get("/linted/_design/d/_view/v").status, 200)
        self.assertEqual(self.node.post("/linted/_find", {"selector": {"k": {"$gt": 3}}}).status, 200)
        r, _, _ = scrape(self.node)
        promtool_check(self, r.raw)

    def test_live_feeds_gauge_counts_an_open_feed(self):
        self.new_db("gauged")
        _, before, _ = scrape(self.node)
        conn = http.client.HTTPConnection("127.0.0.1", self.node.port, timeout=10)
        conn.request("GET", "/gauged/_changes?feed=longpoll&since=now&timeout=3000", headers=self.node.auth_header())
        seen = []
        t = threading.Thread(target=lambda: seen.append(conn.getresponse().read()))
        t.start()
        try:
            deadline = time.time() + 5
            while time.time() < deadline:
                if scrape(self.node)[1]["settee_live_feeds"] == before["settee_live_feeds"] + 1:
                    break
                time.sleep(0.05)
            self.assertEqual(scrape(self.node)[1]["settee_live_feeds"], before["settee_live_feeds"] + 1)
        finally:
            self.node.put("/gauged/wake", {})
            t.join()
            conn.close()

    def test_stats_in_couchdbs_shape(self):
        self.new_db("statted")
        before = self.node.get("/_node/_local/_stats").json["couchdb"]
        for i in range(5):
            self.node.put(f"/statted/d{i}", {})
        stats = self.node.get("/_node/_local/_stats").json["couchdb"]
        put = stats["httpd_request_methods"]["PUT"]
        self.assertEqual(put["type"], "counter")
        self.assertGreaterEqual(put["value"] - before["httpd_request_methods"]["PUT"]["value"], 5)
        self.assertGreaterEqual(stats["httpd_status_codes"]["201"]["value"], 6)
        self.assertEqual(stats["request_time"]["type"], "histogram")
        self.assertGreater(stats["request_time"]["value"]["n"], before["request_time"]["value"]["n"])
        self.assertEqual(sum(n for _, n in stats["commits"]["value"]["histogram"]), stats["commits"]["value"]["n"])

    def test_errors(self):
        self.assertEqual(self.node.get("/_node/_local/_prometheus", auth=False).status, 401)
        self.assertEqual(self.node.request("POST", "/_node/_local/_stats", {}).status, 405)
        self.assertEqual(self.node.get("/_node/nobody@h/_stats").status, 404)

    def test_process_uptime_build_disk_and_zeros(self):
        _, values, types = scrape(self.node)
        for name, kind in (("process_cpu_seconds_total", "counter"), ("process_resident_memory_bytes", "gauge"),
                           ("process_open_fds", "gauge"), ("process_max_fds", "gauge"),
                           ("process_start_time_seconds", "gauge"), ("settee_uptime_seconds", "gauge"),
                           ("settee_data_filesystem_free_bytes", "gauge"), ("settee_databases", "gauge"),
                           ("settee_database_files_bytes", "gauge"), ("settee_document_writes_total", "counter")):
            self.assertEqual(types.get(name), kind, name)
        self.assertGreater(values["process_resident_memory_bytes"], 1 << 20)
        self.assertGreater(values["process_open_fds"], 3)
        self.assertAlmostEqual(values["process_start_time_seconds"], time.time() - values["settee_uptime_seconds"],
                               delta=5)
        self.assertGreater(values["settee_data_filesystem_size_bytes"], values["settee_data_filesystem_free_bytes"])
        version = self.node.get("/").json["vendor"]["version"]
        self.assertEqual(values[f'settee_build_info{{version="{version}"}}'], 1)
        # Series a rate() needs exist before their first increase.
        for series in ('settee_http_requests_total{method="COPY"}', 'settee_http_responses_total{status="409"}',
                       'settee_reshard_jobs{state="failed"}'):
            self.assertIn(series, values)

    def test_per_database_series_are_bounded(self):
        # Small databases (db-per-user) add no series; their total is one.
        _, before, _ = scrape(self.node)
        for i in range(12):
            self.new_db(f"tiny-{i}")
        _, after, _ = scrape(self.node)
        self.assertEqual(after["settee_databases"], before["settee_databases"] + 12)
        self.assertEqual(after["settee_databases_detailed"], 0)
        self.assertFalse([k for k in after if k.startswith(("settee_database_file_bytes{", "settee_time_seq_bins{",
                                                             "settee_database_docs{"))])
        self.assertGreater(after["settee_database_files_bytes"], before["settee_database_files_bytes"])

    def test_stats_main_entries_and_paths(self):
        self.new_db("stat2")
        self.node.post("/stat2/_bulk_docs", {"docs": [{"_id": f"d{i}"} for i in range(7)]})
        self.node.get("/stat2/d1")
        stats = self.node.get("/_node/_local/_stats").json["couchdb"]
        for key in ("database_reads", "database_writes", "open_databases", "open_os_files", "auth_cache_hits",
                    "auth_cache_misses"):
            self.assertIn(stats[key]["type"], ("counter", "gauge"), key)
        self.assertGreaterEqual(stats["database_writes"]["value"], 7)
        self.assertGreaterEqual(stats["database_reads"]["value"], 1)
        self.assertGreaterEqual(stats["httpd"]["bulk_requests"]["value"], 1)
        self.assertGreater(stats["auth_cache_hits"]["value"], 0)
        rt = stats["request_time"]["value"]
        self.assertEqual([p for p, _ in rt["percentile"]], [50, 75, 90, 95, 99, 999])
        self.assertLessEqual(rt["min"], rt["median"])
        self.assertLessEqual(rt["median"], rt["max"])
        # A path below _stats picks a group or a metric, as couch_stats_httpd; a missing one is null.
        one = self.node.get("/_node/_local/_stats/couchdb/request_time")
        self.assertEqual((one.status, one.json["type"]), (200, "histogram"))
        self.assertEqual(self.node.get("/_node/_local/_stats/couchdb/nothing").json, None)

    def test_metrics_role_reads_statistics_only(self):
        r = self.node.put("/_users/org.couchdb.user:scraper",
                          {"name": "scraper", "type": "user", "roles": ["_metrics"], "password": "s-pw"})
        self.assertEqual(r.status, 201, r)
        who = ("scraper", "s-pw")
        for path in ("/_node/_local/_prometheus", "/_node/_local/_stats", "/_node/_local/_stats/couchdb",
                     "/_node/_local/_system"):
            self.assertEqual(self.node.get(path, user=who).status, 200, path)
        for path in ("/_node/_local/_config", "/_all_dbs", "/_active_tasks", "/_users/_all_docs"):
            self.assertIn(self.node.get(path, user=who).status, (401, 403), path)


METRICS_PORT = free_port()


class MetricsListener(NodeTest):
    """[prometheus] additional_port: the Prometheus text without credentials on a port of its own,
    nothing else there; per-database series for the largest databases when the bounds allow."""
    config = (f"[prometheus]\nadditional_port = true\nbind_address = 127.0.0.1\nport = {METRICS_PORT}\n"
              "per_database_min_bytes = 1\nper_database_max = 2\n")

    def get(self, path, method="GET"):
        conn = http.client.HTTPConnection("127.0.0.1", METRICS_PORT, timeout=30)
        conn.request(method, path)
        r = conn.getresponse()
        body = r.read().decode()
        conn.close()
        return r.status, r.getheader("Content-Type"), body

    def test_no_credentials_and_nothing_else(self):
        status, ctype, body = self.get("/_node/_local/_prometheus")
        self.assertEqual(status, 200)
        self.assertTrue(ctype.startswith("text/plain; version=0.0.4"), ctype)
        self.assertIn("settee_http_requests_total", body)
        self.assertEqual(self.get(f"/_node/{self.node.get('/_node/_local').json['name']}/_prometheus")[0], 200)
        for path in ("/", "/_all_dbs", "/_node/_local/_config", "/_node/_local/_stats", "/_users/x"):
            self.assertEqual(self.get(path)[0], 404, path)
        self.assertEqual(self.get("/_node/_local/_prometheus", "DELETE")[0], 405)
        # The main port still asks.
        self.assertEqual(self.node.get("/_node/_local/_prometheus", auth=False).status, 401)

    def test_largest_databases_get_series(self):
        pad = "x" * 4000
        for name, docs in (("big-a", 400), ("big-b", 200), ("small-c", 0)):
            self.new_db(name, q=1)
            if docs:
                r = self.node.post(f"/{name}/_bulk_docs", {"docs": [{"pad": pad} for _ in range(docs)]})
                self.assertEqual(r.status, 201)
        _, values, _ = scrape(self.node)
        per_db = {k for k in values if k.startswith("settee_database_file_bytes{")}
        self.assertEqual(per_db, {'settee_database_file_bytes{db="big-a"}', 'settee_database_file_bytes{db="big-b"}'})
        self.assertEqual(values["settee_databases_detailed"], 2)
        self.assertEqual(values['settee_database_docs{db="big-a"}'], 400)
        self.assertTrue([k for k in values if k.startswith('settee_time_seq_bins{shard="shards/00000000-ffffffff/big-a.')])
        promtool_check(self, self.get("/_node/_local/_prometheus")[2])  # with the per-database series


if __name__ == "__main__":
    main()
