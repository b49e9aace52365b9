#include <doctest/doctest.h>

#include "node/config.hpp"
#include "temp_dir.hpp"

using namespace settee;

TEST_CASE("ini parsing: sections, comments, unknown keys kept") {
  auto c = config::parse("; comment\n[log]\nlevel = warning\n\n[future]\nthing = 1 ; trailing\n# x\n");
  REQUIRE(c.ok());
  CHECK(c->get("log", "level") == "warning");
  CHECK(c->get("future", "thing") == "1");
  CHECK(c->get_int("future", "thing", 0) == 1);
  CHECK(c->get("nope", "x", "def") == "def");
  CHECK(c->get_int("log", "level", 7) == 7);  // not a number: default
}

TEST_CASE("ini errors name the line") {
  auto c = config::parse("[a]\nx = 1\nnot a pair\n");
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().reason.find(":3:") != std::string::npos);
  CHECK_FALSE(config::parse("key = before section\n").ok());
  CHECK_FALSE(config::parse("[unterminated\n").ok());
}

TEST_CASE("save and load round-trip; merge lets the later layer win") {
  temp_dir dir;
  config a;
  a.set("s", "k", "1");
  a.set("s", "j", "x");
  REQUIRE(a.save_file(dir.path + "/a.ini"));
  auto b = config::load_file(dir.path + "/a.ini");
  REQUIRE(b.ok());
  CHECK(b->get("s", "j") == "x");
  config over;
  over.set("s", "k", "2");
  b->merge(over);
  CHECK(b->get("s", "k") == "2");
  CHECK(b->get("s", "j") == "x");
  CHECK_FALSE(config::load_file(dir.path + "/missing.ini").ok());
}

TEST_CASE("with_value replaces one key's value in place, keeping everything else") {
  const std::string text =
      "; the operator's notes\n[chttpd]\nport = 5984\n\n[admins]\n; first admin\n  admin = plain ; old\nother = x\n"
      "[other]\nadmin = untouched";
  std::string out = config::with_value(text, "admins", "admin", "-pbkdf2:sha256-aa,bb,1");
  CHECK(out ==
        "; the operator's notes\n[chttpd]\nport = 5984\n\n[admins]\n; first admin\n  admin = -pbkdf2:sha256-aa,bb,1\n"
        "other = x\n[other]\nadmin = untouched");
  CHECK(config::parse(out)->get("admins", "admin") == "-pbkdf2:sha256-aa,bb,1");
  CHECK(config::parse(out)->get("other", "admin") == "untouched");
  CHECK(config::with_value(text, "admins", "nobody", "v") == text);
  CHECK(config::with_value("[a]\nk=1\n", "a", "k", "2") == "[a]\nk = 2\n");
}
