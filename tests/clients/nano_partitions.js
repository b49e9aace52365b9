// nano (Apache CouchDB's Node.js client) against settee (issue 35): a partitioned database made
// with db.create(name, {partitioned: true}), documents in two partitions, then what nano's
// partition calls answer (partitionInfo, partitionedList, partitionedFind, partitionedView), a
// global view query of a partitioned view (its error), and a purge through nano.request, printed
// as one JSON object for tests/integration/test_partitioned.py to check.
//   node nano_partitions.js <server url> <user> <password> <database>
"use strict";
const Nano = require("nano");

const [url, username, password, name] = process.argv.slice(2);

async function main() {
  const nano = Nano({ url, requestDefaults: { auth: { username, password } } });
  const out = {};
  out.create = await nano.db.create(name, { partitioned: true });
  const db = nano.use(name);
  out.props = (await db.info()).props;
  const docs = [];
  for (let i = 0; i < 6; i++) docs.push({ _id: `red:${i}`, n: i, colour: "red" });
  for (let i = 0; i < 4; i++) docs.push({ _id: `blue:${i}`, n: 10 + i, colour: "blue" });
  const written = await db.bulk({ docs });
  out.written = written.filter((r) => r.ok).length;
  await db.insert({ views: { by_n: { map: "function(d){ emit(d.n, 1); }", reduce: "_count" } } }, "_design/parts");
  const info = await db.partitionInfo("red");
  out.info = { partition: info.partition, doc_count: info.doc_count, doc_del_count: info.doc_del_count };
  out.list = (await db.partitionedList("blue", { include_docs: true })).rows.map((r) => [r.id, r.doc.n]);
  out.find = (await db.partitionedFind("red", { selector: { n: { $gte: 3 } } })).docs.map((d) => d._id);
  const view = await db.partitionedView("red", "parts", "by_n", { reduce: false, startkey: 1, endkey: 4 });
  out.view = { total_rows: view.total_rows, offset: view.offset, keys: view.rows.map((r) => r.key) };
  out.view_count = (await db.partitionedView("blue", "parts", "by_n", {})).rows[0].value;
  try {
    await db.view("parts", "by_n");
    out.global_view = "answered";
  } catch (e) {
    out.global_view = { statusCode: e.statusCode, error: e.error, reason: e.reason };
  }
  const red0 = await db.get("red:0");
  out.purge = await nano.request({ db: name, method: "post", path: "_purge", body: { "red:0": [red0._rev] } });
  try {
    await db.get("red:0");
    out.after_purge = "found";
  } catch (e) {
    out.after_purge = e.statusCode;
  }
  out.info_after = (await db.partitionInfo("red")).doc_count;
  out.purged_infos = (await nano.request({ db: name, path: "_purged_infos" })).purged_infos.map((p) => p.id);
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
