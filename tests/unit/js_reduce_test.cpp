// js_reduce against the real settee-js worker: chunks and rereduce rounds, CouchDB's reduce_limit
// in its three modes, a function that throws, a function that never returns.
#include <doctest/doctest.h>

#include "actors/js_reduce.hpp"
#include "actors/view_index.hpp"
#include "js_worker.hpp"

using namespace settee;

namespace {

js_pool make_pool() {
  return js_pool(settee::testing::worker_options(1, 500, 32));
}

design_views views_for(const json& views) {
  json ddoc = {{"_id", "_design/r"}, {"views", views}};
  return views_of("db.1", false, "_design/r", "1-a", ddoc);
}

// `n` rows with keys k0.., the same value, ids d0..
std::vector<view_row> rows_of(size_t n, const std::string& value = "1") {
  std::vector<view_row> rows;
  for (size_t i = 0; i < n; ++i) rows.push_back({"d" + std::to_string(i), "\"k" + std::to_string(i) + "\"", value});
  return rows;
}

std::vector<const view_row*> refs(const std::vector<view_row>& rows, size_t from = 0, size_t to = SIZE_MAX) {
  std::vector<const view_row*> out;
  for (size_t i = from; i < rows.size() && i < to; ++i) out.push_back(&rows[i]);
  return out;
}

}  // namespace

TEST_CASE("js_reduce: chunks reduced, then re-reduced in rounds until one value is left") {
  auto pool = make_pool();
  // Counts the rows and how deep the rereduce went; keys arrive as [key, id].
  const design_views dv = views_for(
      {{"v",
        {{"map", "function(d){}"},
         {"reduce",
          "function(keys, values, rereduce) {"
          "  if (rereduce) return {n: sum(values.map(function(x){return x.n;})),"
          "                        depth: 1 + Math.max.apply(null, values.map(function(x){return x.depth;}))};"
          "  return {n: values.length, depth: 0, first: keys[0][1]}; }"}}}});
  const auto rows = rows_of(9);
  js_reduce_options o;
  o.chunk_rows = 2;  // 9 rows: 5 chunks, then 3 values, then 2, then 1
  auto r = js_reduce_groups(pool, dv, "v", {refs(rows), refs(rows, 0, 2), refs(rows, 4, 5)}, o);
  REQUIRE(r);
  REQUIRE(r->size() == 3);
  CHECK((*r)[0]["n"] == 9);
  CHECK((*r)[0]["depth"] == 3);
  CHECK((*r)[1] == json{{"n", 2}, {"depth", 0}, {"first", "d0"}});  // one chunk: no rereduce
  CHECK((*r)[2] == json{{"n", 1}, {"depth", 0}, {"first", "d4"}});
  // The defaults take the whole group at once.
  r = js_reduce_groups(pool, dv, "v", {refs(rows)});
  REQUIRE(r);
  CHECK((*r)[0] == json{{"n", 9}, {"depth", 0}, {"first", "d0"}});
}

TEST_CASE("js_reduce: reduce_limit on, log and off; a throw is null; a loop fails the query") {
  auto pool = make_pool();
  const design_views dv = views_for({{"keep", {{"map", "function(d){}"}, {"reduce", "function(k, v) { return v; }"}}},
                                     {"bad", {{"map", "function(d){}"}, {"reduce", "function(k, v) { throw 'no'; }"}}},
                                     {"spin", {{"map", "function(d){}"}, {"reduce", "function() { while(1){} }"}}}});
  const auto rows = rows_of(60, "\"" + std::string(100, 'x') + "\"");  // ~6 KB out of ~7 KB in
  js_reduce_options o;
  auto r = js_reduce_groups(pool, dv, "keep", {refs(rows), refs(rows, 0, 1)}, o);
  REQUIRE(r);
  REQUIRE((*r)[0].contains("reduce_overflow_error"));
  CHECK((*r)[0]["reduce_overflow_error"].get<std::string>().rfind(
            "Reduce output must shrink more rapidly: input size: ", 0) == 0);
  CHECK((*r)[1] == json::array({std::string(100, 'x')}));  // one row cannot shrink: never flagged
  for (reduce_limit mode : {reduce_limit::log, reduce_limit::off}) {
    o.limit = mode;
    r = js_reduce_groups(pool, dv, "keep", {refs(rows)}, o);
    REQUIRE(r);
    CHECK((*r)[0].size() == 60);
  }
  CHECK(reduce_limit_of("false") == reduce_limit::off);
  CHECK(reduce_limit_of("log") == reduce_limit::log);
  CHECK(reduce_limit_of("true") == reduce_limit::on);

  r = js_reduce_groups(pool, dv, "bad", {refs(rows, 0, 3)});
  REQUIRE(r);
  CHECK((*r)[0].is_null());
  auto spin = js_reduce_groups(pool, dv, "spin", {refs(rows, 0, 3)});
  REQUIRE(!spin);
  CHECK(spin.error().code == errc::timeout);
  // The pool goes on after the killed worker.
  r = js_reduce_groups(pool, dv, "keep", {refs(rows, 0, 2)});
  REQUIRE(r);
  CHECK((*r)[0].size() == 2);
}
