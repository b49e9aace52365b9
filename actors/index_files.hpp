// index_files: what a shard copy's secondary indexes (views, full-text) share as files beside it:
// one per index signature (<data>/.shard_views/<copy>/<signature><suffix>: ".view" files,
// ".search" directories), which of them no design document names any more (_view_cleanup and
// its kin), and what the copy's purge requests (issue 35) ask of an index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "node/error.hpp"
#include "storage/shard_store.hpp"

namespace settee {

// What an index that applied its copy's purge requests up to `done` must do now.
struct index_purges {
  enum class step {
    none,     // nothing new
    record,   // nothing indexed yet: only the copy's purge seq to record
    rebuild,  // the copy forgot requests the index never applied (_purged_infos_limit): start again
    remove,   // remove `gone` (purged, no longer in the copy) and record the purge seq
  } what = step::none;
  uint64_t purge_seq = 0;  // the copy's
  std::vector<std::string> gone;
};
// Read from the copy's snapshot; `indexed_any`: the index holds something (its seq is not 0).
result<index_purges> purges_after(const shard_store::snapshot& snap, uint64_t done, bool indexed_any);

// The paths in `dir` named <signature><suffix> whose signature is not in `keep` (none when `dir`
// is missing).
std::vector<std::string> stale_indexes(const std::string& dir, const std::string& suffix,
                                       const std::vector<std::string>& keep);

}  // namespace settee
