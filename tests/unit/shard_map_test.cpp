#include <doctest/doctest.h>

#include "actors/shard_map.hpp"

using namespace settee;

TEST_CASE("ranges cover the ring without gaps and are named like CouchDB's") {
  auto two = make_ranges(2);
  REQUIRE(two.size() == 2);
  CHECK(two[0].name() == "00000000-7fffffff");
  CHECK(two[1].name() == "80000000-ffffffff");
  for (uint32_t q : {1u, 3u, 7u, 16u}) {
    auto rs = make_ranges(q);
    CHECK(rs.front().begin == 0);
    CHECK(rs.back().end == 0xffffffff);
    for (size_t i = 1; i < rs.size(); ++i) CHECK(rs[i].begin == rs[i - 1].end + 1);
  }
}

TEST_CASE("doc ids route by CRC32 to the range containing the hash") {
  CHECK(hash_doc_id("") == 0);
  CHECK(hash_doc_id("123456789") == 0xcbf43926u);  // the CRC-32 check value
  auto rs = make_ranges(4);
  for (const char* id : {"a", "b", "doc-1", "zzz", "123456789"}) {
    uint32_t h = hash_doc_id(id);
    CHECK(rs[range_index(rs, h)].contains(h));
  }
  CHECK(range_index(rs, 0) == 0);
  CHECK(range_index(rs, 0xffffffff) == 3);
}
