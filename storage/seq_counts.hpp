// seq_counts: how many by-seq entries (one per document, at its latest seq) fall in each run of
// `span` consecutive seqs. The changes after a seq (a `_changes` page's `pending`) are then the sum
// of the runs above that seq's run plus a scan of at most `span` entries, instead of a scan of
// every later change: a page at the start of a 1,000,000-document feed took 25 ms, most of it
// counting (CouchDB counts with its by-seq B-tree's reductions).
// A value that copies cheaply: runs are held in chunks shared between copies, and add() copies
// only the chunk it changes, so a version per commit (shard_store.hpp) costs the chunks the commit
// touched, not the whole history. Thread-safety: a copy may be read by any thread while another
// copy is changed.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace settee {

class seq_counts {
 public:
  static constexpr uint64_t span = 1024;

  seq_counts() = default;
  seq_counts(const seq_counts& o) : chunks_(o.chunks_) {}  // shares every chunk, owns none
  seq_counts& operator=(const seq_counts&) = delete;

  // An entry at `seq` came (+1) or went (-1).
  void add(uint64_t seq, int64_t delta);
  // Entries in the runs after the one that holds `seq`.
  uint64_t after_run_of(uint64_t seq) const;
  uint64_t total() const { return after_run_of(0) + run(0); }
  // The last seq of the run that holds `seq`.
  static uint64_t run_end(uint64_t seq) { return (seq / span + 1) * span - 1; }

 private:
  static constexpr size_t chunk_runs = 256;
  using chunk = std::array<uint64_t, chunk_runs>;
  uint64_t run(size_t i) const;
  std::vector<std::shared_ptr<const chunk>> chunks_;  // run i is chunks_[i / chunk_runs][i % chunk_runs]
  std::vector<std::shared_ptr<chunk>> mine_;          // the chunks this copy made (no other copy holds them)
};

}  // namespace settee
