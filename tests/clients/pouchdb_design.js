// PouchDB against a settee database whose design document has filters and a validate_doc_update
// (issue 30): the checks of PouchDB's own suites that run against a remote CouchDB (test.changes.js
// "Changes with filter", test.replication.js filtered and denied replications, test.basics.js
// validation errors), printed as JSON for tests/integration/test_pouchdb.py to check.
//   node pouchdb_design.js <database url> <user> <password>
"use strict";
const PouchDB = require("pouchdb-core")
  .plugin(require("pouchdb-adapter-http"))
  .plugin(require("pouchdb-adapter-memory"))
  .plugin(require("pouchdb-replication"));

const [url, username, password] = process.argv.slice(2);
const auth = { auth: { username, password } };

const ids = (rows) => rows.map((r) => r.id).sort();
const failure = (e) => ({ status: e.status, name: e.name, message: e.message });
const summary = (r) => ({ ok: r.ok, docs_read: r.docs_read, docs_written: r.docs_written,
                          doc_write_failures: r.doc_write_failures });

async function caught(promise) {
  try {
    await promise;
    return null;
  } catch (e) {
    return failure(e);
  }
}

async function main() {
  const remote = new PouchDB(url, auth);
  const out = {};

  // Filters on _changes, by name and with query_params; a missing filter is the remote's 404.
  out.changes_even = ids((await remote.changes({ filter: "app/even" })).results);
  out.changes_query = ids((await remote.changes({ filter: "app/byq", query_params: { n: 3 } })).results);
  out.changes_missing = await caught(remote.changes({ filter: "app/nope" }));

  // A live feed with a filter sees the even document written after it started, not the odd one.
  out.live = await new Promise((resolve, reject) => {
    const feed = remote.changes({ live: true, since: "now", filter: "app/even" });
    const seen = [];
    feed.on("change", (c) => {
      seen.push(c.id);
      if (c.id === "e-last") {
        feed.cancel();
        resolve(seen);
      }
    });
    feed.on("error", reject);
    setTimeout(async () => {
      try {
        await remote.put({ _id: "o-21", n: 21 });
        await remote.put({ _id: "e-20", n: 20 });
        await remote.put({ _id: "e-last", n: 22 });
      } catch (e) {
        reject(e);
      }
    }, 500);
  });

  // A filtered pull brings only what the design document's filter passes.
  const local = new PouchDB("pulled", { adapter: "memory" });
  out.filtered_pull = summary(await PouchDB.replicate(remote, local, { filter: "app/even" }));
  out.pulled = ids((await local.allDocs()).rows);

  // validate_doc_update: 403 forbidden and 401 unauthorized with the function's message, one
  // refused row in _bulk_docs among written ones.
  out.put_forbidden = await caught(remote.put({ _id: "v1", bad: true }));
  out.put_unauthorized = await caught(remote.put({ _id: "v2", secret: true }));
  const bulk = await remote.bulkDocs([{ _id: "bulk-ok" }, { _id: "bulk-bad", bad: true }]);
  out.bulk = bulk.map((r) => (r.ok ? { ok: true, id: r.id } : { id: r.id, status: r.status, name: r.name,
                                                                   message: r.message }));

  // A push the target's validate_doc_update partly refuses: the refused document is a write
  // failure and a `denied` event, the others are written.
  const source = new PouchDB("pushing", { adapter: "memory" });
  await source.bulkDocs([{ _id: "push-ok", n: 1 }, { _id: "push-bad", bad: true }]);
  const denied = [];
  out.push = summary(await PouchDB.replicate(source, remote).on("denied", (e) => denied.push(e.id || e.name)));
  out.denied = denied.length;
  out.push_ok = (await remote.get("push-ok")).n;
  out.push_bad = await caught(remote.get("push-bad"));
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  process.stderr.write(String((e && e.stack) || e) + "\n" + JSON.stringify(e) + "\n");
  process.exit(1);
});
