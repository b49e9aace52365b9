#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "node/json.hpp"

using namespace settee;

namespace {

// A random JSON text: every value kind, strings with escapes and multi-byte characters, numbers at
// the edges of nlohmann's integer types, repeated keys.
std::string random_text(std::mt19937& rng, int depth) {
  static const char* atoms[] = {"null",
                                "true",
                                "false",
                                "0",
                                "-0",
                                "-0.0",
                                "1",
                                "-1",
                                "9223372036854775807",
                                "-9223372036854775808",
                                "9223372036854775808",
                                "18446744073709551615",
                                "18446744073709551616",
                                "123456789012345678901234567890",
                                "1.5",
                                "-2.25e-3",
                                "1E2",
                                "1e308",
                                "5e-324",
                                "0.1",
                                "3.141592653589793"};
  static const char* strings[] = {R"("")",
                                  R"("plain")",
                                  R"("a\"b\\c\/d")",
                                  R"("\n\r\t\b\f")",
                                  R"("\u0000\u001f\u00e9")",
                                  R"("\ud83d\ude00 and \u20ac")",
                                  "\"caf\xc3\xa9 \xe2\x82\xac\"",
                                  R"("\u0041\u00410")"};
  int kind = static_cast<int>(rng() % (depth > 4 ? 2 : 4));
  if (kind == 0) return atoms[rng() % std::size(atoms)];
  if (kind == 1) return strings[rng() % std::size(strings)];
  std::string s(1, kind == 2 ? '[' : '{');
  int n = static_cast<int>(rng() % 5);
  for (int i = 0; i < n; ++i) {
    if (i) s += rng() % 2 ? "," : " ,\n ";
    if (kind == 3) s += std::string("\"k") + std::to_string(rng() % 3) + "\": ";
    s += random_text(rng, depth + 1);
  }
  return s + (kind == 2 ? ']' : '}');
}

// Two documents alike to the type: nlohmann's == calls 1 and 1u and 1.0 equal, settee must not
// change which of them a text becomes. One exception: "-0" is an integer zero, signed for nlohmann
// and unsigned for settee (simdjson does not say whether a zero had a sign); both write "0".
bool same(const json& a, const json& b) {
  if (a.is_number_integer() && b.is_number_integer() && a == 0 && b == 0) return true;
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
      if (i.key() != j.key() || !same(*i, *j)) return false;
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!same(a[i], b[i])) return false;
    }
    return true;
  }
  if (a.is_number_float()) return std::signbit(a.get<double>()) == std::signbit(b.get<double>()) && a == b;
  return a == b;
}

// nlohmann's own parser with the rule settee adds (a repeated key keeps its last value in its first
// place): what parse_json answered before simdjson took its fast path.
std::optional<json> reference(const std::string& text) {
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

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

TEST_CASE("json: the fast path builds what nlohmann's parser builds, to the number types") {
  std::mt19937 rng(56);
  for (int i = 0; i < 3000; ++i) {
    std::string text = random_text(rng, 0);
    auto want = reference(text);
    auto got = parse_json(text);
    CAPTURE(text);
    REQUIRE(want.has_value() == got.has_value());
    if (want) CHECK(same(*want, *got));
  }
  // Integers past 64 bits: simdjson refuses them, nlohmann makes a double; the answer is nlohmann's.
  auto big = parse_json("[123456789012345678901234567890, 18446744073709551616]");
  REQUIRE(big);
  CHECK((*big)[0].is_number_float());
  CHECK((*big)[0].get<double>() == 123456789012345678901234567890.0);
  CHECK(parse_json("1")->is_number_unsigned());
  CHECK(parse_json("-1")->is_number_integer());
  CHECK(parse_json("-0")->dump() == "0");
  CHECK(std::signbit(parse_json("-0.0")->get<double>()));
  // What both refuse.
  for (const char* bad : {"", " ", "1e400", "\"\\ud800\"", "\"\\ud800\\u0041\"", "\"a\x01\"", "[1,]", "{\"a\" 1}", "01",
                          "nul", "\"\xff\"", "\"\xc0\xaf\"", "[1] [2]", "{\"a\":1,}", "NaN", "'a'"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_json(bad));
  }
  CHECK(parse_json(" \t\r\n[1]\n")->dump() == "[1]");
}

TEST_CASE("quote: escapes what JSON must escape, the rest byte for byte") {
  std::string all;
  for (int c = 1; c < 128; ++c) all.push_back(static_cast<char>(c));
  all += "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
  CHECK(quote(all) == json(all).dump());
  CHECK(quote(std::string("a\0b", 3)) == "\"a\\u0000b\"");
  CHECK(quote("") == "\"\"");
  CHECK(quote("\"") == "\"\\\"\"");
  std::mt19937 rng(8);  // an escape at every place of the eight-character steps
  const char pool[] = "ab\"\\\n\x01\x1f \x7f\xc3\xa9";
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    for (size_t n = rng() % 40; n > 0; --n) text.push_back(pool[rng() % (sizeof pool - 3)]);  // ASCII only
    CAPTURE(text);
    CHECK(quote(text) == json(text).dump());
  }
  std::string out = "x";
  append_quoted(out, "tail\\");
  CHECK(out == "x\"tail\\\\\"");
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

TEST_CASE("json_members: members in the order written, moved (not copied) when an object grows") {
  json o = json::object();
  o["z"] = 1;
  o["a"] = json::array({1, 2, 3});
  const json* inner = &o["a"][0];  // the array's elements: moved with it, so they stay where they are
  for (int i = 0; i < 100; ++i) o["k" + std::to_string(i)] = i;
  CHECK(&o["a"][0] == inner);
  CHECK(o.begin().key() == "z");
  CHECK(o.size() == 102);
  // A key given again keeps its place; emplace keeps the first value; erase keeps the order.
  o["z"] = 2;
  CHECK(o.begin().key() == "z");
  CHECK(o["z"] == 2);
  CHECK(!o.emplace("a", 5).second);
  CHECK(o.erase("a") == 1);
  CHECK(o.erase("a") == 0);
  CHECK(!o.contains("a"));
  CHECK(std::next(o.begin()).key() == "k0");
  CHECK(o.count("k99") == 1);
  CHECK(o.at("k5") == 5);
  CHECK_THROWS_AS(o.at("missing"), json::out_of_range);
  const json& c = o;
  CHECK(c["k7"] == 7);
  // Copies and comparisons see the same members in the same order; a different order differs.
  json copy = o;
  CHECK(copy == o);
  CHECK(copy.dump() == o.dump());
  CHECK(json::parse(R"({"b":1,"a":2})").dump() == R"({"b":1,"a":2})");
  CHECK(json::parse(R"({"b":1,"a":2})") != json::parse(R"({"a":2,"b":1})"));
  // An initializer list, items() and structured bindings read them as written.
  json l{{"y", 1}, {"x", json::object({{"q", true}})}};
  std::string keys;
  for (const auto& [k, v] : l.items()) keys += k;
  CHECK(keys == "yx");
  CHECK(l["x"]["q"] == true);
}

namespace {

member_use test_pick(std::string_view name) {
  if (name == "_whole") return member_use::whole;
  return !name.empty() && name[0] == '_' ? member_use::doc : member_use::body;
}

// What a split document must be: `doc` the picked members of parse_json's document, `body`
// couch_dump() of the rest (or, whole, parse_json's document itself).
void check_split(const json& want, const split_doc& got) {
  if (!got.body) {
    CHECK(same(want, got.doc));
    return;
  }
  REQUIRE(want.is_object());
  json picked = json::object(), rest = json::object();
  for (auto it = want.begin(); it != want.end(); ++it)
    (test_pick(it.key()) == member_use::doc ? picked : rest)[it.key()] = *it;
  CHECK(same(picked, got.doc));
  CHECK(*got.body == couch_dump(rest));
  CHECK(couch_dump(rejoin(got)) == couch_dump([&] {
          json all = rest;
          for (auto it = picked.begin(); it != picked.end(); ++it) all[it.key()] = *it;
          return all;
        }()));
}

}  // namespace

TEST_CASE("split documents: the body is couch_dump of the DOM's other members, byte for byte") {
  std::mt19937 rng(5656);
  int split = 0, whole = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = "{\"_id\":\"d" + std::to_string(i) + "\",\"a\":" + random_text(rng, 1) +
                       ",\"_rev\":" + random_text(rng, 3) + ",\"b\":" + random_text(rng, 1) + "}";
    CAPTURE(text);
    auto want = parse_json(text);
    auto got = parse_split_doc(text, test_pick, max_json_depth());
    REQUIRE(want.has_value() == got.has_value());
    if (!want) continue;
    check_split(*want, *got);
    (got->body ? split : whole) += 1;
  }
  // Broken and hostile texts (cut short, a byte changed, invalid UTF-8, nesting at the limit):
  // refused exactly where parse_json refuses, split exactly as above where it takes them.
  const char bytes[] = {'"', '\\', '{', '}', '[', ']', ',', ':', '0', 'e', '-', '\xff', '\xc3', '\x01', ' '};
  for (int i = 0; i < 3000; ++i) {
    std::string text = "{\"_id\":\"m\",\"a\":" + random_text(rng, 1) + ",\"_rev\":" + random_text(rng, 4) + "}";
    if (i % 3 == 0) text.resize(rng() % text.size());
    if (i % 3 == 1) text[rng() % text.size()] = bytes[rng() % std::size(bytes)];
    if (i % 3 == 2) text = "{\"a\":" + nested(max_json_depth() - 1 + rng() % 3) + "}";
    CAPTURE(text);
    auto want = parse_json(text);
    auto got = parse_split_doc(text, test_pick, max_json_depth());
    REQUIRE(want.has_value() == got.has_value());
    if (want) check_split(*want, *got);
  }
  CHECK(split > 1000);  // random_text repeats names inside objects: those stay whole
  CHECK(whole > 100);
  // Whole: a member the picker wants whole, a repeated name at any depth, not an object, integers
  // simdjson refuses (then nlohmann's numbers: a double).
  for (const char* text : {R"({"a":1,"_whole":2})", R"({"a":{"x":1,"x":2}})", R"({"a":1,"a":2})",
                           R"({"_id":1,"_id":2})", "[1]", "7", R"({"a":123456789012345678901234567890})"}) {
    CAPTURE(text);
    auto got = parse_split_doc(text, test_pick, max_json_depth());
    REQUIRE(got);
    CHECK_FALSE(got->body);
    CHECK(same(*parse_json(text), got->doc));
  }
  auto plain = parse_split_doc(R"({"_id":"x","n":1.0e5,"s":"\u00e9\n","_rev":"1-a","e":{}})", test_pick, 1000);
  REQUIRE(plain);
  CHECK(*plain->body == R"({"n":1.0e5,"s":"é\n","e":{}})");
  CHECK(plain->doc.dump() == R"({"_id":"x","_rev":"1-a"})");
  CHECK(*parse_split_doc("{}", test_pick, 1000)->body == "{}");
  // Rejoined in linear time, whatever the number of picked members (a design document of 200,000).
  std::string wide = "{\"a\":1";
  for (int k = 0; k < 200000; ++k) wide += ",\"_m" + std::to_string(k) + "\":" + std::to_string(k);
  auto many = parse_split_doc(wide + "}", test_pick, 1000);
  REQUIRE(many);
  REQUIRE(many->body);
  json joined = rejoin(std::move(*many));
  CHECK(joined.size() == 200001);
  CHECK(joined["_m199999"] == 199999);
  // Refused as parse_json refuses, with its reason.
  std::string why;
  CHECK_FALSE(parse_split_doc("{\"a\":", test_pick, 1000, &why));
  CHECK_FALSE(parse_split_doc(nested(11), test_pick, 10, &why));
  CHECK(why == "JSON nests deeper than 10 levels ([couchdb] max_json_depth)");
}

TEST_CASE("split documents: a _bulk_docs body keeps its other members and its documents' order") {
  std::mt19937 rng(565656);
  for (int i = 0; i < 500; ++i) {
    std::string text = "{\"new_edits\":" + random_text(rng, 3) + ",\"docs\":[";
    const int n = static_cast<int>(rng() % 4);
    for (int k = 0; k < n; ++k)
      text += std::string(k ? "," : "") +
              (rng() % 5 ? "{\"_id\":\"x\",\"v\":" + random_text(rng, 1) + "}" : random_text(rng, 2));
    text += "]}";
    CAPTURE(text);
    auto want = parse_json(text);
    auto got = parse_docs_body(text, "docs", test_pick, max_json_depth());
    REQUIRE(want.has_value() == got.has_value());
    if (!want) continue;
    CHECK(got->listed);
    CHECK_FALSE(got->top.contains("docs"));
    CHECK(same((*want)["new_edits"], got->top["new_edits"]));
    REQUIRE(got->docs.size() == (*want)["docs"].size());
    for (size_t k = 0; k < got->docs.size(); ++k) check_split((*want)["docs"][k], got->docs[k]);
  }
  // `docs` missing or not an array stays in `top`; the last of a repeated member counts.
  auto none = parse_docs_body(R"({"x":1})", "docs", test_pick, 1000);
  REQUIRE(none);
  CHECK_FALSE(none->listed);
  auto object = parse_docs_body(R"({"docs":{"a":1}})", "docs", test_pick, 1000);
  REQUIRE(object);
  CHECK_FALSE(object->listed);
  CHECK(object->top["docs"].is_object());
  auto twice = parse_docs_body(R"({"docs":[{"a":1}],"docs":[{"b":2},{"c":3}]})", "docs", test_pick, 1000);
  REQUIRE(twice);
  REQUIRE(twice->docs.size() == 2);
  CHECK_FALSE(twice->docs[1].body);  // a repeated member: the general way, documents whole
  CHECK(twice->docs[1].doc.dump() == R"({"c":3})");
  auto array = parse_docs_body("[1,2]", "docs", test_pick, 1000);
  REQUIRE(array);
  CHECK(array->top.is_array());
  CHECK_FALSE(array->listed);
  // More members than the fast path takes, or a large integer: the general way, documents whole.
  std::string wide = "{";
  for (int k = 0; k < 100; ++k) wide += "\"m" + std::to_string(k) + "\":" + std::to_string(k) + ",";
  // Nesting: the documents' own depth counts from the request's.
  std::string why;
  CHECK(parse_docs_body("{\"docs\":[" + nested(8) + "]}", "docs", test_pick, 10, &why));
  CHECK_FALSE(parse_docs_body("{\"docs\":[" + nested(9) + "]}", "docs", test_pick, 10, &why));
  CHECK(why == "JSON nests deeper than 10 levels ([couchdb] max_json_depth)");
  CHECK_FALSE(parse_docs_body("{\"docs\":[{\"a\":" + nested(8) + "}]}", "docs", test_pick, 10, &why));
  CHECK(parse_docs_body("{\"docs\":[{\"_a\":" + nested(7) + "}]}", "docs", test_pick, 10, &why)->docs[0].body);
  CHECK_FALSE(parse_docs_body("{\"docs\":[{\"_a\":" + nested(8) + "}]}", "docs", test_pick, 10, &why));
  auto many = parse_docs_body(wide + R"("docs":[{"a":1}]})", "docs", test_pick, 1000);
  REQUIRE(many);
  REQUIRE(many->docs.size() == 1);
  CHECK_FALSE(many->docs[0].body);
  CHECK(many->top.size() == 100);
  auto big = parse_docs_body(R"({"docs":[{"a":1},{"b":123456789012345678901234567890}]})", "docs", test_pick, 1000);
  REQUIRE(big);
  REQUIRE(big->docs.size() == 2);
  CHECK_FALSE(big->docs[0].body);
  CHECK(big->docs[1].doc["b"].is_number_float());
}
