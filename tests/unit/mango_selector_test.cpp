#include <doctest/doctest.h>

#include "http/mango_selector.hpp"

using namespace settee;

namespace {

bool m(const char* selector, const char* doc) {
  auto s = mango_selector::compile(json::parse(selector));
  REQUIRE_MESSAGE(s.ok(), selector);
  return s->matches(json::parse(doc));
}

const char* doc =
    R"({"_id":"x","name":"Ann","age":31,"score":4.5,"tags":["a","b","c"],"addr":{"city":"Oslo","zip":"0150"},
  "pets":[{"kind":"cat","age":3},{"kind":"dog","age":9}],"nothing":null,"ok":true,"dot.key":1})";

}  // namespace

TEST_CASE("equality, implicit $and, nested and dotted paths") {
  CHECK(m(R"({"name":"Ann"})", doc));
  CHECK_FALSE(m(R"({"name":"Bob"})", doc));
  CHECK(m(R"({"name":"Ann","age":31})", doc));
  CHECK_FALSE(m(R"({"name":"Ann","age":32})", doc));
  CHECK(m(R"({"addr.city":"Oslo"})", doc));
  CHECK(m(R"({"addr":{"city":"Oslo"}})", doc));
  CHECK(m(R"({"pets.1.kind":"dog"})", doc));
  CHECK(m(R"({"dot\\.key":1})", doc));
  CHECK(m(R"({"tags":["a","b","c"]})", doc));
  CHECK(m(R"({"nothing":null})", doc));
  CHECK(m("{}", doc));
}

TEST_CASE("comparison operators use CouchDB collation") {
  CHECK(m(R"({"age":{"$gt":30,"$lt":32}})", doc));
  CHECK(m(R"({"age":{"$gte":31,"$lte":31}})", doc));
  CHECK_FALSE(m(R"({"age":{"$gt":31}})", doc));
  CHECK(m(R"({"age":{"$ne":5}})", doc));
  CHECK(m(R"({"score":{"$gt":4}})", doc));
  CHECK(m(R"({"name":{"$gt":1}})", doc));  // strings sort after numbers
  CHECK(m(R"({"age":{"$lt":"0"}})", doc));
  CHECK(m(R"({"ok":{"$gt":false}})", doc));
  CHECK(collate(json(nullptr), json(false)) < 0);
  CHECK(collate(json::array(), json::object()) < 0);
  CHECK(collate(json::parse("[1,2]"), json::parse("[1,3]")) < 0);
  CHECK(collate(json(2), json(2.0)) == 0);
}

TEST_CASE("missing fields match nothing but $exists false") {
  CHECK_FALSE(m(R"({"missing":{"$ne":1}})", doc));
  CHECK_FALSE(m(R"({"missing":{"$exists":true}})", doc));
  CHECK(m(R"({"missing":{"$exists":false}})", doc));
  CHECK(m(R"({"name":{"$exists":true}})", doc));
  CHECK_FALSE(m(R"({"name":{"$exists":false}})", doc));
  CHECK(m(R"({"$not":{"missing":1}})", doc));
}

TEST_CASE("array and set operators") {
  CHECK(m(R"({"age":{"$in":[1,31]}})", doc));
  CHECK_FALSE(m(R"({"age":{"$nin":[1,31]}})", doc));
  CHECK(m(R"({"tags":{"$in":["z","b"]}})", doc));  // any element
  CHECK(m(R"({"tags":{"$all":["c","a"]}})", doc));
  CHECK_FALSE(m(R"({"tags":{"$all":["a","z"]}})", doc));
  CHECK(m(R"({"tags":{"$size":3}})", doc));
  CHECK_FALSE(m(R"({"name":{"$size":3}})", doc));
  CHECK(m(R"({"pets":{"$elemMatch":{"kind":"dog","age":{"$gt":5}}}})", doc));
  CHECK_FALSE(m(R"({"pets":{"$elemMatch":{"kind":"cat","age":{"$gt":5}}}})", doc));
  CHECK(m(R"({"pets":{"$allMatch":{"age":{"$gt":1}}}})", doc));
  CHECK_FALSE(m(R"({"pets":{"$allMatch":{"kind":"cat"}}})", doc));
  CHECK(m(R"({"tags":{"$elemMatch":{"$eq":"b"}}})", doc));
}

TEST_CASE("type, mod, regex") {
  CHECK(m(R"({"age":{"$type":"number"},"tags":{"$type":"array"},"addr":{"$type":"object"}})", doc));
  CHECK(m(R"({"nothing":{"$type":"null"},"ok":{"$type":"boolean"},"name":{"$type":"string"}})", doc));
  CHECK_FALSE(m(R"({"age":{"$type":"string"}})", doc));
  CHECK(m(R"({"age":{"$mod":[10,1]}})", doc));
  CHECK_FALSE(m(R"({"age":{"$mod":[10,2]}})", doc));
  CHECK_FALSE(m(R"({"score":{"$mod":[2,0]}})", doc));  // not an integer
  CHECK(m(R"({"name":{"$regex":"^A"}})", doc));
  CHECK_FALSE(m(R"({"name":{"$regex":"^a"}})", doc));
  CHECK_FALSE(m(R"({"age":{"$regex":"3"}})", doc));
}

TEST_CASE("combination operators") {
  CHECK(m(R"({"$or":[{"name":"Bob"},{"age":31}]})", doc));
  CHECK_FALSE(m(R"({"$or":[{"name":"Bob"},{"age":30}]})", doc));
  CHECK(m(R"({"$and":[{"name":"Ann"},{"age":{"$gt":1}}]})", doc));
  CHECK(m(R"({"$nor":[{"name":"Bob"},{"age":30}]})", doc));
  CHECK_FALSE(m(R"({"$nor":[{"name":"Ann"}]})", doc));
  CHECK(m(R"({"age":{"$not":{"$gt":40}}})", doc));
  CHECK_FALSE(m(R"({"$not":{"name":"Ann"}})", doc));
}

TEST_CASE("invalid selectors are errors, not crashes") {
  for (const char* bad :
       {R"([1])", R"("x")", R"({"a":{"$bogus":1}})", R"({"$and":{}})", R"({"$or":[1]})", R"({"a":{"$in":5}})",
        R"({"a":{"$exists":"yes"}})", R"({"a":{"$type":"thing"}})", R"({"a":{"$size":-1}})", R"({"a":{"$mod":[0,1]}})",
        R"({"a":{"$mod":[2]}})", R"({"a":{"$regex":"("}})", R"({"a":{"$elemMatch":5}})"}) {
    auto s = mango_selector::compile(json::parse(bad));
    CHECK_MESSAGE(!s.ok(), bad);
    if (!s.ok()) CHECK(s.error().reason.rfind("Selector error: ", 0) == 0);
  }
}
