// CouchDB's view collation as byte-comparable keys (node/collation): golden orders from
// CouchDB's own specification (its docs' "Collation Specification", view_collation.js) and from a
// running CouchDB 3.5 (shared/spec/http_api.md), numbers of every size, unicode and nesting.
#include "node/collation.hpp"

#include <doctest/doctest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

using namespace settee;

namespace {

// Every key strictly before the next one, and each equal to itself; also in every other pairing.
void check_strictly_ordered(const std::vector<json>& keys) {
  std::vector<std::string> sk;
  for (const auto& k : keys) sk.push_back(collation::sort_key(k));
  for (size_t i = 0; i < keys.size(); ++i) {
    for (size_t j = 0; j < keys.size(); ++j) {
      const int want = i < j ? -1 : i > j ? 1 : 0;
      const int got = sk[i] < sk[j] ? -1 : sk[i] > sk[j] ? 1 : 0;
      CHECK_MESSAGE(got == want, keys[i].dump(), " vs ", keys[j].dump());
    }
  }
}

std::vector<json> parse_all(const std::vector<std::string>& texts) {
  std::vector<json> out;
  for (const auto& t : texts) out.push_back(json::parse(t));
  return out;
}

}  // namespace

TEST_CASE("collation: CouchDB's specification (view_collation.js), in order") {
  check_strictly_ordered(parse_all({
      "null",
      "false",
      "true",  // special values first
      "1",
      "2",
      "3.0",
      "4",  // then numbers
      "\"a\"",
      "\"A\"",
      "\"aa\"",
      "\"b\"",
      "\"B\"",
      "\"ba\"",
      "\"bb\"",  // text, case second
      "[\"a\"]",
      "[\"b\"]",
      "[\"b\",\"c\"]",
      "[\"b\",\"c\",\"a\"]",
      "[\"b\",\"d\"]",
      "[\"b\",\"d\",\"e\"]",
      "{\"a\":1}",
      "{\"a\":2}",
      "{\"b\":1}",
      "{\"b\":2}",
      "{\"b\":2,\"a\":1}",
      "{\"b\":2,\"c\":2}",
  }));
}

TEST_CASE("collation: the order a running CouchDB 3.5 gives (shared/spec/http_api.md)") {
  check_strictly_ordered(parse_all({"null", "false", "true", "-1", "0", "1.5", "2", "\"a\"", "\"A\"", "\"aa\"", "\"b\"",
                                    "\"B\"", "\"\\u00e9\"", "[\"a\"]", "[\"a\",1]", "{\"k\":1}"}));
}

TEST_CASE("collation: strings by the Unicode Collation Algorithm, as CouchDB's docs show") {
  // "abc < Abc < ABC < abc1 < AbcZZZZZ" (docs: Key ranges), and \ufff0 after any letters.
  check_strictly_ordered(parse_all({"\"abc\"", "\"Abc\"", "\"ABC\"", "\"abc1\"", "\"AbcZZZZZ\"", "\"abc\\ufff0\""}));
  // The docs' sequence of 7-bit ASCII: symbols before digits before letters (even ~, 0x7e), a
  // letter's lower case before its upper case. (The docs put ` and ^ first, as the older ICU they were
  // written with did; Debian 12's ICU 72, which a CouchDB 3 built there uses, puts them among the
  // symbols after & # % and before +.)
  std::vector<json> ascii;
  for (char ch : std::string("_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789")) ascii.push_back(std::string(1, ch));
  for (char ch = 'a'; ch <= 'z'; ++ch) {
    ascii.push_back(std::string(1, ch));
    ascii.push_back(std::string(1, static_cast<char>(ch - 'a' + 'A')));
  }
  check_strictly_ordered(ascii);
  CHECK(collation::compare("A", "aa") < 0);
  CHECK(collation::compare("a", "AA") < 0);
  // Accents are a secondary difference: after the base letter, before the next one.
  check_strictly_ordered(parse_all({"\"e\"", "\"E\"", "\"\\u00e9\"", "\"\\u00c9\"", "\"f\""}));
  // Canonically equivalent strings are equal (é precomposed and e + combining acute).
  CHECK(collation::compare("\u00e9", "e\u0301") == 0);
  // Beyond Latin: scripts in the UCA's order; the empty string first of all strings.
  check_strictly_ordered(parse_all({"\"\"", "\"z\"", "\"\\u03b1\"", "\"\\u0430\"", "\"\\u05d0\"", "\"\\u4e00\""}));
}

TEST_CASE("collation: numbers by value, of every size") {
  check_strictly_ordered(parse_all({"-1.7976931348623157e308",
                                    "-9223372036854775808",
                                    "-9007199254740993",
                                    "-9007199254740992",
                                    "-1e15",
                                    "-2.5",
                                    "-1",
                                    "-0.5",
                                    "-5e-324",
                                    "0",
                                    "5e-324",
                                    "1e-300",
                                    "0.1",
                                    "1",
                                    "1.0000000000000002",
                                    "2",
                                    "9007199254740992",
                                    "9007199254740993",
                                    "9007199254740994",
                                    "9223372036854775807",
                                    "18446744073709551615",
                                    "1e20",
                                    "1.7976931348623157e308"}));
  // Equal values are equal keys, whatever their text.
  CHECK(collation::compare(json::parse("1"), json::parse("1.0")) == 0);
  CHECK(collation::compare(json::parse("0"), json::parse("-0.0")) == 0);
  CHECK(collation::compare(json::parse("100"), json::parse("1e2")) == 0);
  CHECK(collation::compare(json::parse("9007199254740992"), json::parse("9007199254740992.0")) == 0);
  CHECK(collation::compare(json::parse("[1,\"a\"]"), json::parse("[1.0,\"a\"]")) == 0);
}

TEST_CASE("collation: arrays and objects nest, a prefix first, members in stored order") {
  check_strictly_ordered(parse_all({"[]",
                                    "[null]",
                                    "[false]",
                                    "[1]",
                                    "[1,null]",
                                    "[1,1]",
                                    "[1,[]]",
                                    "[1,{}]",
                                    "[2]",
                                    "[\"a\"]",
                                    "[\"a\",[\"b\"]]",
                                    "[\"a\",[\"b\",\"c\"]]",
                                    "[\"a\",{\"x\":1}]",
                                    "[[]]",
                                    "[[null]]",
                                    "[{}]",
                                    "{}",
                                    "{\"a\":null}",
                                    "{\"a\":[]}",
                                    "{\"a\":{}}",
                                    "{\"a\":{},\"b\":1}",
                                    "{\"b\":null}"}));
  // Member order is part of the key, as CouchDB keeps it.
  CHECK(collation::compare(json::parse("{\"a\":1,\"b\":2}"), json::parse("{\"b\":2,\"a\":1}")) < 0);
  // startkey=["foo"]&endkey=["foo",{}] holds every ["foo", <not an object>].
  const std::string lo = collation::sort_key(json::parse("[\"foo\"]"));
  const std::string hi = collation::sort_key(json::parse("[\"foo\",{}]"));
  for (const char* k : {"[\"foo\",\"bar\"]", "[\"foo\",[\"bar\",\"baz\"]]", "[\"foo\",99]", "[\"foo\",null]"}) {
    const std::string s = collation::sort_key(json::parse(k));
    CHECK_MESSAGE((lo < s && s < hi), k);
  }
  CHECK(collation::sort_key(json::parse("[\"foo\",{\"an\":\"object\"}]")) > hi);
}

namespace {

// A random value of `atoms`, arrays and objects nested up to 3 deep, each of fewer than `width`
// members.
json random_value(std::mt19937& rng, const std::vector<json>& atoms, unsigned width, int depth = 0) {
  const int pick = static_cast<int>(rng() % (depth > 2 ? 1 : 3));
  if (pick == 0) return atoms[rng() % atoms.size()];
  json v = pick == 1 ? json::array() : json::object();
  for (int i = 0, n = static_cast<int>(rng() % width); i < n; ++i) {
    if (pick == 1)
      v.push_back(random_value(rng, atoms, width, depth + 1));
    else
      v[std::string(1, static_cast<char>('a' + rng() % 3))] = random_value(rng, atoms, width, depth + 1);
  }
  return v;
}

}  // namespace

TEST_CASE("collation: sort keys agree with pairwise comparison on random values") {
  std::mt19937 rng(42);
  std::vector<json> atoms =
      parse_all({"null", "true", "false", "0", "-3", "2.5", "1e10", "\"\"", "\"a\"", "\"B\"", "\"\\u00e9\"", "\"b1\""});
  std::vector<json> values;
  for (int i = 0; i < 300; ++i) values.push_back(random_value(rng, atoms, 3));
  // Antisymmetric and transitive: sorting by key never puts a later-comparing value first.
  std::sort(values.begin(), values.end(), [](const json& a, const json& b) { return collation::compare(a, b) < 0; });
  for (size_t i = 1; i < values.size(); ++i) {
    CHECK(collation::compare(values[i - 1], values[i]) <= 0);
    CHECK(collation::compare(values[i], values[i - 1]) >= 0);
  }
}

TEST_CASE("collation: invalid UTF-8 orders as U+FFFD; the collator has a version") {
  CHECK(collation::compare(json(std::string("a\xff")), json("a\xef\xbf\xbd")) == 0);
  CHECK(!collation::collator_version().empty());
}

TEST_CASE("collation: a sort key's length and its group's bytes, as CouchDB's group_level groups") {
  std::mt19937 rng(7);
  std::vector<json> atoms = parse_all({"null", "true", "false", "0", "-3", "2.5", "9007199254740993", "\"\"", "\"a\"",
                                       "\"A\"", "\"\\u00e9\"", "\"b1\""});
  // CouchDB's group key (couch_mrview_util's group_level fun) of `v` at `level`.
  auto group_key = [](const json& v, int64_t level) -> json {
    if (level < 0) return v;
    if (level == 0) return nullptr;
    if (!v.is_array() || v.size() <= static_cast<size_t>(level)) return v;
    return json(v.begin(), v.begin() + level);
  };
  std::vector<json> values;
  for (int i = 0; i < 400; ++i) values.push_back(random_value(rng, atoms, 4));
  for (const json& v : values) {
    const std::string k = collation::sort_key(v);
    CHECK(collation::value_length(k) == k.size());
    CHECK(collation::value_length(k + "\x10\x40tail") == k.size());  // a position goes on after it
    CHECK(collation::value_length(k.substr(0, k.size() - 1)) == std::string_view::npos);
  }
  CHECK(collation::value_length("") == std::string_view::npos);
  CHECK(collation::value_length(std::string(1, '\0')) == std::string_view::npos);
  CHECK(collation::value_length("\x7f") == std::string_view::npos);
  std::sort(values.begin(), values.end(), [](const json& a, const json& b) { return collation::compare(a, b) < 0; });
  for (int64_t level : {-1, 0, 1, 2, 3}) {
    std::set<std::string> seen;  // the groups met so far: a group's keys are consecutive
    std::string last;
    for (size_t i = 0; i < values.size(); ++i) {
      const std::string k = collation::sort_key(values[i]);
      const size_t n = collation::group_length(k, level);
      REQUIRE(n != std::string_view::npos);
      const std::string id = k.substr(0, n);
      if (i > 0 && id != last) CHECK(seen.insert(last).second);
      CHECK(seen.count(id) == 0);
      last = id;
      // Two keys share the group bytes exactly when CouchDB's group keys collate equal.
      for (size_t j = i + 1; j < values.size() && j < i + 8; ++j) {
        const std::string kj = collation::sort_key(values[j]);
        const bool same = kj.substr(0, collation::group_length(kj, level)) == id;
        CHECK(same == (collation::compare(group_key(values[i], level), group_key(values[j], level)) == 0));
      }
    }
  }
}
