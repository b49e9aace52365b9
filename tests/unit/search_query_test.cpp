// A full-text query as it travels (search/search_query): Nouveau's parameters and their errors,
// a copy's request and answer through the node protocol's text, the copies' answers merged, and
// the bookmark.
#include "search/search_query.hpp"

#include <doctest/doctest.h>

using namespace settee;

TEST_CASE("search_query: Nouveau's parameters from a query string and from a body") {
  auto p = nouveau_params({{"q", "title:fox"},
                           {"limit", "5"},
                           {"sort", "\"-year\""},
                           {"counts", "[\"genre\"]"},
                           {"ranges", R"({"year":[{"label":"old","max":1950,"max_inclusive":false}]})"},
                           {"top_n", "3"},
                           {"update", "false"},
                           {"include_docs", "true"}},
                          nullptr);
  REQUIRE(p);
  CHECK(p->query.query == "title:fox");
  CHECK(p->query.limit == 5);
  CHECK(p->query.sort == std::vector<std::string>{"-year"});
  CHECK(p->query.counts == std::vector<std::string>{"genre"});
  REQUIRE(p->query.ranges["year"].size() == 1);
  CHECK(p->query.ranges["year"][0].max == 1950);
  CHECK_FALSE(p->query.ranges["year"][0].max_inclusive);
  CHECK(std::isinf(p->query.ranges["year"][0].min));
  CHECK(p->query.top_n == 3);
  CHECK_FALSE(p->update);
  CHECK(p->include_docs);
  CHECK(nouveau_params({{"q", "x"}, {"sort", "-year"}}, nullptr)->query.sort == std::vector<std::string>{"-year"});
  const json body = json::parse(R"({"q":"fox","limit":2,"sort":["a","-b"],"include_docs":true})");
  auto b = nouveau_params({}, &body);
  REQUIRE(b);
  CHECK(b->query.limit == 2);
  CHECK(b->query.sort == std::vector<std::string>{"a", "-b"});
  struct bad_case {
    std::map<std::string, std::string> qs;
    const char* body;
    errc code;
    const char* reason;
  };
  const bad_case bad[] = {
      {{}, nullptr, errc::query_parse_error, "q parameter is mandatory"},
      {{{"q", "x"}, {"limit", "abc"}}, nullptr, errc::query_parse_error, "limit parameter must be an integer"},
      {{{"q", "x"}, {"limit", "0"}}, nullptr, errc::query_parse_error, "limit parameter must be greater than zero"},
      {{{"q", "x"}, {"top_n", "1001"}}, nullptr, errc::bad_request, "topN must be less than or equal to 1000"},
      {{{"q", "x"}, {"sort", "[1]"}}, nullptr, errc::query_parse_error, "all items in sort parameter must be strings"},
      {{{"q", "x"}, {"counts", "{}"}}, nullptr, errc::query_parse_error, "counts parameter must be a list of strings"},
      {{{"q", "x"}, {"ranges", "{\"a\":1}"}},
       nullptr,
       errc::query_parse_error,
       "range values must be lists of objects"},
      {{{"q", "x"}, {"update", "maybe"}}, nullptr, errc::query_parse_error, "Invalid value for update: \"maybe\""},
      {{{"q", "x"}, {"bookmark", "!!"}}, nullptr, errc::bad_request, "Invalid bookmark"},
      {{}, R"({"limit":3})", errc::query_parse_error, "q parameter is mandatory"},
      {{}, R"({"q":12})", errc::query_parse_error, "Invalid value for query: 12"},
      {{}, R"({"q":"x","include_docs":"yes"})", errc::query_parse_error, "Invalid value for include_docs: \"yes\""},
  };
  for (const bad_case& c : bad) {
    CAPTURE(c.reason);
    const json j = c.body ? json::parse(c.body) : json();
    auto r = nouveau_params(c.qs, c.body ? &j : nullptr);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == c.code);
    CHECK(r.error().reason == c.reason);
  }
}

TEST_CASE("search_query: a copy's request and answer through the node protocol, merged, bookmarked") {
  search_copy_request r;
  r.what = search_copy_request::phase::search;
  r.ddoc_id = "_design/d";
  r.index = "books";
  r.signature = "abc";
  r.query.query = "fox";
  r.query.sort = {"-year"};
  r.query.after = text_order{{order_value::kind::number, 1990, ""}, {order_value::kind::text, 0, "b"}};
  r.query.ranges["year"] = {{"all", -1.0 / 0.0, 1.0 / 0.0, true, true}};
  text_stats s;
  s.docs = 10;
  s.freqs["default\0fox"] = 3;
  r.stats = s;
  auto back = decode_request(encode_request(r));
  REQUIRE(back);
  CHECK(back->query.query == "fox");
  CHECK(back->query.sort == r.query.sort);
  REQUIRE(back->query.after);
  CHECK(compare_orders(r.query.sort, *back->query.after, *r.query.after) == 0);
  CHECK(std::isinf(back->query.ranges["year"][0].min));
  REQUIRE(back->stats);
  CHECK(back->stats->freqs == s.freqs);
  CHECK_FALSE(decode_request("[]"));
  // Two copies' pages merged: by order, cut at the limit, totals and counts summed.
  auto page = [](std::vector<std::pair<std::string, double>> hits, uint64_t total,
                 std::map<std::string, uint64_t> genre) {
    search_copy_page p;
    p.page.total_hits = total;
    for (auto& [id, score] : hits)
      p.page.hits.push_back(
          text_hit{id, {{order_value::kind::number, score, ""}, {order_value::kind::text, 0, id}}, {}, {}});
    p.page.counts["genre"] = genre;
    return p;
  };
  std::vector<search_copy_page> pages{page({{"a", 3}, {"c", 1}}, 5, {{"x", 2}, {"y", 1}}),
                                      page({{"b", 3}, {"d", 2}}, 4, {{"x", 1}, {"z", 7}})};
  for (auto& p : pages) {
    auto again = decode_page(encode_page(p));
    REQUIRE(again);
    CHECK(again->page.hits.size() == p.page.hits.size());
    p = *again;
  }
  text_query q;
  q.limit = 3;
  q.top_n = 2;
  text_page m = merge_pages(pages, q);
  CHECK(m.total_hits == 9);
  REQUIRE(m.hits.size() == 3);
  CHECK(m.hits[0].id == "a");  // equal scores: by id
  CHECK(m.hits[1].id == "b");
  CHECK(m.hits[2].id == "d");
  CHECK(m.counts["genre"] == std::map<std::string, uint64_t>{{"x", 3}, {"z", 7}});
  // No match anywhere: the field counted keeps its (empty) entry, as one copy's answer has it.
  std::vector<search_copy_page> none{page({}, 0, {}), page({}, 0, {})};
  for (auto& p : none) p = decode_page(encode_page(p)).value();
  const text_page empty = merge_pages(none, q);
  REQUIRE(empty.counts.count("genre") == 1);
  CHECK(empty.counts.at("genre").empty());
  // The bookmark after the last hit, and back; Nouveau's order shape.
  const json bm = pack_bookmark(m.hits.back().order, {});
  REQUIRE(bm.is_string());
  auto after = unpack_bookmark(bm.get<std::string>());
  REQUIRE(after);
  CHECK(compare_orders({}, *after, m.hits.back().order) == 0);
  CHECK(order_json(m.hits[0].order, {}) ==
        json::parse(R"([{"@type":"float","value":3.0},{"@type":"string","value":"a"}])"));
  CHECK(pack_bookmark(std::nullopt, {}).is_null());
}

TEST_CASE("search_query: Clouseau's parameters") {
  auto p = clouseau_params({{"query", "fox"},
                            {"sort", "[\"-price<number>\",\"name<string>\"]"},
                            {"limit", "7"},
                            {"stale", "ok"},
                            {"ranges", R"({"price":{"cheap":"[0 TO 10}","dear":"{10 TO Infinity]"}})"},
                            {"drilldown", R"(["cat","a","b"])"},
                            {"drilldown", R"(["sale","true"])"},
                            {"include_fields", "[\"name\"]"},
                            {"group_field", "cat"},
                            {"group_limit", "3"}},
                           nullptr);
  REQUIRE(p);
  CHECK(p->query.query == "fox");
  CHECK(p->query.sort == std::vector<std::string>{"-price", "name"});
  CHECK(p->query.limit == 7);
  CHECK_FALSE(p->update);
  auto& cheap = p->query.ranges["price"][0];
  CHECK((cheap.label == "cheap" && cheap.min == 0 && cheap.max == 10 && cheap.min_inclusive && !cheap.max_inclusive));
  CHECK(std::isinf(p->query.ranges["price"][1].max));
  CHECK(p->query.drilldown == std::vector<std::vector<std::string>>{{"cat", "a", "b"}, {"sale", "true"}});
  CHECK(*p->include_fields == std::vector<std::string>{"name"});
  CHECK((p->group_field == "cat" && p->group_limit == 3 && !p->group_by));
  const json body = json::parse(R"({"q":"x","drilldown":[["a","1"],["b","2"]],"limit":0})");
  auto b = clouseau_params({}, &body);
  REQUIRE(b);
  CHECK(b->query.drilldown.size() == 2);
  CHECK(b->query.limit == 0);
  const std::pair<std::vector<std::pair<std::string, std::string>>, const char*> bad[] = {
      {{}, "Query must include a 'q' or 'query' argument"},
      {{{"q", "x"}, {"limit", "201"}}, "Value for limit is too large, must not exceed 200"},
      {{{"q", "x"}, {"stale", "later"}}, "stale only available as stale=ok"},
      {{{"q", "x"}, {"ranges", R"({"p":{"a":"0 TO 1"}})"}}, "invalid range for a: \"0 TO 1\""},
      {{{"q", "x"}, {"highlight_size", "0"}}, "highlight_size must be greater than zero"},
  };
  for (const auto& [qs, reason] : bad) {
    CAPTURE(reason);
    auto r = clouseau_params(qs, nullptr);
    REQUIRE_FALSE(r);
    CHECK(r.error().reason == reason);
  }
  CHECK(clouseau_params({{"q", "x"}, {"counts", "[1"}}, nullptr).error().reason == "invalid UTF-8 JSON");
}
