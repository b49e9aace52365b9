// The indexer of one shard copy (actors/view_index) with a real shard file, a real view index file
// and the real settee-js worker: rows follow the documents' winners through edits, deletions and
// batches; design documents are not mapped; a throwing map skips only that document; the
// signature ignores what does not decide the rows.
#include "actors/view_index.hpp"

#include <doctest/doctest.h>

#include <cstdlib>

#include "js_worker.hpp"
#include "node/collation.hpp"
#include "shard_fixture.hpp"
#include "temp_dir.hpp"

using namespace settee;
using namespace settee::testing;

namespace {

std::vector<std::string> rows(view_store& idx, uint32_t view) {
  auto r = idx.scan(view_scan{view, {}, {}, false});
  REQUIRE(r);
  std::vector<std::string> out;
  for (const auto& row : *r) out.push_back(row.key_json + " " + row.id + " " + row.value_json);
  return out;
}

const json ddoc = json::parse(R"({"_id":"_design/app","views":{
    "by_type":{"map":"function(doc){ if (doc.type) emit(doc.type, doc.n); }","reduce":"_count"},
    "all":{"map":"function(doc){ emit([doc._id.length, doc._id], null); }"},
    "picky":{"map":"function(doc){ if (doc.n === 2) throw({bad: 'two'}); emit(doc.n, null); }"}},
    "filters":{"f":"function(){ return true; }"}})");

}  // namespace

TEST_CASE("view_index: rows follow the winners through edits, deletions and batches") {
  temp_dir dir;
  auto shard = open_store(dir.path + "/shards/00000000-ffffffff/db.1");
  js_pool js(worker_options(1, 2000, 64));
  auto r = write(*shard, {upd("a", R"({"type":"x","n":1})"), upd("b", R"({"type":"y","n":2})"),
                          upd("c", R"({"type":"x","n":3})"), upd("_design/app", ddoc.dump())});
  const design_views dv = views_of("db.1", false, "_design/app", r[3].rev.str(), ddoc);
  REQUIRE(dv.names == std::vector<std::string>{"by_type", "all", "picky"});
  auto idx = view_store::open(dir.path + "/views/" + dv.signature + ".view",
                              view_meta{dv.signature, "u", collation::collator_version(), 3, 0});
  REQUIRE(idx);
  REQUIRE(update_view_index(*shard, **idx, js, dv));
  CHECK(rows(**idx, 0) == std::vector<std::string>{"\"x\" a 1", "\"x\" c 3", "\"y\" b 2"});
  CHECK(rows(**idx, 1) == std::vector<std::string>{"[1,\"a\"] a null", "[1,\"b\"] b null", "[1,\"c\"] c null"});
  CHECK(rows(**idx, 2) == std::vector<std::string>{"1 a null", "3 c null"});  // b threw: skipped there only
  CHECK((*idx)->meta().seq == 4);

  // a changes type, c is deleted, d and e arrive; indexed two documents at a time.
  write(*shard, {upd("a", R"({"type":"y","n":5})", {r[0].rev}), upd("c", "{}", {r[2].rev}, true),
                 upd("d", R"({"type":"x","n":4})"), upd("e", R"({"n":6})")});
  REQUIRE(update_view_index(*shard, **idx, js, dv, 0, 2, 40));  // 2 documents or 40 bytes a batch
  CHECK(rows(**idx, 0) == std::vector<std::string>{"\"x\" d 4", "\"y\" a 5", "\"y\" b 2"});
  CHECK(rows(**idx, 2) == std::vector<std::string>{"4 d null", "5 a null", "6 e null"});
  CHECK((*idx)->meta().seq == 8);
  REQUIRE(update_view_index(*shard, **idx, js, dv));  // nothing new: nothing done
  CHECK((*idx)->meta().seq == 8);
}

TEST_CASE("view_index: the signature is the views', not the rest of the design document's") {
  json other = ddoc;
  other["filters"]["g"] = "function(){ return false; }";
  other["validate_doc_update"] = "function(){}";
  CHECK(view_signature(other) == view_signature(ddoc));
  other["views"]["all"]["map"] = "function(doc){ emit(doc._id, 1); }";
  CHECK(view_signature(other) != view_signature(ddoc));
  json reduce = ddoc;
  reduce["views"]["by_type"]["reduce"] = "_sum";
  CHECK(view_signature(reduce) != view_signature(ddoc));
}
