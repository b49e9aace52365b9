// CouchDB's built-in reduces (actors/view_reduce), case by case from couch_query_servers.
#include "actors/view_reduce.hpp"

#include <doctest/doctest.h>

using namespace settee;

namespace {

json reduce(builtin_reduce how, const std::vector<json>& values, std::vector<json> keys = {}) {
  if (keys.empty()) keys.assign(values.size(), nullptr);
  std::vector<std::pair<const json*, const json*>> rows;
  for (size_t i = 0; i < values.size(); ++i) rows.emplace_back(&keys[i], &values[i]);
  auto r = reduce_rows(how, rows);
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().reason));
  return *r;
}

std::vector<json> parse_all(const std::vector<const char*>& texts) {
  std::vector<json> out;
  for (const char* t : texts) out.push_back(json::parse(t));
  return out;
}

}  // namespace

TEST_CASE("builtin reduces: names, CouchDB's prefix match, unknown ones refused") {
  CHECK(*builtin_of("_count") == builtin_reduce::count);
  CHECK(*builtin_of("_sum") == builtin_reduce::sum);
  CHECK(*builtin_of("_sum\n") == builtin_reduce::sum);
  CHECK(*builtin_of("_stats") == builtin_reduce::stats);
  CHECK(*builtin_of("_approx_count_distinct") == builtin_reduce::approx_count_distinct);
  CHECK(*builtin_of("function(k, v) { return sum(v); }") == builtin_reduce::none);
  CHECK_FALSE(builtin_of("_median").ok());
}

TEST_CASE("_count and _approx_count_distinct") {
  CHECK(reduce(builtin_reduce::count, parse_all({"1", "\"x\"", "null"})) == json(3));
  CHECK(reduce(builtin_reduce::count, {}) == json(0));
  CHECK(reduce(builtin_reduce::approx_count_distinct, parse_all({"1", "1", "1"}),
               parse_all({"\"a\"", "\"b\"", "\"a\""})) == json(2));
  CHECK(reduce(builtin_reduce::approx_count_distinct, parse_all({"1", "1"}), parse_all({"1", "1.0"})) == json(1));
}

TEST_CASE("_sum: numbers, arrays, objects, and CouchDB's error value") {
  CHECK(reduce(builtin_reduce::sum, parse_all({"1", "2", "3"})).dump() == "6");
  CHECK(reduce(builtin_reduce::sum, parse_all({"1", "2.5"})).dump() == "3.5");
  CHECK(reduce(builtin_reduce::sum, {}).dump() == "0");
  CHECK(reduce(builtin_reduce::sum, parse_all({"[1,2]", "[10,20,30]"})).dump() == "[11,22,30]");
  CHECK(reduce(builtin_reduce::sum, parse_all({"5", "[1,2]"})).dump() == "[6,2]");  // a number is [number]
  CHECK(reduce(builtin_reduce::sum, parse_all({"{\"b\":1,\"a\":{\"x\":2}}", "{\"a\":{\"x\":3,\"y\":1},\"c\":[1]}"}))
            .dump() == R"({"a":{"x":5,"y":1},"b":1,"c":[1]})");
  json err = reduce(builtin_reduce::sum, parse_all({"1", "\"x\"", "2"}));
  CHECK(err["error"] == "builtin_reduce_error");
  CHECK(err["caused_by"] == "x");
  CHECK(err["reason"].get<std::string>().rfind("The _sum function requires that map values be numbers", 0) == 0);
  CHECK(reduce(builtin_reduce::sum, parse_all({"{\"a\":1}", "2"}))["caused_by"] == 2);  // objects do not mix
}

TEST_CASE("_stats: integers stay integers, arrays element by element, errors") {
  CHECK(reduce(builtin_reduce::stats, parse_all({"4", "2", "6"})).dump() ==
        R"({"sum":12,"count":3,"min":2,"max":6,"sumsqr":56})");
  CHECK(reduce(builtin_reduce::stats, parse_all({"1.5", "2"})).dump() ==
        R"({"sum":3.5,"count":2,"min":1.5,"max":2.0,"sumsqr":6.25})");
  CHECK(reduce(builtin_reduce::stats, parse_all({"[1,10]", "[3,30]"})).dump() ==
        R"([{"sum":4,"count":2,"min":1,"max":3,"sumsqr":10},{"sum":40,"count":2,"min":10,"max":30,"sumsqr":1000}])");
  std::vector<json> bad = parse_all({"1", "\"x\""}), keys(2);
  std::vector<std::pair<const json*, const json*>> rows{{&keys[0], &bad[0]}, {&keys[1], &bad[1]}};
  auto r = reduce_rows(builtin_reduce::stats, rows);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == errc::builtin_reduce_error);
  CHECK(r.error().reason ==
        "The _stats function requires that map values be numbers or arrays of numbers, not '\"x\"'");
  // Arrays of different lengths are an error, as CouchDB's lists:zipwith (issue 51 point 0).
  std::vector<json> uneven = parse_all({"[1,2]", "[3]"});
  std::vector<std::pair<const json*, const json*>> urows{{&keys[0], &uneven[0]}, {&keys[1], &uneven[1]}};
  auto u = reduce_rows(builtin_reduce::stats, urows);
  REQUIRE_FALSE(u.ok());
  CHECK(u.error().reason == "The _stats function requires that map value arrays be of the same length, not '[3]'");
}
