"""settee's replicator with pouchdb-server (npm pouchdb-server 4.2.0) as the other end (issue 33):
settee -> pouchdb-server and back, one-shot and continuous, with conflicts, deletions and
attachments arriving exactly; checkpoints on pouchdb-server's side in CouchDB's format so that a
second replication moves nothing; and pouchdb-server's own replicator reading what settee's wrote."""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import urllib.request

from harness import CLIENTS_DIR, free_port, install_clients, main, NodeTest, wait_until



class PouchServer:
    """pouchdb-server on a loopback port, its data in a directory of its own (no admins: anyone)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="settee-pouchserver-")
        self.port = free_port()
        binary = os.path.join(CLIENTS_DIR, "node_modules", ".bin", "pouchdb-server")
        self.proc = subprocess.Popen([binary, "--port", str(self.port), "--dir", self.dir, "--no-stdout-logs"],
                                     cwd=self.dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert wait_until(self.up, 60), "pouchdb-server did not start"

    def up(self):
        try:
            return self.call("GET", "/")[0] == 200
        except OSError:
            return False

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        r = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                   headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(r, timeout=60) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def url(self, db):
        return f"http://127.0.0.1:{self.port}/{db}"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)


def b64(data):
    return base64.b64encode(data).decode()


class ReplicateWithPouchDBServer(NodeTest):
    @classmethod
    def setUpClass(cls):
        install_clients()
        super().setUpClass()
        cls.pouch = PouchServer()

    @classmethod
    def tearDownClass(cls):
        cls.pouch.stop()
        super().tearDownClass()

    def replicate(self, body, status=200):
        r = self.node.post("/_replicate", body)
        self.assertEqual(r.status, status, r)
        return r.json

    def seed(self, db, n):
        self.assertEqual(self.node.put(f"/{db}").status, 201)
        docs = [{"_id": f"p{i:03d}", "i": i} for i in range(n)]
        self.assertEqual(self.node.post(f"/{db}/_bulk_docs", {"docs": docs}).status, 201)
        for h in ("aaa", "bbb"):  # two branches
            self.assertEqual(self.node.post(f"/{db}/_bulk_docs", {"new_edits": False, "docs": [
                {"_id": "conflicted", "_rev": f"1-{h}", "side": h}]}).status, 201)
        r = self.node.put(f"/{db}/gone", {"x": 1})
        self.assertEqual(self.node.delete(f"/{db}/gone?rev={r.json['rev']}").status, 200)
        r = self.node.put(f"/{db}/att", {"_attachments": {
            "a.bin": {"content_type": "application/octet-stream", "data": b64(bytes(range(256)) * 40)}}})
        self.assertEqual(r.status, 201, r)
        # Larger than what travels inline: copied alone, as multipart (or open_revs JSON from a
        # source that does not answer multipart).
        r = self.node.put(f"/{db}/bigatt", {"_attachments": {
            "b.bin": {"content_type": "application/octet-stream", "data": b64(os.urandom(300 << 10))}}})
        self.assertEqual(r.status, 201, r)

    def leaves_settee(self, db, doc_id):
        r = self.node.get(f"/{db}/{doc_id}?open_revs=all&revs=true&attachments=true",
                          headers={"Accept": "application/json"})
        self.assertEqual(r.status, 200, r)
        return sorted(json.dumps(x["ok"], sort_keys=True) for x in r.json if "ok" in x)

    def leaves_pouch(self, db, doc_id):
        status, body = self.pouch.call("GET", f"/{db}/{doc_id}?open_revs=all&revs=true&attachments=true")
        self.assertEqual(status, 200, body)
        return sorted(json.dumps(x["ok"], sort_keys=True) for x in body if "ok" in x)

    def strip_att_meta(self, leaves):
        """Both sides' leaves without what each store describes its own way (revpos is kept)."""
        out = []
        for text in leaves:
            doc = json.loads(text)
            for att in doc.get("_attachments", {}).values():
                for k in ("digest", "length", "stub", "encoding", "encoded_length"):
                    att.pop(k, None)
            out.append(json.dumps(doc, sort_keys=True))
        return out

    def test_settee_to_pouchdb_server_and_back(self):
        self.seed("ps1", 60)
        out = self.replicate({"source": "ps1", "target": self.pouch.url("ps1copy"), "create_target": True})
        self.assertEqual(out["history"][0]["docs_written"], 60 + 2 + 1 + 2)
        status, info = self.pouch.call("GET", "/ps1copy")
        self.assertEqual((status, info["doc_count"]), (200, 63), info)  # 60 + conflicted + att + bigatt
        for doc_id in ("p007", "conflicted", "gone", "att", "bigatt"):
            self.assertEqual(self.strip_att_meta(self.leaves_settee("ps1", doc_id)),
                             self.strip_att_meta(self.leaves_pouch("ps1copy", doc_id)), doc_id)
        # pouchdb-server keeps the checkpoint in CouchDB's format: the same request moves nothing.
        rep_id = self.replicate({"source": "ps1", "target": self.pouch.url("ps1copy"), "create_target": True,
                                 "continuous": True}, 202)["_local_id"]
        self.replicate({"replication_id": rep_id, "cancel": True})
        status, log = self.pouch.call("GET", f"/ps1copy/_local/{rep_id.split('+')[0]}")
        self.assertEqual(status, 200, log)
        self.assertEqual(log["session_id"], out["session_id"])
        self.assertEqual(self.replicate({"source": "ps1", "target": self.pouch.url("ps1copy"), "create_target": True}),
                         {"ok": True, "no_changes": True})
        # And back: pouchdb-server as the source.
        back = self.replicate({"source": self.pouch.url("ps1copy"), "target": "ps1back", "create_target": True})
        self.assertEqual(back["history"][0]["doc_write_failures"], 0)
        for doc_id in ("p007", "conflicted", "gone", "att", "bigatt"):
            self.assertEqual(self.leaves_settee("ps1", doc_id), self.leaves_settee("ps1back", doc_id), doc_id)
        self.assertEqual(self.node.get("/ps1back").json["doc_count"], 63)

    def test_continuous_to_pouchdb_server_and_its_own_replicator_reads_settee(self):
        self.assertEqual(self.node.put("/ps2").status, 201)
        rep_id = self.replicate({"source": "ps2", "target": self.pouch.url("ps2copy"), "create_target": True,
                                 "continuous": True}, 202)["_local_id"]
        self.addCleanup(lambda: self.node.post("/_replicate", {"replication_id": rep_id, "cancel": True}))
        for i in range(5):
            self.assertEqual(self.node.put(f"/ps2/live{i}", {"i": i}).status, 201)
        self.assertTrue(wait_until(lambda: self.pouch.call("GET", "/ps2copy/live4")[0] == 200))
        # pouchdb-server's replicator pulls settee's copy of it back into a database of its own.
        user = self.node.admin
        status, body = self.pouch.call("POST", "/_replicate", {
            "source": f"http://{user[0]}:{user[1]}@127.0.0.1:{self.node.port}/ps2", "target": "ps2pulled",
            "create_target": True})
        self.assertEqual(status, 200, body)
        self.assertEqual(self.pouch.call("GET", "/ps2pulled")[1]["doc_count"], 5)
        # Continuous the other way: settee's replicator waits on pouchdb-server's longpoll feed.
        back_id = self.replicate({"source": self.pouch.url("ps2copy"), "target": "ps2back", "create_target": True,
                                  "continuous": True}, 202)["_local_id"]
        self.addCleanup(lambda: self.node.post("/_replicate", {"replication_id": back_id, "cancel": True}))
        self.assertTrue(wait_until(lambda: self.node.get("/ps2back").json.get("doc_count") == 5))
        status, body = self.pouch.call("PUT", "/ps2copy/frompouch", {"made": "in pouchdb-server"})
        self.assertEqual(status, 201, body)
        self.assertTrue(wait_until(lambda: self.node.get("/ps2back/frompouch").status == 200))
        self.assertEqual(self.node.get("/ps2back/frompouch").json["made"], "in pouchdb-server")


if __name__ == "__main__":
    main()
