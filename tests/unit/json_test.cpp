#include <doctest/doctest.h>

#include "node/json.hpp"

using namespace settee;

namespace {

std::string nested(size_t depth, char open = '[', char close = ']', const std::string& inner = "1") {
  return std::string(depth, open) + inner + std::string(depth, close);
}

std::string nested_objects(size_t depth) {
  std::string s;
  for (size_t i = 0; i < depth; ++i) s += "{\"a\":";
  return s + "1" + std::string(depth, '}');
}

}  // namespace

TEST_CASE("json: nesting up to the limit parses, one level more is refused with a reason") {
  CHECK(parse_json(nested(1000)));
  CHECK(parse_json(nested_objects(1000)));
  std::string why;
  CHECK_FALSE(parse_json(nested(1001), &why));
  CHECK(why == "JSON nests deeper than 1000 levels ([couchdb] max_json_depth)");
  why.clear();
  CHECK_FALSE(parse_json(nested_objects(1001), &why));
  CHECK(!why.empty());
  // Far deeper than any stack could recurse: refused early, no crash.
  CHECK_FALSE(parse_json(nested(1000000)));
  CHECK_FALSE(parse_json(nested(1000000, '{', '}', "")));
  // A mix, and a deep value after a shallow prefix.
  std::string mixed;
  for (int i = 0; i < 600; ++i) mixed += i % 2 ? "[" : "{\"k\":";
  for (int i = 599; i >= 0; --i) mixed += i % 2 ? "]" : "}";
  CHECK_FALSE(parse_json("[1," + mixed + "]", 100, nullptr));
  CHECK(parse_json("[1," + mixed + "]", 601, nullptr));
}

TEST_CASE("json: the depth limit is a setting") {
  set_max_json_depth(10);
  CHECK(parse_json(nested(10)));
  CHECK_FALSE(parse_json(nested(11)));
  set_max_json_depth(default_max_json_depth);
  CHECK(parse_json(nested(11)));
}

TEST_CASE("json: invalid text leaves the reason empty; valid documents keep their key order") {
  std::string why = "x";
  CHECK_FALSE(parse_json("{\"a\":", &why));
  CHECK(why.empty());
  CHECK_FALSE(parse_json("[1] trailing"));
  auto j = parse_json(R"({"z":1,"a":{"y":[1,2,{"b":null}],"c":"s"},"m":1.5,"n":-3,"u":18446744073709551615})");
  REQUIRE(j);
  CHECK(j->dump() == R"({"z":1,"a":{"y":[1,2,{"b":null}],"c":"s"},"m":1.5,"n":-3,"u":18446744073709551615})");
  CHECK(parse_json("\"just a string\"")->get<std::string>() == "just a string");
}

TEST_CASE("json: a repeated key keeps its last value in its first place, small and large objects alike") {
  CHECK(parse_json(R"({"a":1,"b":2,"a":3})")->dump() == R"({"a":3,"b":2})");
  std::string big = "{";
  for (int i = 0; i < 100; ++i) big += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  big += "\"k5\":\"again\",\"k99\":{\"x\":[]}}";
  auto j = parse_json(big);
  REQUIRE(j);
  CHECK(j->size() == 100);
  CHECK((*j)["k5"] == "again");
  CHECK((*j)["k99"]["x"].is_array());
  CHECK(j->begin().key() == "k0");
}

TEST_CASE("json: 300,000 keys in one object parse (linear, not quadratic)") {
  std::string s = "{";
  for (int i = 0; i < 300000; ++i) s += (i ? ",\"" : "\"") + std::to_string(i) + "\":" + std::to_string(i);
  s += "}";
  auto j = parse_json(s);
  REQUIRE(j);
  CHECK(j->size() == 300000);
  CHECK((*j)["299999"] == 299999);
}

TEST_CASE("json: within_json_depth counts nesting outside strings only") {
  CHECK(within_json_depth(nested(1000)));
  CHECK_FALSE(within_json_depth(nested(1001)));
  CHECK_FALSE(within_json_depth(nested_objects(1001)));
  CHECK(within_json_depth("{\"a\":\"" + std::string(5000, '[') + "\"}"));
  CHECK(within_json_depth("{\"a\":\"\\\"" + std::string(5000, '{') + "\"}"));
  CHECK_FALSE(within_json_depth("{\"a\":\"\\\\\"," + nested(1000) + "}"));
}

TEST_CASE("couch_dump: documents as CouchDB writes them, floats as Erlang prints them") {
  auto dumped = [](const char* text) { return couch_dump(*parse_json(text)); };
  // Erlang's float_to_binary(F, [short]) (erts/emulator/ryu/to_chars.h and its examples).
  CHECK(dumped("[1e10,100.0,1000.0,100000.0,123456.0,0.001,0.0001,0.00001,1.5e300,1.0,-0.0,0.0,0.1,2.5e-7]") ==
        "[1.0e10,100.0,1.0e3,1.0e5,123456.0,0.001,0.0001,1.0e-5,1.5e300,1.0,-0.0,0.0,0.1,2.5e-7]");
  CHECK(dumped("[1.7976931348623157e308,5e-324,12.5,-12.5,123456789012.0,12340.0,123400.0,0.001234,1234.5678]") ==
        "[1.7976931348623157e308,5.0e-324,12.5,-12.5,123456789012.0,12340.0,1.234e5,0.001234,1234.5678]");
  CHECK(dumped("[1234567890.0,12345678900.0,9007199254740992.0,9007199254740991.0,3.0e-4,-1e-7]") ==
        "[1234567890.0,12345678900.0,9.007199254740992e15,9007199254740991.0,0.0003,-1.0e-7]");
  // Integers stay integers; everything else as nlohmann writes it, key order kept.
  CHECK(dumped(R"({"b":1,"a":[true,false,null],"n":-9223372036854775808,"u":18446744073709551615})") ==
        R"({"b":1,"a":[true,false,null],"n":-9223372036854775808,"u":18446744073709551615})");
  const char* text = R"({"s":"q\"\\\b\f\n\r\t\u0001\u001f\u007fé","e":{},"l":[],"o":{"x":[{}]}})";
  CHECK(dumped(text) == parse_json(text)->dump());
}
