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

TEST_CASE("gzip streams: pieces in, the same bytes as the whole-buffer form out") {
  std::string text;
  for (int i = 0; i < 200000; ++i) text += "row " + std::to_string(i * 7919 % 100003) + "\n";
  // Compress in uneven pieces; the whole-buffer decoder reads it back.
  gzip::stream pack(gzip::stream::mode::compress, 6);
  std::string packed;
  for (size_t at = 0; at < text.size(); at += 70001)
    REQUIRE(pack.feed(std::string_view(text).substr(at, 70001), packed));
  REQUIRE(pack.finish(packed));
  CHECK(pack.total_out() == packed.size());
  auto back = gzip::decompress(packed, text.size());
  REQUIRE(back);
  CHECK(*back == text);
  // Decode in pieces (down to one byte at a time for a stretch).
  gzip::stream unpack(gzip::stream::mode::decompress, 0, text.size());
  std::string plain;
  size_t at = 0;
  for (; at < 1000; ++at) REQUIRE(unpack.feed(std::string_view(packed).substr(at, 1), plain));
  for (; at < packed.size(); at += 4096) REQUIRE(unpack.feed(std::string_view(packed).substr(at, 4096), plain));
  REQUIRE(unpack.finish(plain));
  CHECK(plain == text);
  // Truncated, trailing bytes, over the cap, not gzip.
  auto decode = [](const std::string& in, uint64_t cap) {
    gzip::stream z(gzip::stream::mode::decompress, 0, cap);
    std::string out;
    status st = z.feed(in, out);
    return st ? z.finish(out) : st;
  };
  CHECK(decode(packed, text.size()));
  CHECK(decode(packed.substr(0, packed.size() - 5), UINT64_MAX).code == errc::bad_request);
  CHECK(decode(packed + "junk", UINT64_MAX).code == errc::bad_request);
  CHECK(decode(packed, text.size() - 1).code == errc::too_large);
  CHECK(decode("plain text, not gzip", UINT64_MAX).code == errc::bad_request);
  CHECK(decode("", UINT64_MAX).code == errc::bad_request);
}
