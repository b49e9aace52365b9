// The fields a document's index() calls give (search/search_fields): Nouveau's four arguments and
// Clouseau's three, checked with the errors CouchDB's nouveau.js and dreyfus.js throw.
#include "search/search_fields.hpp"

#include <doctest/doctest.h>

using namespace settee;

TEST_CASE("search_fields: Nouveau's index(type, name, value, options)") {
  auto f = fields_of(search_api::nouveau, json::parse(R"([["text","title","The Fox",{"store":true}],
      ["string","genre","fable"],["double","year",1912,{"store":true}],["stored","note","kept"],["stored","n",3]])"));
  REQUIRE(f);
  REQUIRE(f->size() == 5);
  CHECK(((*f)[0].type == text_field::kind::text && (*f)[0].name == "title" && (*f)[0].text == "The Fox" &&
         (*f)[0].store));
  CHECK(((*f)[1].type == text_field::kind::string && !(*f)[1].store));
  CHECK(((*f)[2].type == text_field::kind::number && (*f)[2].number == 1912 && (*f)[2].store));
  CHECK(((*f)[3].type == text_field::kind::stored && (*f)[3].text == "kept" && (*f)[3].store));
  CHECK(((*f)[4].is_number && (*f)[4].number == 3));
  CHECK(fields_of(search_api::nouveau, json::array())->empty());
  const std::pair<const char*, const char*> bad[] = {
      {R"([["text","t",12]])", "TypeError: type of value must be a string not number"},
      {R"([["double","t","12"]])", "TypeError: type of value must be a number not string"},
      {R"([[1,"t","x"]])", "TypeError: type of type must be a string not number"},
      {R"([["text",null,"x"]])", "TypeError: type of name must be a string not object"},
      {R"([["text","_t","x"]])", "ReservedName: name must not start with an underscore"},
      {R"([["blob","t","x"]])", "TypeError: blob not supported"},
      {R"([["stored","t",true]])", "TypeError: type of true must be a string or number"},
      {R"([["text","ok","x"],["text","t",null]])", "TypeError: type of value must be a string not object"},
  };
  for (const auto& [calls, reason] : bad) {
    CAPTURE(calls);
    auto r = fields_of(search_api::nouveau, json::parse(calls));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == errc::bad_request);
    CHECK(r.error().reason == reason);
  }
}

TEST_CASE("search_fields: Clouseau's index(name, value, options)") {
  auto f = fields_of(search_api::clouseau,
                     json::parse(R"([["default","some words"],["price",9.5,{"store":"yes"}],["ok",true],
      ["code","AB-1",{"index":"not_analyzed"}],["hidden","x",{"index":false,"store":true}],["gone","x",{"index":"no"}]])"));
  REQUIRE(f);
  REQUIRE(f->size() == 5);
  CHECK((*f)[0].type == text_field::kind::text);
  CHECK(((*f)[1].type == text_field::kind::number && (*f)[1].number == 9.5 && (*f)[1].store));
  CHECK(((*f)[2].type == text_field::kind::string && (*f)[2].text == "true"));
  CHECK(((*f)[3].type == text_field::kind::string && (*f)[3].text == "AB-1"));
  CHECK(((*f)[4].type == text_field::kind::stored && (*f)[4].text == "x"));
  CHECK(fields_of(search_api::clouseau, json::parse(R"([[3,"x"]])")).error().reason ==
        "TypeError: name must be a string not number");
  CHECK(fields_of(search_api::clouseau, json::parse(R"([["a",null]])")).error().reason ==
        "TypeError: value must be a string, a number or boolean not object");
  CHECK(fields_of(search_api::clouseau, json::parse(R"([["a","x","opts"]])")).error().reason ==
        "TypeError: options must be an object not string");
  CHECK(fields_of(search_api::clouseau, json::parse(R"([["_a","x"]])")).error().reason ==
        "ReservedName: name must not start with an underscore");
}
