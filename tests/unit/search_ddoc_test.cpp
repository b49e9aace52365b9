// Search index definitions (search/search_ddoc): Nouveau's `nouveau` and Clouseau's `indexes`
// members as CouchDB reads them (nouveau_util and dreyfus_index design_doc_to_index): defaults,
// CouchDB's errors, and a signature that changes with what decides the terms and nothing else.
#include "search/search_ddoc.hpp"

#include <doctest/doctest.h>

using namespace settee;

TEST_CASE("search_ddoc: nouveau and clouseau definitions, their defaults and CouchDB's errors") {
  const json ddoc = json::parse(R"({
    "_id": "_design/s",
    "nouveau": {
      "books": {"index": "function(doc) { index('text', 'title', doc.title); }", "default_analyzer": "english",
                "field_analyzers": {"isbn": "keyword", "author": "simple"}},
      "plain": {"index": "function(doc) {}"},
      "nofunction": {"default_analyzer": "standard"},
      "badanalyzer": {"index": "function(doc) {}", "default_analyzer": 5}
    },
    "indexes": {
      "cl": {"index": "function(doc) { index('default', doc.body); }",
             "analyzer": {"name": "perfield", "default": "english", "fields": {"tag": "keyword"}}},
      "bare": {"index": "function(doc) {}"}
    }
  })");
  auto books = search_index_of(search_api::nouveau, "_design/s", ddoc, "books");
  REQUIRE(books);
  CHECK(books->ddoc_id == "_design/s");
  CHECK(books->default_analyzer == "english");
  CHECK(books->field_analyzers == std::map<std::string, std::string>{{"author", "simple"}, {"isbn", "keyword"}});
  CHECK(books->lucene_version == 9);
  CHECK(books->signature.size() == 64);
  auto plain = search_index_of(search_api::nouveau, "_design/s", ddoc, "plain");
  REQUIRE(plain);
  CHECK(plain->default_analyzer == "standard");
  CHECK(plain->field_analyzers.empty());

  auto missing = search_index_of(search_api::nouveau, "_design/s", ddoc, "nothing");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == errc::not_found);
  CHECK(missing.error().reason == "nothing not found.");
  for (const char* bad : {"nofunction", "badanalyzer"}) {
    auto r = search_index_of(search_api::nouveau, "_design/s", ddoc, bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == errc::invalid_design_doc);
    CHECK(r.error().reason == std::string("index `") + bad + "` must have parameter `index`");
  }
  // The well-formed ones, in the document's order.
  std::vector<std::string> names;
  for (const auto& d : search_indexes_of(search_api::nouveau, "_design/s", ddoc)) names.push_back(d.name);
  CHECK(names == std::vector<std::string>{"books", "plain"});

  auto cl = search_index_of(search_api::clouseau, "_design/s", ddoc, "cl");
  REQUIRE(cl);
  CHECK(cl->default_analyzer == "english");
  CHECK(cl->field_analyzers == std::map<std::string, std::string>{{"tag", "keyword"}});
  CHECK(search_index_of(search_api::clouseau, "_design/s", ddoc, "bare")->default_analyzer == "standard");
  CHECK(search_index_of(search_api::clouseau, "_design/s", ddoc, "books").error().code == errc::not_found);
}

TEST_CASE("search_ddoc: the signature follows the function and analyzers, not the rest of the document") {
  auto sig = [](const char* text, const char* name = "i") {
    auto d = search_index_of(search_api::nouveau, "_design/x", json::parse(text), name);
    REQUIRE(d);
    return d->signature;
  };
  const std::string base = sig(R"({"nouveau": {"i": {"index": "f", "field_analyzers": {"a": "x", "b": "y"}}}})");
  // Other members, other indexes, the order of the field analyzers: the same index.
  CHECK(
      sig(R"({"views": {}, "nouveau": {"j": {"index": "g"}, "i": {"index": "f", "field_analyzers": {"b": "y", "a": "x"}}}})") ==
      base);
  // The function, an analyzer, the Lucene version: another index.
  CHECK(sig(R"({"nouveau": {"i": {"index": "f2", "field_analyzers": {"a": "x", "b": "y"}}}})") != base);
  CHECK(sig(R"({"nouveau": {"i": {"index": "f", "field_analyzers": {"a": "x", "b": "z"}}}})") != base);
  CHECK(
      sig(R"({"nouveau": {"i": {"index": "f", "default_analyzer": "english", "field_analyzers": {"a": "x", "b": "y"}}}})") !=
      base);
  CHECK(sig(R"({"nouveau": {"i": {"index": "f", "lucene_version": 10, "field_analyzers": {"a": "x", "b": "y"}}}})") !=
        base);
  // The same definition under `indexes` is another API's index.
  auto cl =
      search_index_of(search_api::clouseau, "_design/x", json::parse(R"({"indexes": {"i": {"index": "f"}}})"), "i");
  REQUIRE(cl);
  CHECK(cl->signature != sig(R"({"nouveau": {"i": {"index": "f"}}})"));
}
