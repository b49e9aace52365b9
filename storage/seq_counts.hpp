// seq_counts: how many by-seq entries (one per document, at its latest seq) fall in each run of
// `span` consecutive seqs. The changes after a seq (a `_changes` page's `pending`) are then the sum
// of the runs above that seq's run plus a scan of at most `span` entries, instead of a scan of
// every later change: a page at the start of a 1,000,000-document feed took 25 ms, most of it
// counting (CouchDB counts with its by-seq B-tree's reductions).
// A plain value: shard_store keeps one immutable version per commit (shard_store.hpp).
#pragma once
#include <cstdint>
#include <vector>

namespace settee {

class seq_counts {
 public:
  static constexpr uint64_t span = 1024;

  // An entry at `seq` came (+1) or went (-1).
  void add(uint64_t seq, int64_t delta);
  // Entries in the runs after the one that holds `seq`.
  uint64_t after_run_of(uint64_t seq) const;
  uint64_t total() const;
  // The last seq of the run that holds `seq`.
  static uint64_t run_end(uint64_t seq) { return (seq / span + 1) * span - 1; }

 private:
  std::vector<uint64_t> runs_;  // runs_[i]: entries with seq / span == i
};

}  // namespace settee
