#include "storage/seq_counts.hpp"

#include <cstddef>
#include <numeric>

namespace settee {

void seq_counts::add(uint64_t seq, int64_t delta) {
  const std::size_t i = static_cast<std::size_t>(seq / span), c = i / chunk_runs;
  if (c >= chunks_.size()) chunks_.resize(c + 1);
  if (c >= mine_.size()) mine_.resize(c + 1);
  if (!mine_[c]) {  // another copy may hold it: change a copy of its own
    mine_[c] = chunks_[c] ? std::make_shared<chunk>(*chunks_[c]) : std::make_shared<chunk>(chunk{});
    chunks_[c] = mine_[c];
  }
  uint64_t& n = (*mine_[c])[i % chunk_runs];
  n = static_cast<uint64_t>(static_cast<int64_t>(n) + delta);
}

uint64_t seq_counts::run(std::size_t i) const {
  const std::size_t c = i / chunk_runs;
  return c < chunks_.size() && chunks_[c] ? (*chunks_[c])[i % chunk_runs] : 0;
}

uint64_t seq_counts::after_run_of(uint64_t seq) const {
  const std::size_t i = static_cast<std::size_t>(seq / span), c = i / chunk_runs;
  if (c >= chunks_.size()) return 0;
  uint64_t n = 0;
  if (chunks_[c])
    n = std::accumulate(chunks_[c]->begin() + static_cast<std::ptrdiff_t>(i % chunk_runs + 1), chunks_[c]->end(),
                        uint64_t{0});
  for (std::size_t k = c + 1; k < chunks_.size(); ++k) {
    if (chunks_[k]) n = std::accumulate(chunks_[k]->begin(), chunks_[k]->end(), n);
  }
  return n;
}

}  // namespace settee
