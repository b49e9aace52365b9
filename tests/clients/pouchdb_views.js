// PouchDB's query() (pouchdb-mapreduce) against a settee database and, as the oracle, against a
// memory PouchDB holding the same documents and design document (issue 31): every query's rows
// from both, printed as JSON for tests/integration/test_pouchdb.py to compare.
//   node pouchdb_views.js <database url> <user> <password>
"use strict";
const PouchDB = require("pouchdb-core")
  .plugin(require("pouchdb-adapter-http"))
  .plugin(require("pouchdb-adapter-memory"))
  .plugin(require("pouchdb-mapreduce"));

const [url, username, password] = process.argv.slice(2);

// Strings only where both orders agree: PouchDB collates strings by code unit, CouchDB (and
// settee) by ICU's root collator ("a" < "A" < "b" there; tests/unit/collation_test.cpp has those).
const keys = [null, false, true, -5, 0, 1.5, 2, 1e10, "", "a", "aa", "b", "ba", "z",
              [], ["a"], ["a", 1], ["b"], {}, { a: 1 }, { a: 2 }, { b: 0 }];
const docs = [];
keys.forEach((k, i) => docs.push({ _id: `k${String(i).padStart(2, "0")}`, key: k, n: i }));
for (let i = 0; i < 40; i++) docs.push({ _id: `t${String(i).padStart(2, "0")}`, type: "xyz"[i % 3], n: i });

const ddoc = {
  _id: "_design/app",
  views: {
    collate: { map: "function(doc) { if ('key' in doc) emit(doc.key, doc.n); }" },
    by_type: { map: "function(doc) { if (doc.type) emit(doc.type, doc.n); }", reduce: "_count" },
    pairs: { map: "function(doc) { if (doc.type) emit([doc.type, doc.n % 2], doc.n); }", reduce: "_sum" },
    stats: { map: "function(doc) { if (doc.type) emit(doc.type, doc.n); }", reduce: "_stats" },
    js: { map: "function(doc) { if (doc.type) emit([doc.type, doc.n], doc.n); }",
          reduce: "function(keys, values, rereduce) { return sum(values); }" },
  },
};

const queries = [
  ["collate", {}],
  ["collate", { descending: true }],
  ["collate", { startkey: "a", endkey: ["a", 1] }],
  ["collate", { startkey: ["a", 1], endkey: "a", descending: true }],
  ["collate", { startkey: 1, endkey: "b", inclusive_end: false }],
  ["collate", { key: "a" }],
  ["collate", { keys: ["z", null, { a: 2 }, "nope", 2] }],
  ["collate", { skip: 3, limit: 4 }],
  ["by_type", { reduce: false, key: "y", include_docs: true, limit: 3 }],
  ["by_type", { reduce: false, startkey: "x", startkey_docid: "t09", endkey: "y", endkey_docid: "t04" }],
  ["by_type", {}],
  ["by_type", { group: true }],
  ["by_type", { startkey: "y" }],
  ["by_type", { keys: ["z", "x"], group: true }],
  ["pairs", {}],
  ["pairs", { startkey: ["x", 1], endkey: ["y", 0] }],
  ["stats", {}],
  ["stats", { startkey: "y", descending: true }],
  ["pairs", { group_level: 1 }],
  ["pairs", { group: true, descending: true, skip: 1, limit: 3 }],
  ["stats", { group: true }],
  ["js", {}],
  ["js", { group_level: 1 }],
  ["js", { startkey: ["y"], endkey: ["y", {}] }],
];

// What both answer, without what PouchDB's own adapter reports differently by design (total_rows
// and offset on local reduce queries, the docs' _rev values differ between the two databases).
function rowsOf(result) {
  return result.rows.map((r) => {
    const row = { key: r.key, value: r.value };
    if ("id" in r) row.id = r.id;
    if (r.doc) row.doc_n = r.doc.n;
    return row;
  });
}

async function main() {
  const remote = new PouchDB(url, { auth: { username, password } });
  const local = new PouchDB("oracle", { adapter: "memory" });
  for (const db of [remote, local]) {
    await db.bulkDocs(docs.map((d) => Object.assign({}, d)));
    await db.put(Object.assign({}, ddoc));
  }
  const out = { results: [] };
  for (const [view, opts] of queries) {
    const entry = { view, opts };
    for (const [name, db] of [["settee", remote], ["pouchdb", local]]) {
      try {
        const r = await db.query(`app/${view}`, Object.assign({}, opts));
        entry[name] = rowsOf(r);
        if (name === "settee" && !opts.group && !opts.group_level && (opts.reduce === false || !("reduce" in ddoc.views[view])))
          entry.settee_total_rows = r.total_rows;
      } catch (e) {
        entry[name] = { status: e.status, name: e.name, message: e.message };
      }
    }
    out.results.push(entry);
  }
  // A query of a missing view: PouchDB's error from the remote's 404.
  try {
    await remote.query("app/nope");
  } catch (e) {
    out.missing = { status: e.status, name: e.name };
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
