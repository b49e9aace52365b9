// shard_header: the in-memory view of schema/shard_header.capnp plus its (de)serialisation.
// Unknown (newer) fields survive a rewrite: encode() starts from the previous raw header bytes.
// Pure value type, no I/O.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "storage/time_seq.hpp"

namespace settee {

struct shard_header {
  // 1: every file. 2 (0.3): a catalog that holds a split database's lineage; releases before 0.3
  // would route its documents by `q` alone, so a format-2 header ends with a 4-byte trailer they
  // refuse to decode (they stop at start: "<file>: unreadable header"), while 0.3 strips it.
  // 3 (0.4): a catalog that holds a partitioned database; 0.3 would place its documents by their
  // whole id, so it must refuse the directory (it reads formats up to 2).
  static constexpr uint32_t current_format = 3;
  static constexpr uint32_t split_catalog_format = 2;
  static constexpr uint32_t partitioned_catalog_format = 3;

  uint32_t format_version = 1;
  std::string shard_uuid;
  std::vector<std::pair<std::string, uint64_t>> epochs;  // (node, first seq)
  uint64_t update_seq = 0;
  uint32_t revs_limit = 1000;
  std::string security;
  uint64_t doc_count = 0;
  uint64_t doc_del_count = 0;
  int64_t created_at = 0;
  uint64_t external_size = 0;
  time_seq::tseq time_seq;             // release 0.2 (@10); empty when absent or of an unknown version
  bool sealed = false;                 // release 0.3 (@11): a shard move's source, sealed until the map switches
  uint64_t purge_seq = 0;              // release 0.4 (@12): purge requests applied to this copy
  uint32_t purged_infos_limit = 1000;  // release 0.4 (@13): purge requests kept (_purged_infos_limit)

  // Decodes `bytes`; false when they are not a valid header.
  static bool decode(const std::string& bytes, shard_header& out);
  // Encodes this header. `previous` (may be empty) are the raw bytes it was read from, so fields
  // this binary does not know are carried over unchanged.
  std::string encode(const std::string& previous) const;
};

}  // namespace settee
