"""The built-in page /_settee/ (issue 12 point 5) in a real headless browser (Debian's chromium via
playwright-core, tests/clients/settee_page.js) against a running 2-node cluster: it signs in through
its form, lists both members as connected and every range of a database with its copies, shows
every member's version, uptime, memory and disk, request/commit/error rates and latency on axes of
their own (not counting its own reads), one row per reshard operation, doc counts and sizes, copies
on a stopped node marked down, one time-seq chart per database and each copy's on demand with as
many bins as GET /db/_time_seq has; the screenshot of a chart has ink on it. Nothing is fetched
from elsewhere. Issue 53: an empty cluster says so; the node serving the page is named; the first
reading draws axes and a note, the newest point sits at "now" (the page runs on playwright's
clock); replications name source and target, a failing one is retrying with its reason; an index
build names its database and design document; after a split the database's chart counts each
change once and a child's chart says what it inherited."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import ADMIN, CLIENTS_DIR, CLIENTS_SRC, install_clients, main, NodeTest, wait_until, write_clock  # noqa: E402
from test_membership import Cluster  # noqa: E402

START = 2000000000  # 2033-05-18T03:33:20Z


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit, non-interlaced PNG (what chromium writes)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        ftype, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 0xFF
            elif ftype == 2:
                line[i] = (line[i] + b) & 0xFF
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


class SetteePage(NodeTest):
    @classmethod
    def setUpClass(cls):
        install_clients()
        cls.tmp = tempfile.mkdtemp(prefix="settee-page-")
        cls.clock = os.path.join(cls.tmp, "now")
        cls.set_time(START)
        cls.cluster = Cluster(2, sync_interval_ms=200)
        for n in cls.cluster.nodes:
            n.env = {"SETTEE_CLOCK_FILE": cls.clock}
        cls.cluster.start().wait_connected()
        cls.node = cls.cluster.nodes[0]

    @classmethod
    def tearDownClass(cls):
        cls.cluster.cleanup()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def set_time(cls, t):
        write_clock(cls.clock, t)

    def browse(self, db):
        page_png, chart_png = os.path.join(self.tmp, "page.png"), os.path.join(self.tmp, "chart.png")
        r = subprocess.run(["node", os.path.join(CLIENTS_SRC, "settee_page.js"), f"http://127.0.0.1:{self.node.port}",
                            ADMIN[0], ADMIN[1], db, page_png, chart_png],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, NODE_PATH=os.path.join(CLIENTS_DIR, "node_modules")))
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        return json.loads(r.stdout.strip().splitlines()[-1]), page_png, chart_png

    def test_page_shows_cluster_databases_and_time_seq(self):
        n1, n2 = self.cluster.nodes
        # A cluster without databases: says so (no empty table, no empty drop-down), names the node
        # the page is on; one reading draws the axes and says a rate needs two; the newest point
        # of the rate line is drawn at "now".
        shown, _, _ = self.browse("")
        self.assertEqual(shown["errors"], [])
        self.assertEqual(shown["dbs"], [["no databases yet: PUT /<name> creates one"]])
        self.assertFalse(shown["choiceShown"])
        self.assertIn("on " + self.cluster.names[0], shown["header"])
        first, third = shown["first"], shown["third"]
        self.assertEqual((first["polls"], first["points"]), (1, 0))
        self.assertTrue(first["rates"].startswith("measuring: a rate needs two readings"), first["rates"])
        self.assertGreater(first["ink"], 200)  # axes, labels and the note, not a blank canvas
        self.assertEqual((third["polls"], third["points"]), (3, 2))
        self.assertGreater(third["newest"], 5, "the newest reading is not drawn at the right edge")
        # The page's own reads are not load: an idle node (nothing else reads it) shows none.
        self.assertRegex(third["rates"], r"^0\.0 requests/s, \d+\.\d shard commits/s, errors 0\.0 4xx/s and 0\.0 5xx/s")

        self.assertEqual(n1.put("/pictures?q=2&n=2").status, 201)
        # Writes in four 3-hour bins (the clock moves), more in the later ones.
        for step, (hours, docs) in enumerate([(0, 3), (3, 10), (9, 40), (30, 200)]):
            self.set_time(START + hours * 3600)
            r = n1.post("/pictures/_bulk_docs", {"docs": [{"_id": f"s{step}-{i}"} for i in range(docs)]})
            self.assertEqual(r.status, 201, r)
        # Databases with one copy each; those on n2 lose every copy when it stops.
        for k in range(8):
            self.assertEqual(n1.put(f"/lonely{k}?q=1&n=1").status, 201)
        on_n2 = {f"lonely{k}" for k in range(8)
                 if n1.get(f"/lonely{k}/_shards").json["shards"]["00000000-ffffffff"] == [self.cluster.names[1]]}
        self.assertTrue(on_n2 and len(on_n2) < 8, on_n2)
        # A split of a range with a copy on each node: one job per copy's node, one row on the page.
        self.assertEqual(n1.put("/splitme?q=1&n=2").status, 201)
        self.assertEqual(n1.put("/_reshard/state", {"state": "stopped"}).status, 200)
        r = n1.post("/_reshard/jobs", {"type": "split", "db": "splitme", "range": "00000000-ffffffff"})
        self.assertEqual(r.status, 201, r.json)
        self.assertEqual(len(r.json), 2)
        ts = n1.get("/pictures/_time_seq").json["time_seq"]
        # Replications: one continuous and caught up, one retrying (nothing listens on port 1).
        self.assertEqual(n1.post("/_replicate", {"source": "pictures", "target": "zcopy", "continuous": True,
                                                 "create_target": True,
                                                 "create_target_params": {"q": "1"}}).status, 202)
        self.assertEqual(n1.post("/_replicate", {"source": "pictures", "target": "http://127.0.0.1:1/nowhere",
                                                 "continuous": True}).status, 202)
        def replications():
            return {t["target"]: t for t in n1.get("/_active_tasks").json if t["type"] == "replication"}
        self.assertTrue(wait_until(lambda: replications().get("zcopy", {}).get("docs_written") == 253
                                   and replications()["zcopy"]["changes_pending"] == 0), replications())
        self.assertTrue(wait_until(lambda: any(t.get("state") == "retrying" for t in replications().values())),
                        replications())
        # An index build that takes a while (the map waits 300 ms a document), started without a
        # request that stays open (update=lazy answers at once).
        self.assertEqual(n1.put("/slowview?q=1&n=1").status, 201)
        n1.post("/slowview/_bulk_docs", {"docs": [{"_id": f"s{i}"} for i in range(60)]})
        n1.put("/slowview/_design/slow", {"views": {"v": {
            "map": "function(doc){ var end = Date.now() + 300; while (Date.now() < end) {} emit(doc._id, null); }"}}})
        self.assertEqual(n1.get("/slowview/_design/slow/_view/v?update=lazy").status, 200)
        self.assertTrue(wait_until(lambda: any(t["type"] == "indexer" for t in n1.get("/_active_tasks").json)))

        shown, page_png, chart_png = self.browse("pictures")
        self.assertEqual(shown["errors"], [])
        self.assertEqual(shown["outside"], [], "the page fetched something from elsewhere")
        self.assertTrue(shown["loginShown"])
        self.assertTrue(shown["appHiddenAtLogin"], "the empty dashboard shows under the sign-in form")
        # Every member with its own figures (asked of n1: n2's over RPC).
        here = f"{self.cluster.names[0]} (this page's node)"
        self.assertEqual(sorted(m[0] for m in shown["members"]), sorted([here, self.cluster.names[1]]))
        for m in shown["members"]:
            self.assertEqual(m[1], "connected")
            self.assertRegex(m[2], r"^\d+\.\d+\.\d+")        # version
            self.assertRegex(m[3], r"^\d+ (s|min|h|d)$")      # uptime
            self.assertRegex(m[4], r"^[\d.]+ MiB$")           # memory
            self.assertRegex(m[5], r"^[\d.]+ \w+ of [\d.]+ \w+$")  # disk free of size
        # Databases: doc count and size on each one's first row, every range with its copies.
        rows = {(row[0] or None, row[3]) for row in shown["dbs"]}
        pictures = [row for row in shown["dbs"] if row[0] == "pictures"][0]
        self.assertEqual(pictures[1], "253")
        self.assertRegex(pictures[2], r"^[\d.]+ (KiB|MiB)$")
        ranges = [row[3] for row in shown["dbs"]]
        self.assertEqual(ranges.count("00000000-7fffffff"), 1)
        self.assertEqual(ranges.count("00000000-ffffffff"), 11)  # lonely0-7, splitme, slowview, zcopy
        shards = n1.get("/pictures/_shards").json["shards"]
        for row in shown["dbs"]:
            if row[3] in shards and row[3] != "00000000-ffffffff":
                self.assertEqual(row[4].split(", "), shards[row[3]])
        self.assertEqual(shown["unavailable"], [])
        # Load here is real: the continuous replication reads this node over HTTP (its feed and
        # checkpoints), so only the figures' shape is checked; the idle node's 0.0 is checked above.
        self.assertRegex(shown["rates"], r"^\d+\.\d requests/s, \d+\.\d shard commits/s, errors \d+\.\d 4xx/s and \d+\.\d 5xx/s")
        self.assertEqual(len(shown["axes"]), 3)  # requests, commits, latency: an axis each
        # One row for the split, naming the database, the range and both nodes; the replications
        # with source and target, one caught up, one retrying and why; the index build naming the
        # database and design document.
        jobs = dict(zip(shown["jobKinds"], shown["jobs"]))
        self.assertEqual(jobs["split"][:3], ["split splitme 00000000-ffffffff into 2",
                                             ", ".join(sorted(self.cluster.names)), "stopped / new"])
        reps = {j[0]: j for j in shown["jobs"] if j[0].startswith("replication ")}
        self.assertEqual(reps["replication pictures → zcopy (continuous)"][2:], ["running", "caught up, 253 written"])
        retrying = reps["replication pictures → http://127.0.0.1:1/nowhere/ (continuous)"]
        self.assertRegex(retrying[2], r"^retrying: could not open http://127\.0\.0\.1:1/nowhere/: could not connect")
        self.assertEqual(retrying[3], "0 written before it failed")
        [builder] = n1.get("/slowview/_shards").json["shards"]["00000000-ffffffff"]
        self.assertEqual(jobs["indexer"][:3], ["indexer slowview _design/slow 00000000-ffffffff", builder, "running"])
        self.assertEqual(shown["chosen"], "pictures")
        # One chart for the database (every range added up), each copy's on demand with the API's bins.
        [whole] = [c for c in shown["charts"] if c["kind"] == "database"]
        self.assertEqual((whole["db"], whole["changes"]), ("pictures", 253))
        self.assertGreaterEqual(whole["bins"], 4)
        want = sorted((r, node, len(bins)) for r, copies in ts.items() for node, bins in copies.items())
        got = sorted((c["range"], c["node"], c["bins"]) for c in shown["charts"] if c["kind"] == "copy")
        self.assertEqual(got, want)
        self.assertEqual(len(got), 4)  # 2 ranges x 2 copies
        self.assertTrue(all(b >= 4 for _, _, b in got), got)
        self.assertTrue(all(c["ink"] > 500 for c in shown["charts"]), shown["charts"])

        # The screenshots: the page is not blank and the chart has bars of the bar colour.
        self.assertGreater(os.path.getsize(page_png), 20000)
        width, height, bpp, rows = png_pixels(chart_png)
        self.assertGreaterEqual((width, height), (700, 130))
        bar = sum(1 for row in rows for i in range(0, len(row), bpp)
                  if abs(row[i] - 0x3B) < 30 and abs(row[i + 1] - 0x7D) < 30 and abs(row[i + 2] - 0xDD) < 30)
        self.assertGreater(bar, 1000, "no bars in the chart's screenshot")
        if os.environ.get("SETTEE_PAGE_SHOTS"):  # docs/operations.md's screenshots
            shutil.copy(page_png, os.path.join(os.environ["SETTEE_PAGE_SHOTS"], "page.png"))

        # n2 down: marked so, and the databases whose every copy was there stand out.
        for j in r.json:
            n1.delete(f"/_reshard/jobs/{j['id']}")
        self.assertEqual(n1.put("/_reshard/state", {"state": "running"}).status, 200)
        # A range of pictures splits: its children keep its bins, the database's chart still counts
        # each change once (issue 53: one split showed 1.5 times the changes).
        r = n1.post("/_reshard/jobs", {"type": "split", "db": "pictures", "range": "00000000-7fffffff"})
        self.assertEqual(r.status, 201, r.json)
        split_ids = {j["id"] for j in r.json}
        self.assertTrue(wait_until(lambda: all(j["job_state"] == "completed" for j in n1.get("/_reshard/jobs").json["jobs"]
                                               if j["id"] in split_ids), 60), n1.get("/_reshard/jobs").json)
        n2.stop()
        try:
            shown, _, _ = self.browse("pictures")
            [whole] = [c for c in shown["charts"] if c["kind"] == "database"]
            self.assertEqual(whole["changes"], 253)
            children = [c for c in shown["captions"] if c.startswith(("00000000-3fffffff", "40000000-7fffffff"))]
            self.assertEqual(len(children), 2, shown["captions"])
            self.assertTrue(all("written before its split, to its parent" in c for c in children), children)
            states = dict((m[0], m[1]) for m in shown["members"])
            here = f"{self.cluster.names[0]} (this page's node)"
            self.assertEqual(states, {here: "connected", self.cluster.names[1]: "unreachable"})
            self.assertEqual(sorted(shown["unavailable"]),
                             sorted(on_n2 | ({"slowview"} if builder == self.cluster.names[1] else set())))
            self.assertTrue(all("(down)" in row[4] for row in shown["dbs"] if row[3] != "00000000-ffffffff"))
        finally:
            n2.start()

    def test_page_is_html_without_outside_resources(self):
        r = self.node.get("/_settee/", auth=False)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.headers["content-type"], "text/html; charset=utf-8")
        self.assertIn("default-src 'self'", r.headers["content-security-policy"])
        body = r.raw
        self.assertNotRegex(body, r"(src|href)=\"https?://", "an outside resource")
        self.assertEqual(self.node.get("/_settee", auth=False).status, 200)
        self.assertError(self.node.post("/_settee/", {}), 405, "method_not_allowed", "Only GET,HEAD allowed")
        self.assertError(self.node.get("/_settee/x"), 404, "not_found")
        # The data behind it stays for server admins.
        self.assertEqual(self.node.get("/_membership", auth=False).status, 401)


if __name__ == "__main__":
    main()
