// PouchDB against settee: replicates a settee database into an in-memory PouchDB, edits there
// (attachments by putAttachment, a deletion, a conflict), pushes to a second settee database,
// replicates settee to settee directly, then prints what PouchDB saw as JSON for the Python test
// (tests/integration/test_pouchdb.py) to compare with settee's own answers.
//   node pouchdb_replicate.js <source url> <target url> <direct url> <user> <password>
"use strict";
const PouchDB = require("pouchdb-core")
  .plugin(require("pouchdb-adapter-http"))
  .plugin(require("pouchdb-adapter-memory"))
  .plugin(require("pouchdb-replication"));

const [source, target, direct, username, password] = process.argv.slice(2);
const auth = { auth: { username, password } };

function summary(result) {
  // The figures a replication reports; `ok` false or any doc_write_failures is a failed test.
  return { ok: result.ok, docs_read: result.docs_read, docs_written: result.docs_written,
           doc_write_failures: result.doc_write_failures, errors: result.errors.map(String) };
}

async function main() {
  const remoteA = new PouchDB(source, auth);
  const remoteB = new PouchDB(target, auth);
  const remoteC = new PouchDB(direct, auth);
  const local = new PouchDB("local", { adapter: "memory" });
  const out = {};

  out.pull = summary(await PouchDB.replicate(remoteA, local));
  // What PouchDB holds now: every document with its attachments' bytes (base64) and conflicts.
  const all = await local.allDocs({ include_docs: true, attachments: true, conflicts: true });
  out.pulled = {};
  for (const row of all.rows) out.pulled[row.id] = row.doc;
  // A second pull moves nothing: the checkpoint (a _local document on both sides) holds.
  out.pull_again = summary(await PouchDB.replicate(remoteA, local));

  // Edits in PouchDB: a new attachment by name, a new document with one inline, a deletion.
  const withAtt = await local.get("att-1");
  await local.putAttachment("att-1", "from-pouch.txt", withAtt._rev,
                            Buffer.from("written by PouchDB"), "text/plain");
  await local.put({ _id: "pouch-new", n: 1,
                    _attachments: { "p.bin": { content_type: "application/octet-stream",
                                               data: Buffer.from([0, 1, 2, 255]).toString("base64") } } });
  const gone = await local.get("plain-2");
  await local.remove(gone);

  out.push = summary(await PouchDB.replicate(local, remoteB));
  out.direct = summary(await PouchDB.replicate(remoteA, remoteC));
  // Reads through PouchDB's http adapter: an attachment by name, and a document with its bytes.
  out.att_via_http = (await remoteB.getAttachment("att-1", "from-pouch.txt")).toString();
  out.doc_via_http = await remoteB.get("pouch-new", { attachments: true });
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack || e) + "\n" + JSON.stringify(e) + "\n");
  process.exit(1);
});
