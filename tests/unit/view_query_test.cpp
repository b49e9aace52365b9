#include <doctest/doctest.h>

#include "query/view_query.hpp"

using namespace settee;

namespace {

view_query from(const json& body, const query_list& params) {
  view_query q;
  REQUIRE(apply_view_options(q, body, "keys").is_ok());
  REQUIRE(apply_view_params(q, params).is_ok());
  return q;
}

std::string reason_of(const json& body, const query_list& params) {
  view_query q;
  status st = apply_view_options(q, body, "body keys");
  if (st) st = apply_view_params(q, params);
  if (st) st = validate_map_query(q);
  REQUIRE_FALSE(st.is_ok());
  return st.reason;
}

}  // namespace

TEST_CASE("view_query: the body first, then the query string, the last repeated parameter winning") {
  view_query q = from(json{{"limit", 1}, {"descending", true}, {"startkey", "b"}},
                      {{"limit", "5"}, {"limit", "7"}, {"include_docs", "TRUE"}});
  CHECK(q.limit == 7);
  CHECK(q.descending);
  CHECK(q.include_docs);  // parse_boolean lowers the case
  CHECK(*q.start_key == json("b"));
  CHECK_FALSE(q.end_key);
  q = from(json::object(), {{"key", "\"k\""}, {"endkey", "\"z\""}});
  CHECK(*q.start_key == json("k"));
  CHECK(*q.end_key == json("z"));  // a later endkey replaces what key set
  q = from(json{{"keys", json::array({"a", 1})}}, {{"stale", "ok"}});
  CHECK(q.keys->size() == 2);
  CHECK(q.update == "false");
  CHECK(q.stable);
  q = from(json::object(), {{"unknown", "x"}, {"skip", "3"}, {"start_key_doc_id", "d"}});
  CHECK(q.skip == 3);
  CHECK(*q.start_key_docid == "d");
}

TEST_CASE("view_query: CouchDB's refusals") {
  CHECK(reason_of(json::object(), {{"limit", "x"}}) == "Invalid value for integer: \"x\"");
  CHECK(reason_of(json::object(), {{"limit", "-1"}}) == "Invalid value for positive integer: \"-1\"");
  CHECK(reason_of(json{{"skip", -2}}, {}) == "Invalid value for positive integer: -2");
  CHECK(reason_of(json::object(), {{"descending", "1"}}) == "Invalid boolean parameter: \"1\"");
  CHECK(reason_of(json{{"keys", "a"}}, {}) == "body keys");
  CHECK(reason_of(json::object(), {{"keys", "{}"}}) == "`keys` parameter must be an array.");
  CHECK(reason_of(json::object(), {{"stale", "later"}}) == "Invalid value for `stale`.");
  CHECK(reason_of(json::object(), {{"update", "soon"}}) == "Invalid value for `update`.");
  CHECK(reason_of(json::object(), {{"reduce", "true"}}) == "Reduce is invalid for map-only views.");
  CHECK(reason_of(json::object(), {{"group", "true"}}) == "Invalid use of grouping on a map view.");
  CHECK(reason_of(json::object(), {{"group", "false"}, {"group_level", "1"}}) ==
        "Can't specify group=false and group_level>0 at the same time");
  CHECK(reason_of(json{{"keys", json::array({"a"})}}, {{"key", "\"a\""}}) ==
        "`keys` is incompatible with `key`, `start_key` and `end_key`");
  view_query ok = from(json{{"keys", json::array()}}, {{"key", "\"a\""}, {"group_level", "0"}});
  CHECK(validate_map_query(ok).is_ok());  // an empty `keys` and group level 0 are allowed
}
