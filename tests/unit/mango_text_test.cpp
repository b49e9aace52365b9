// Mango text indexes (query/mango_text): a selector's Lucene query as CouchDB's
// mango_selector_text writes it (its eunit cases, through to_query), the fields a document gives
// the index as mango_native_proc makes them, which indexes a selector may use, and the sort.
#include "query/mango_text.hpp"

#include <doctest/doctest.h>

#include <algorithm>

#include "query/mango_selector.hpp"

using namespace settee;

namespace {

std::string query_of(const char* selector) {
  auto q = text_query_of(normalize_selector(json::parse(selector)));
  REQUIRE(q);
  return *q;
}

const text_field* find(const std::vector<text_field>& fields, const std::string& name, const std::string& text = "") {
  auto it = std::find_if(fields.begin(), fields.end(),
                         [&](const text_field& f) { return f.name == name && (text.empty() || f.text == text); });
  return it == fields.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("mango_text: a selector's Lucene query (mango_selector_text:convert)") {
  CHECK(query_of(R"({"field": 42})") == "(field_3anumber:42)");
  CHECK(query_of(R"({"field": "value"})") == R"((field_3astring:"value"))");
  CHECK(query_of(R"({"field": true})") == "(field_3aboolean:true)");
  CHECK(query_of(R"({"field": null})") == "(field_3anull:true)");
  CHECK(query_of(R"({"field": [1, 2, 3]})") ==
        "((field._5b_5d_3alength:3) AND (field._5b_5d_3anumber:1) AND (field._5b_5d_3anumber:2) AND "
        "(field._5b_5d_3anumber:3))");
  CHECK(query_of(R"({"field1": {"field2": "value"}})") == R"((field1.field2_3astring:"value"))");
  CHECK(query_of(R"({"$text": "hello world"})") == R"(($default:"hello\ world"))");
  CHECK(query_of(R"({"field": {"$lt": 42}})") == "(field_3anumber:{* TO 42})");
  CHECK(query_of(R"({"field": {"$lte": 42}})") == "(field_3anumber:[* TO 42])");
  CHECK(query_of(R"({"field": {"$gte": 42}})") == "(field_3anumber:[42 TO *])");
  CHECK(query_of(R"({"field": {"$gt": 42}})") == "(field_3anumber:{42 TO *})");
  CHECK(query_of(R"({"name": {"$gt": "Bob"}})") ==
        "(name_3astring:([\"Bob\" TO \"\xf4\x8f\xbf\xbf\"] AND NOT \"Bob\"))");
  const std::string exists = "(($fieldnames:field_3a*) OR ($fieldnames:field.*))";
  CHECK(query_of(R"({"field": {"$lt": null}})") == exists);
  CHECK(query_of(R"({"field": {"$gt": [1, 2]}})") == exists);
  CHECK(query_of(R"({"field": {"$exists": true}})") == exists);
  CHECK(query_of(R"({"field": {"$type": "string"}})") == exists);
  CHECK(query_of(R"({"field": {"$exists": false}})") == "(*:* AND NOT (" + exists + "))");
  CHECK(query_of(R"({"field": {"$ne": 42}})") == "(" + exists + " AND NOT ((field_3anumber:42)))");
  CHECK(
      query_of(R"({"field": {"$in": ["a", 1]}})") ==
      R"((((field_3astring:"a") OR (field._5b_5d_3astring:"a")) OR ((field_3anumber:1) OR (field._5b_5d_3anumber:1))))");
  CHECK(query_of(R"({"field": {"$nin": []}})") == "(" + exists + ")");
  CHECK(query_of(R"({"field": {"$beginsWith": "fo o"}})") == R"((field_3astring:fo\ o*))");
  CHECK(query_of(R"({"field": {"$regex": ".*"}})") == "($fieldnames:field_3astring)");
  CHECK(query_of(R"({"field": {"$mod": [2, 0]}})") == "($fieldnames:field_3anumber)");
  CHECK(query_of(R"({"field": {"$size": 6}})") == "(field._5b_5d_3alength:6)");
  CHECK(query_of(R"({"field": {"$elemMatch": {"$eq": "v"}}})") == R"((field._5b_5d_3astring:"v"))");
  CHECK(query_of(R"({"field": {"$all": ["a", "b"]}})") ==
        R"(((field._5b_5d_3astring:"a") AND (field._5b_5d_3astring:"b")))");
  CHECK(query_of(R"({"a.0.b": 1})") == "((a.0.b_3anumber:1) OR (a._5b_5d.b_3anumber:1))");
  CHECK(query_of(R"({"a\\.b": "x"})") == R"((a_2eb_3astring:"x"))");
  CHECK(query_of(R"({"n": -5})") == R"((n_3anumber:\-5))");
  CHECK(query_of(R"({"s": "a\"b:c"})") == R"((s_3astring:"a\"b\:c"))");
  CHECK(query_of(R"({"$and": [{"f1": "v1"}, {"f2": "v2"}]})") == R"(((f1_3astring:"v1") AND (f2_3astring:"v2")))");
  CHECK(query_of(R"({"$or": [{"f1": "v1"}, {"f2": "v2"}]})") == R"(((f1_3astring:"v1") OR (f2_3astring:"v2")))");
  CHECK(query_of(R"({"$nor": [{"f": "v"}]})") ==
        R"((((($fieldnames:f_3a*) OR ($fieldnames:f.*)) AND NOT ((f_3astring:"v")))))");
  CHECK(query_of(R"({"$and": []})").empty());
  auto bad = text_query_of(normalize_selector(json::parse(R"({"f": {"$keyMapMatch": {"k": 1}}})")));
  REQUIRE(!bad);
  CHECK(bad.error().code == errc::mango_invalid_operator);
}

TEST_CASE("mango_text: the fields a selector needs, and which indexes have them") {
  auto fields = [](const char* s) { return text_indexable_fields(normalize_selector(json::parse(s))); };
  CHECK(fields(R"({"$text": "t", "f1": true, "f2": 42, "f3": {"$regex": ".*"}})") ==
        std::vector<std::string>{"$default", "f1:boolean", "f2:number", "f3:string"});
  CHECK(fields(R"({"f": {"$in": ["a", "b"]}})") == std::vector<std::string>{"f:string"});
  CHECK(fields(R"({"f": {"$exists": true}})").empty());
  CHECK(fields(R"({"f": [1, 2]})") == std::vector<std::string>{"f.[]:number"});
  auto some = parse_text_index(json::parse(R"({"fields": [{"name": "name", "type": "string"}]})"));
  REQUIRE(some);
  auto all = parse_text_index(json::object());
  REQUIRE(all);
  auto usable = [](const json& def, const char* s) {
    return text_index_usable(def, normalize_selector(json::parse(s)));
  };
  CHECK(usable(*some, R"({"name": "Bob"})"));
  CHECK(usable(*some, R"({"$text": "Bob"})"));
  CHECK_FALSE(usable(*some, R"({"age": 3})"));
  CHECK_FALSE(usable(*some, "{}"));
  CHECK(usable(*all, R"({"age": 3})"));
  CHECK_FALSE(usable(*all, "{}"));
}

TEST_CASE("mango_text: an index definition, its defaults and its errors") {
  auto def = parse_text_index(json::object());
  REQUIRE(def);
  CHECK((*def)["default_analyzer"] == "keyword");
  CHECK((*def)["fields"] == "all_fields");
  CHECK((*def)["index_array_lengths"] == true);
  CHECK(text_index_entry(*def)["analyzer"] ==
        json::parse(R"({"name": "perfield", "default": "keyword", "fields": {"$default": "standard"}})"));
  CHECK(text_index_entry(*parse_text_index(json::parse(R"({"default_field": false})")))["analyzer"] == "keyword");
  CHECK(text_index_def_json(*parse_text_index(json::parse(
            R"({"fields": [{"name": "a", "type": "number"}]})")))["fields"] == json::parse(R"([{"a": "number"}])"));
  CHECK(text_index_def_json(*def)["fields"] == json::array());
  auto code = [](const char* index) {
    auto r = parse_text_index(json::parse(index));
    return r ? errc::ok : r.error().code;
  };
  CHECK(code(R"("x")") == errc::mango_invalid_index);
  CHECK(code(R"({"nope": 1})") == errc::mango_invalid_key);
  CHECK(code(R"({"fields": [{"name": "", "type": "string"}]})") == errc::mango_invalid_index_fields);
  CHECK(code(R"({"fields": [{"name": "a", "type": "date"}]})") == errc::mango_invalid_index_fields);
  CHECK(code(R"({"fields": "some"})") == errc::mango_invalid_index_fields);
  CHECK(code(R"({"default_analyzer": "nope"})") == errc::bad_request);
  CHECK(code(R"({"index_array_lengths": 1})") == errc::mango_invalid_boolean);
  CHECK(code(R"({"selector": {"a": {"$bad": 1}}})") == errc::mango_invalid_operator);
}

TEST_CASE("mango_text: the fields a document gives the index (mango_native_proc)") {
  const json doc = json::parse(R"({"_id": "d1", "_rev": "1-a", "name": "Bob", "age": 42, "tags": ["a", "b"],
                                   "ok": true, "none": null, "o": {"k.x": "v"}})");
  auto all = text_fields_of(*parse_text_index(json::object()), doc);
  const text_field* name = find(all, "name_3astring");
  REQUIRE(name);
  CHECK((name->type == text_field::kind::string && name->text == "Bob"));
  const text_field* age = find(all, "age_3anumber");
  REQUIRE(age);
  CHECK((age->type == text_field::kind::number && age->number == 42));
  const text_field* length = find(all, "tags._5b_5d_3alength");
  REQUIRE(length);
  CHECK(length->number == 2);
  CHECK(find(all, "tags._5b_5d_3astring", "a"));
  CHECK(find(all, "tags._5b_5d_3astring", "b"));
  CHECK(find(all, "ok_3aboolean", "true"));
  CHECK(find(all, "none_3anull", "true"));
  CHECK(find(all, "o.k_2ex_3astring", "v"));
  CHECK(find(all, "_5fid_3astring", "d1"));
  for (const char* s : {"Bob", "a", "b", "v", "d1"}) {
    const text_field* d = find(all, "$default", s);
    REQUIRE(d);
    CHECK(d->type == text_field::kind::text);
  }
  CHECK(find(all, "$fieldnames", "age_3anumber"));
  CHECK(find(all, "$fieldnames", "$default"));
  CHECK_FALSE(find(all, "$default", "42"));

  auto some = text_fields_of(*parse_text_index(json::parse(R"({"fields": [{"name": "name", "type": "string"}],
                                                              "default_field": {"enabled": false}})")),
                             doc);
  CHECK(find(some, "name_3astring"));
  CHECK(find(some, "tags._5b_5d_3alength"));  // lengths are not among the fields named (as CouchDB)
  CHECK_FALSE(find(some, "age_3anumber"));
  CHECK_FALSE(find(some, "$default"));

  auto standard = text_fields_of(*parse_text_index(json::parse(R"({"default_analyzer": "standard"})")), doc);
  CHECK(find(standard, "name_3astring")->type == text_field::kind::text);

  CHECK(text_fields_of(*parse_text_index(json::parse(R"({"partial_filter_selector": {"age": {"$gt": 50}}})")), doc)
            .empty());
  CHECK(text_fields_of(*parse_text_index(json::object()), json::parse(R"({"_id": "_design/x", "a": 1})")).empty());
}

TEST_CASE("mango_text: a sort's keys and their types") {
  auto sort = [](std::vector<std::pair<std::string, bool>> s, const char* selector) {
    return text_sort(s, normalize_selector(json::parse(selector)));
  };
  CHECK(*sort({{"name", false}}, R"({"name": {"$gt": "a"}})") == std::vector<std::string>{"name_3astring"});
  CHECK(*sort({{"age:number", true}}, R"({"x": 1})") == std::vector<std::string>{"-age_3anumber"});
  CHECK(*sort({{"a.b", false}}, R"({"a.b": {"$lt": 3}})") == std::vector<std::string>{"a.b_3anumber"});
  CHECK(sort({}, "{}")->empty());
  auto unknown = sort({{"x", false}}, R"({"y": 1})");
  REQUIRE(!unknown);
  CHECK(unknown.error().code == errc::mango_text_sort);
  CHECK(!sort({{"x", false}}, R"({"$or": [{"x": {"$gt": 1}}, {"x": {"$gt": "a"}}]})"));
}

TEST_CASE("mango_text: $text in a selector") {
  auto s = mango_selector::compile(json::parse(R"({"$text": "fox", "a": 1})"));
  REQUIRE(s);
  CHECK(*s->matches(json::parse(R"({"a": 1})")));  // the index decided; the rest still matched
  CHECK_FALSE(*s->matches(json::parse(R"({"a": 2})")));
  CHECK(normalize_selector(json::parse(R"({"$text": "fox"})")) == json::parse(R"({"$default": {"$text": "fox"}})"));
  auto nested = mango_selector::compile(json::parse(R"({"a": {"$text": "fox"}})"));
  REQUIRE(!nested);
  CHECK(nested.error().code == errc::mango_bad_field);
  auto bad = mango_selector::compile(json::parse(R"({"$text": ["fox"]})"));
  REQUIRE(!bad);
  CHECK(bad.error().code == errc::mango_bad_arg);
}
