// PouchDB's find() (pouchdb-find) against a settee database and, as the oracle, against a memory
// PouchDB holding the same documents (issue 32): each query's documents from both, plus what
// getIndexes() and explain() answer from settee, printed as JSON for
// tests/integration/test_pouchdb.py to compare.
//   node pouchdb_find.js <database url> <user> <password>
"use strict";
const PouchDB = require("pouchdb-core")
  .plugin(require("pouchdb-adapter-http"))
  .plugin(require("pouchdb-adapter-memory"))
  .plugin(require("pouchdb-find"));

const [url, username, password] = process.argv.slice(2);

// Strings only in lower case, where PouchDB's code-unit order and ICU's agree.
const docs = [];
for (let i = 0; i < 60; i++) {
  docs.push({ _id: `d${String(i).padStart(2, "0")}`, n: i, type: "xyz"[i % 3], tags: [`t${i % 4}`, "all"],
              owner: { name: `user${i % 5}`, age: 20 + (i % 7) } });
}

const queries = [
  { selector: { n: { $gte: 10, $lt: 15 } } },
  { selector: { type: "y", n: { $lt: 20 } }, fields: ["_id", "n"] },
  { selector: { "owner.name": "user1" }, limit: 4 },
  { selector: { "owner.name": "user1" }, skip: 2, limit: 3 },
  { selector: { tags: { $all: ["t3", "all"] } } },
  { selector: { tags: { $elemMatch: { $eq: "t2" } } }, fields: ["_id"] },
  { selector: { $or: [{ n: 3 }, { n: { $gt: 57 } }] } },
  { selector: { n: { $in: [1, 2, 300] } } },
  { selector: { n: { $nin: [1, 2] }, type: "x", "owner.age": { $gt: 24 } } },
  { selector: { _id: { $regex: "^d0[12]" } } },
  { selector: { n: { $mod: [20, 1] } } },
  { selector: { owner: { $exists: true }, n: { $lt: 3 } }, fields: ["owner.name"] },
  { selector: { type: { $type: "string" }, n: { $gt: 55 } } },
  { selector: { n: { $gt: 50 } }, sort: [{ _id: "desc" }] },
  { selector: { n: { $lt: 5 } }, sort: ["_id"] },
  { selector: { type: "z", n: { $ne: 50, $gt: 45 } } },
];

async function main() {
  const remote = new PouchDB(url, { auth: { username, password } });
  const local = new PouchDB("oracle", { adapter: "memory" });
  for (const db of [remote, local]) await db.bulkDocs(docs.map((d) => Object.assign({}, d)));
  const out = { results: [] };
  for (const query of queries) {
    const entry = { query };
    for (const [name, db] of [["settee", remote], ["pouchdb", local]]) {
      try {
        const r = await db.find(JSON.parse(JSON.stringify(query)));
        entry[name] = r.docs.map((d) => { const c = Object.assign({}, d); delete c._rev; return c; });
        if (name === "settee") entry.warning = r.warning;
      } catch (e) {
        entry[name] = { status: e.status, name: e.name, message: e.message };
      }
    }
    out.results.push(entry);
  }
  out.indexes = await remote.getIndexes();
  out.explain = await remote.explain({ selector: { n: { $gt: 1 } } });
  try {
    await remote.find({ selector: { n: 1 }, sort: ["n"] });
  } catch (e) {
    out.sort_error = { status: e.status, error: e.error, reason: e.reason };
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
