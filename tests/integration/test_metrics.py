"""GET /_node/_local/_prometheus and /_node/_local/_stats (issue 12 point 4): names and values that
move with load, in Prometheus text format and in CouchDB's shape."""
import http.client
import re
import threading
import time

from harness import NodeTest, main

LINE = re.compile(r'^(settee_[a-z_]+)(\{[^}]*\})? (\S+)$')


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


if __name__ == "__main__":
    main()
