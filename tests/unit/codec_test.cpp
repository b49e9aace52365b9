#include <doctest/doctest.h>

#include "storage/codec.hpp"

using namespace settee;

TEST_CASE("varints and strings round-trip") {
  codec::writer w;
  const uint64_t values[] = {0, 1, 127, 128, 300, 1ull << 32, ~0ull};
  for (auto v : values) w.varint(v);
  w.str("hello");
  w.str(std::string("\0bin\xff", 5));
  w.byte(7);
  codec::reader r(w.data());
  for (auto v : values) {
    uint64_t got = 0;
    REQUIRE(r.varint(got));
    CHECK(got == v);
  }
  std::string s;
  REQUIRE(r.str(s));
  CHECK(s == "hello");
  REQUIRE(r.str(s));
  CHECK(s == std::string("\0bin\xff", 5));
  uint8_t b = 0;
  REQUIRE(r.byte(b));
  CHECK(b == 7);
  CHECK(r.done());
}

TEST_CASE("truncated and malformed input is rejected, never over-read") {
  codec::writer w;
  w.str("abcdef");
  std::string bytes = w.data();
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    codec::reader r(std::string_view(bytes).substr(0, cut));
    std::string s;
    CHECK_FALSE(r.str(s));
  }
  std::string eleven(11, '\xff');
  codec::reader r(eleven);
  uint64_t v;
  CHECK_FALSE(r.varint(v));
}

TEST_CASE("seq keys sort numerically as bytes") {
  CHECK(codec::seq_key(1) < codec::seq_key(2));
  CHECK(codec::seq_key(255) < codec::seq_key(256));
  CHECK(codec::seq_key(1ull << 40) > codec::seq_key((1ull << 40) - 1));
  uint64_t back = 0;
  REQUIRE(codec::parse_seq_key(codec::seq_key(123456789), back));
  CHECK(back == 123456789);
  CHECK_FALSE(codec::parse_seq_key("short", back));
}
