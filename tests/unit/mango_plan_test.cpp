// The Mango planner (query/mango_plan): which index, which ranges, in which order, and when the
// ranges hold exactly the matches. Ranges are checked by what they hold: the documents whose keys
// fall in them, against the selector itself.
#include <doctest/doctest.h>

#include <algorithm>

#include "mango_fixture.hpp"
#include "node/collation.hpp"
#include "query/mango_plan.hpp"
#include "query/mango_selector.hpp"
#include "storage/json_index.hpp"

namespace settee {
namespace {

find_query query(const std::string& body) {
  auto q = parse_find(json::parse(body));
  REQUIRE_MESSAGE(q.ok(), (q.ok() ? "" : q.error().reason));
  return *q;
}

std::vector<query_plan> plans(const std::string& body, const std::vector<query_index>& indexes) {
  auto p = plan_find(query(body), indexes);
  REQUIRE_MESSAGE(p.ok(), (p.ok() ? "" : p.error().reason));
  return *p;
}

// Whether document `doc`'s key in `ix` falls in one of the plan's ranges.
bool in_ranges(const query_plan& p, const json& doc) {
  json key = json::array();
  for (const auto& [f, desc] : p.index->def.fields) {
    if (!doc.contains(f)) return false;
    key.push_back(doc[f]);
  }
  const std::string pos = json_index::position(collation::sort_key(key), "id");
  return std::any_of(p.ranges.begin(), p.ranges.end(), [&](const auto& r) { return pos >= r.first && pos < r.second; });
}

const std::vector<query_index> indexes = {index_on({"a"}, "a"), index_on({"b", "a"}, "ba"), index_on({"c"}, "c"),
                                          index_on({"d"}, "d-partial", json{{"a", {{"$gt", 10}}}})};

TEST_CASE("mango plan: ranges hold every match, and exactly the matches when covered") {
  const std::vector<std::string> selectors = {
      R"({"a": 5})",
      R"({"a": {"$gt": 3, "$lte": 9}})",
      R"({"a": {"$in": [7, 1, 7, 30]}})",
      R"({"a": {"$in": [1, 2, 3], "$gt": 1}})",
      R"({"b": "x", "a": {"$lt": 4}})",
      R"({"b": {"$in": ["x", "y"]}, "a": 2})",
      R"({"$or": [{"a": 1}, {"a": {"$gt": 20}}]})",
      R"({"$or": [{"a": {"$lt": 5}}, {"a": {"$gt": 3, "$lt": 8}}]})",
      R"({"a": {"$gt": 3}, "e": 1})",
      R"({"a": {"$gt": 9, "$lt": 3}})",
  };
  std::vector<json> docs;
  for (int a = 0; a < 35; ++a)
    for (const char* b : {"w", "x", "y", "z"}) docs.push_back(json{{"a", a}, {"b", b}, {"e", a % 2}});
  docs.push_back(json{{"a", "str"}, {"b", "x"}});
  docs.push_back(json{{"a", nullptr}, {"b", "y"}});
  // $in matches an array holding one of its values ($eq does not).
  docs.push_back(json{{"a", json::array({7, 40})}, {"b", "x"}});
  docs.push_back(json{{"a", json::array({2})}, {"b", "y"}});
  for (const auto& body : selectors) {
    CAPTURE(body);
    const auto p = plans(R"({"selector":)" + body + "}", indexes);
    REQUIRE(p.front().index);
    const find_query q = query(R"({"selector":)" + body + "}");
    for (const json& d : docs) {
      const bool match = *q.matcher.matches(d);
      const bool in = in_ranges(p.front(), d);
      CHECK_MESSAGE(!(match && !in), d.dump());                     // every match is read
      if (p.front().covered) CHECK_MESSAGE(match == in, d.dump());  // and only matches, when covered
    }
  }
}

TEST_CASE("mango plan: choices") {
  // More leading fields held by the selector wins; then fewer fields.
  CHECK(plans(R"({"selector":{"b":"x","a":1}})", indexes).front().index->name == "ba");
  CHECK(plans(R"({"selector":{"a":1}})", indexes).front().index->name == "a");
  // Every usable index is offered, the chosen first.
  auto both = plans(R"({"selector":{"b":"x","a":{"$gt":1}}})", indexes);
  CHECK(both.size() == 2);
  // A partial index only when the selector holds its filter.
  CHECK(plans(R"({"selector":{"d":1}})", indexes).front().index.has_value() == false);
  CHECK(plans(R"({"selector":{"d":1,"a":{"$gt":10}}})", indexes).size() == 2);
  // Sorts: from the index's order (a sort field need not be in the selector: CouchDB's rule), or a 400.
  auto sorted = plans(R"({"selector":{"b":"x"},"sort":[{"a":"desc"}]})", indexes);
  CHECK(sorted.front().index->name == "ba");
  CHECK(sorted.front().descending);
  auto bad = plan_find(query(R"({"selector":{"c":1},"sort":["e"]})"), indexes);
  CHECK(bad.error().code == errc::mango_no_usable_index);
  // A $or across fields: a union of indexes, later parts excluding the earlier branches.
  auto u = plans(R"({"selector":{"$or":[{"a":1},{"c":2}]}})", indexes).front();
  REQUIRE(u.parts.size() == 2);
  CHECK(u.parts[0].index->name == "a");
  CHECK(u.parts[1].index->name == "c");
  CHECK(u.parts[1].filter == json::parse(R"([{"$or":[{"a":1},{"c":2}]},[{"a":1}]])"));
  // The exclusion is a plain "not": a document without `a` that the second branch matches is the
  // second part's (a CouchDB $nor would need `a` to exist, and the document would be lost).
  auto part = mango_selector::compile_part(u.parts[1].filter);
  REQUIRE(part.ok());
  CHECK(*part->matches(json::parse(R"({"c":2})")));
  CHECK_FALSE(*part->matches(json::parse(R"({"a":1,"c":2})")));
  CHECK_FALSE(*part->matches(json::parse(R"({"c":3})")));
  // use_index: obeyed when usable; otherwise a warning, or an error without fallback.
  CHECK(plans(R"({"selector":{"b":"x","a":1},"use_index":"a"})", indexes).front().index->name == "a");
  auto fallback = plans(R"({"selector":{"e":1},"use_index":"a"})", indexes).front();
  CHECK_FALSE(fallback.index.has_value());
  CHECK(fallback.warnings.size() == 2);
  // mango_cursor:create's refusals without fallback, with its error name and texts.
  auto refused = [&](const char* body) { return plan_find(query(body), indexes).error(); };
  CHECK(refused(R"({"selector":{"e":1},"use_index":"a","allow_fallback":false})").code == errc::mango_invalid_index);
  CHECK(refused(R"({"selector":{"e":1},"use_index":"_design/a","allow_fallback":false})").reason ==
        "_design/a specified by `use_index` could not be found or it is not suitable.");
  CHECK(refused(R"({"selector":{"e":1},"use_index":["a","b"],"allow_fallback":false})").reason ==
        "_design/a, b specified by `use_index` could not be found or it is not suitable.");
  CHECK(refused(R"({"selector":{"e":1},"allow_fallback":false})").reason ==
        "You must specify an index with the `use_index` parameter.");
  CHECK(plans(R"({"selector":{"a":1},"allow_fallback":false})", indexes).front().index->name == "a");
  CHECK(plans(R"({"selector":{"e":1},"use_index":["a","x"]})", indexes).front().warnings[0] ==
        "_design/a, x was not used because it is not a valid index for this query.");
  // Why the others were not used.
  auto why = plans(R"({"selector":{"a":1}})", indexes).front();
  CHECK(why.rejected.size() == 3);
}

}  // namespace
}  // namespace settee
