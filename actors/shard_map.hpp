// shard_map: how a database's documents are spread over q ranges of the 32-bit hash ring.
// A document belongs to the range containing CRC32(doc id). Pure functions, no I/O.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace settee {

struct shard_range {
  uint32_t begin = 0;
  uint32_t end = 0xffffffff;  // inclusive

  // "00000000-7fffffff": 8 lowercase hex digits each side, as CouchDB names ranges.
  std::string name() const;
  bool contains(uint32_t h) const { return h >= begin && h <= end; }
  bool operator==(const shard_range& o) const { return begin == o.begin && end == o.end; }
  // Reads a name(); nullopt for anything else (or an empty range, end < begin).
  static std::optional<shard_range> parse(std::string_view name);
  // The two halves a split makes (CouchDB's mem3_util:range_split): nullopt for a range of one hash.
  std::optional<std::pair<shard_range, shard_range>> halves() const;
};

// q equal ranges covering the ring, the last one absorbing the remainder (CouchDB mem3 layout).
std::vector<shard_range> make_ranges(uint32_t q);

uint32_t hash_doc_id(std::string_view id);
// Where a document of a database goes: CRC32 of its id, or in a partitioned database of its
// partition (the id up to its first ':'; couch_partition:hash), so one partition is in one range.
// Ids starting with '_' (_design/, _local/) hash whole either way.
uint32_t placement_hash(std::string_view id, bool partitioned);
// The partition of `id` ("p" for "p:x"), or "" when it names none (no ':', or a reserved id).
std::string_view partition_of(std::string_view id);

// Index of the range that holds `hash`; ranges must cover the ring.
size_t range_index(const std::vector<shard_range>& ranges, uint32_t hash);

// Where the n copies of each of q ranges live. `nodes` are the cluster members, sorted; n is capped
// at their number (a node never holds two copies of one range). Copy k of range i goes to
// nodes[(offset + i*n + k) % N]: copies are dealt round-robin, so each node holds q*n/N copies (+-1),
// and `offset` (derived from the database name) spreads the databases too.
std::vector<std::vector<std::string>> place_copies(const std::vector<std::string>& nodes, uint32_t q, uint32_t n,
                                                   size_t offset);

}  // namespace settee
