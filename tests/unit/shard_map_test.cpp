#include <doctest/doctest.h>

#include <map>
#include <set>

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

TEST_CASE("copies of each range go to n distinct nodes, spread evenly over the cluster") {
  std::vector<std::string> nodes = {"a@h", "b@h", "c@h", "d@h", "e@h"};
  for (size_t offset : {0u, 3u, 17u}) {
    auto placed = place_copies(nodes, 8, 3, offset);
    REQUIRE(placed.size() == 8);
    std::map<std::string, int> per_node;
    for (auto& copies : placed) {
      REQUIRE(copies.size() == 3);
      CHECK(std::set<std::string>(copies.begin(), copies.end()).size() == 3);  // distinct
      for (auto& n : copies) ++per_node[n];
    }
    REQUIRE(per_node.size() == 5);
    for (auto& [node, count] : per_node) CHECK((count == 4 || count == 5));  // 24 copies over 5 nodes
  }
  // n above the number of nodes: one copy per node, never two on one node.
  auto capped = place_copies({"a@h", "b@h"}, 2, 3, 0);
  CHECK(capped[0] == std::vector<std::string>{"a@h", "b@h"});
  CHECK(capped[1] == std::vector<std::string>{"a@h", "b@h"});
  CHECK(place_copies({"solo@h"}, 3, 1, 7) == std::vector<std::vector<std::string>>(3, {"solo@h"}));
}

TEST_CASE("a partitioned database places a document by its partition, as couch_partition:hash") {
  CHECK(partition_of("p1:a") == "p1");
  CHECK(partition_of("p1:a:b") == "p1");
  CHECK(partition_of("nocolon") == "");
  CHECK(partition_of("_design/x:y") == "");
  CHECK(partition_of(":x") == "");
  // crc32("p1") = 0x3f386b33: every document of p1 hashes there, whatever follows the colon.
  CHECK(placement_hash("p1:a", true) == 0x3f386b33u);
  CHECK(placement_hash("p1:zzzz", true) == 0x3f386b33u);
  CHECK(placement_hash("p1:a", false) == hash_doc_id("p1:a"));
  CHECK(placement_hash("_design/p1:a", true) == hash_doc_id("_design/p1:a"));
  CHECK(placement_hash("_local/x", true) == hash_doc_id("_local/x"));
}
