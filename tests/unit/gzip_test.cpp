#include <doctest/doctest.h>

#include "node/gzip.hpp"

using namespace settee;

TEST_CASE("gzip round trip, and what decompress refuses") {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "line " + std::to_string(i) + "\n";
  std::string packed = gzip::compress(text, 6);
  CHECK(packed.size() < text.size() / 3);
  CHECK(static_cast<unsigned char>(packed[0]) == 0x1f);  // gzip magic, not a bare zlib stream
  auto back = gzip::decompress(packed, text.size());
  REQUIRE(back);
  CHECK(*back == text);
  auto empty = gzip::decompress(gzip::compress("", 1), 0);
  REQUIRE(empty);
  CHECK(empty->empty());

  auto over = gzip::decompress(packed, text.size() - 1);  // one byte over the cap
  REQUIRE(!over);
  CHECK(over.error().code == errc::too_large);
  auto truncated = gzip::decompress(packed.substr(0, packed.size() - 5), 1 << 20);
  REQUIRE(!truncated);
  CHECK(truncated.error().code == errc::bad_request);
  CHECK(!gzip::decompress(packed + "junk", 1 << 20));
  CHECK(!gzip::decompress("plain text", 1 << 20));
}
