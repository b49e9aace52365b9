// shard_map: how a database's documents are spread over q ranges of the 32-bit hash ring.
// A document belongs to the range containing CRC32(doc id). Pure functions, no I/O.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace settee {

struct shard_range {
  uint32_t begin = 0;
  uint32_t end = 0xffffffff;  // inclusive

  // "00000000-7fffffff": 8 lowercase hex digits each side, as CouchDB names ranges.
  std::string name() const;
  bool contains(uint32_t h) const { return h >= begin && h <= end; }
};

// q equal ranges covering the ring, the last one absorbing the remainder (CouchDB mem3 layout).
std::vector<shard_range> make_ranges(uint32_t q);

uint32_t hash_doc_id(std::string_view id);

// Index of the range that holds `hash`; ranges must cover the ring.
size_t range_index(const std::vector<shard_range>& ranges, uint32_t hash);

}  // namespace settee
