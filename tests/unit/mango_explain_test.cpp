// _explain's CouchDB analysis (query/mango_explain): index_candidates, selector_hints and
// covering. Each expectation is worked by hand from mango_cursor:extract_candidate_indexes,
// mango_idx_view:is_usable/covers and mango_selector:fields over the same indexes and selector.
#include <doctest/doctest.h>

#include "mango_fixture.hpp"
#include "query/mango_explain.hpp"
#include "query/mango_plan.hpp"

namespace settee {
namespace {

struct explained {
  query_plan plan;
  json candidates;
};

explained explain(const std::string& body, const std::vector<query_index>& indexes) {
  auto q = parse_find(json::parse(body));
  REQUIRE(q.ok());
  auto p = plan_find(*q, indexes);
  REQUIRE_MESSAGE(p.ok(), (p.ok() ? "" : p.error().reason));
  return {p->front(), index_candidates(*q, indexes, p->front())};
}

// name -> [usable, reason, ranking, covering] of each candidate, in the order listed.
json table(const json& candidates) {
  json out = json::array();
  for (const json& c : candidates) {
    const json& a = c["analysis"];
    out.push_back(json::array({c["index"]["name"], a["usable"], a["reasons"][0]["name"], a["ranking"], a["covering"]}));
  }
  return out;
}

const std::vector<query_index> indexes = {index_on({"x"}, "ix"), index_on({"x", "y"}, "ixy"), index_on({"z"}, "iz")};

TEST_CASE("a JSON index chosen: the special index is of an unfavored type, the others unusable") {
  auto e = explain(R"({"selector":{"x":{"$gt":0}}})", indexes);
  REQUIRE(e.plan.index->name == "ix");
  CHECK(table(e.candidates) == json::parse(R"([["iz",false,"field_mismatch",2,false],
    ["ixy",false,"field_mismatch",2,false],["_all_docs",true,"unfavored_type",1,null]])"));
}

TEST_CASE("usable indexes not chosen: less overlap, then more fields, then the name") {
  auto e = explain(R"({"selector":{"x":1,"y":2}})", indexes);
  REQUIRE(e.plan.index->name == "ixy");
  CHECK(table(e.candidates) == json::parse(R"([["iz",false,"field_mismatch",3,false],
    ["ix",true,"less_overlap",1,false],["_all_docs",true,"unfavored_type",2,null]])"));
  auto ties =
      explain(R"({"selector":{"x":1}})", {index_on({"x"}, "a"), index_on({"x"}, "b"), index_on({"x", "y"}, "c")});
  REQUIRE(ties.plan.index->name == "a");
  // c is unusable (y not required); b ties with a and comes after it by name.
  CHECK(table(ties.candidates) == json::parse(R"([["c",false,"field_mismatch",3,false],
    ["b",true,"alphabetically_comes_after",1,false],["_all_docs",true,"unfavored_type",2,null]])"));
  // b's _id needs no condition (every document has one): as close as a, with more fields.
  auto wider = explain(R"({"selector":{"x":1}})", {index_on({"x"}, "a"), index_on({"x", "_id"}, "b")});
  REQUIRE(wider.plan.index->name == "a");
  CHECK(table(wider.candidates)[0] == json::parse(R"(["b",true,"too_many_fields",1,false])"));
}

TEST_CASE("use_index: the other usable indexes were excluded by the user") {
  auto e = explain(R"({"selector":{"x":1,"y":2},"use_index":"ix"})", indexes);
  REQUIRE(e.plan.index->name == "ix");
  CHECK(table(e.candidates) == json::parse(R"([["iz",false,"field_mismatch",2,false],
    ["ixy",true,"excluded_by_user",1,false],["_all_docs",true,"excluded_by_user",1,null]])"));
}

TEST_CASE("the special index chosen, a partial index, and a sort the special index cannot give") {
  std::vector<query_index> with_partial = indexes;
  with_partial.push_back(index_on({"x"}, "ip", json::parse(R"({"x":{"$gt":5}})")));
  auto none = explain(R"({"selector":{"w":1}})", with_partial);
  REQUIRE_FALSE(none.plan.index.has_value());
  CHECK(table(none.candidates) == json::parse(R"([["iz",false,"field_mismatch",1,false],
    ["ixy",false,"field_mismatch",1,false],["ix",false,"field_mismatch",1,false],
    ["ip",false,"is_partial",2,false]])"));
  // The special index sorts by _id only, and (CouchDB's is_usable) only when the selector ranges _id.
  auto sorted = explain(R"({"selector":{"z":{"$gt":0}},"sort":["z"]})", indexes);
  REQUIRE(sorted.plan.index->name == "iz");
  CHECK(table(sorted.candidates) == json::parse(R"([["ixy",false,"field_mismatch",1,false],
    ["ix",false,"field_mismatch",1,false],["_all_docs",false,"field_mismatch",1,null]])"));
  auto by_id = explain(R"({"selector":{"z":{"$gt":0},"_id":{"$gt":"a"}},"sort":["z"]})", indexes);
  CHECK(table(by_id.candidates)[2] == json::parse(R"(["_all_docs",false,"sort_order_mismatch",1,null])"));
}

TEST_CASE("covering: the fields asked for all among the index's and _id") {
  auto e = explain(R"({"selector":{"x":1,"y":2},"fields":["_id","x"]})", indexes);
  CHECK(table(e.candidates)[1] == json::parse(R"(["ix",true,"less_overlap",1,true])"));
  auto q = parse_find(json::parse(R"({"selector":{"x":1,"y":2},"fields":["_id","x"]})"));
  CHECK(plan_covers(*q, e.plan));  // ixy holds x, y (the selector's) and _id
  auto all = parse_find(json::parse(R"({"selector":{"x":1,"y":2}})"));
  CHECK_FALSE(plan_covers(*all, e.plan));
  auto more = parse_find(json::parse(R"({"selector":{"x":1,"y":2},"fields":["w"]})"));
  CHECK_FALSE(plan_covers(*more, e.plan));
}

TEST_CASE("selector hints: what a JSON index could serve and what it could not") {
  auto hints = [](const char* sel) { return selector_hints(normalize_selector(json::parse(sel)))[0]; };
  CHECK(hints(R"({"x":{"$gt":0},"$or":[{"a":1},{"b":2}],"$not":{"c":1}})") ==
        json::parse(R"({"type":"json","indexable_fields":["x"],"unindexable_fields":["a","b","c"]})"));
  CHECK(hints(R"({"b":{"$in":[1]},"a":{"$exists":true},"t":{"$beginsWith":"x"}})") ==
        json::parse(R"({"type":"json","indexable_fields":["a","t"],"unindexable_fields":["b"]})"));
  CHECK(hints("{}") == json::parse(R"({"type":"json","indexable_fields":[],"unindexable_fields":[]})"));
  CHECK(hints(R"({"a":{"b":{"$lt":1}}})")["indexable_fields"] == json::parse(R"(["a.b"])"));
}

}  // namespace
}  // namespace settee
