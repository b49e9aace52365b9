#include "storage/seq_counts.hpp"

#include <cstddef>
#include <numeric>

namespace settee {

void seq_counts::add(uint64_t seq, int64_t delta) {
  std::size_t run = static_cast<std::size_t>(seq / span);
  if (run >= runs_.size()) runs_.resize(run + 1, 0);
  runs_[run] = static_cast<uint64_t>(static_cast<int64_t>(runs_[run]) + delta);
}

uint64_t seq_counts::after_run_of(uint64_t seq) const {
  std::size_t run = static_cast<std::size_t>(seq / span);
  if (run + 1 >= runs_.size()) return 0;
  return std::accumulate(runs_.begin() + static_cast<std::ptrdiff_t>(run + 1), runs_.end(), uint64_t{0});
}

uint64_t seq_counts::total() const {
  return std::accumulate(runs_.begin(), runs_.end(), uint64_t{0});
}

}  // namespace settee
