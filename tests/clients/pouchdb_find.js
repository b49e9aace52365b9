// PouchDB's find() (pouchdb-find) against a settee database and, as the oracle, against a memory
// PouchDB holding the same documents (issue 32): each query's documents from both, without indexes
// and then with JSON indexes made by createIndex() on both (sorts by indexed fields), plus what
// createIndex(), getIndexes(), explain() and deleteIndex() answer from settee, printed as JSON for
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

// With the indexes below made on both databases.
const indexes = [
  { index: { fields: ["n"] }, ddoc: "by-n", name: "n" },
  { index: { fields: ["type", "n"] }, ddoc: "by-type", name: "type-n" },
];
const indexed = [
  { selector: { n: { $gt: 40 } }, sort: ["n"] },
  { selector: { n: { $gt: 40 } }, sort: [{ n: "desc" }], limit: 5 },
  { selector: { n: { $gte: 10, $lte: 20 } }, fields: ["_id", "n"] },
  { selector: { type: "y", n: { $gte: 10 } }, sort: ["type", "n"] },
  { selector: { type: "z", n: { $lt: 30 } }, sort: [{ type: "desc" }, { n: "desc" }], fields: ["n"] },
  { selector: { n: { $gt: 5 }, "owner.age": 22 }, sort: ["n"] },
  // $gte, not $gt: pouchdb-find skips before it drops the rows equal to a $gt bound (its bug).
  { selector: { n: { $gte: 51 } }, sort: ["n"], skip: 2, limit: 3 },
];

async function findBoth(queries, remote, local, out) {
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
    out.push(entry);
  }
}

async function main() {
  const remote = new PouchDB(url, { auth: { username, password } });
  const local = new PouchDB("oracle", { adapter: "memory" });
  for (const db of [remote, local]) await db.bulkDocs(docs.map((d) => Object.assign({}, d)));
  const out = { results: [], indexed: [] };
  await findBoth(queries, remote, local, out.results);
  out.indexes = await remote.getIndexes();
  out.explain = await remote.explain({ selector: { n: { $gt: 1 } } });
  try {
    await remote.find({ selector: { n: 1 }, sort: ["n"] });
  } catch (e) {
    out.sort_error = { status: e.status, error: e.error, reason: e.reason };
  }
  out.created = [];
  for (const ix of indexes) {
    out.created.push(await remote.createIndex(ix));
    await local.createIndex(ix);
  }
  out.created_again = await remote.createIndex(indexes[0]);
  await findBoth(indexed, remote, local, out.indexed);
  out.indexes_after = await remote.getIndexes();
  out.explain_indexed = await remote.explain({ selector: { type: "x", n: { $gt: 3 } } });
  const made = out.indexes_after.indexes.find((i) => i.name === "n");
  out.deleted = await remote.deleteIndex(made);
  out.indexes_last = await remote.getIndexes();
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
