// seq_counts: counts by runs of seqs against a plain map, and copies that share chunks.
#include <doctest/doctest.h>

#include <map>
#include <random>

#include "storage/seq_counts.hpp"

using namespace settee;

namespace {

uint64_t after(const std::map<uint64_t, int64_t>& entries, uint64_t seq) {  // entries past seq's run
  uint64_t n = 0;
  for (auto& [s, count] : entries)
    if (s > seq_counts::run_end(seq)) n += static_cast<uint64_t>(count);
  return n;
}

}  // namespace

TEST_CASE("seq_counts: runs summed past a seq's run, over many chunks, against a plain count") {
  std::mt19937_64 rng(54);
  seq_counts c;
  std::map<uint64_t, int64_t> entries;
  for (int i = 0; i < 5000; ++i) {
    uint64_t seq = rng() % 700000;  // ~680 runs: three chunks of 256
    if (entries[seq] > 0 && rng() % 3 == 0) {
      c.add(seq, -1);
      --entries[seq];
    } else {
      c.add(seq, +1);
      ++entries[seq];
    }
  }
  for (uint64_t seq : {uint64_t{0}, uint64_t{1023}, uint64_t{1024}, uint64_t{262143}, uint64_t{262144},
                       uint64_t{699999}, uint64_t{800000}, static_cast<uint64_t>(rng() % 700000)}) {
    CAPTURE(seq);
    CHECK(c.after_run_of(seq) == after(entries, seq));
  }
  CHECK(c.total() == after(entries, 0) + [&] {
    uint64_t n = 0;
    for (auto& [s, count] : entries)
      if (s <= seq_counts::run_end(0)) n += static_cast<uint64_t>(count);
    return n;
  }());
}

TEST_CASE("seq_counts: a copy changes on its own; the original keeps its counts") {
  seq_counts a;
  for (uint64_t s = 0; s < 600000; s += 1000) a.add(s, +1);  // 600 entries over three chunks
  const uint64_t before = a.total();
  seq_counts b(a);
  b.add(5, -1);
  b.add(300000, +1);
  b.add(2000000, +1);  // a chunk the original does not have
  CHECK(a.total() == before);
  CHECK(b.total() == before + 1);
  CHECK(a.after_run_of(1000000) == 0);
  CHECK(b.after_run_of(1000000) == 1);
  seq_counts c(b);  // a copy of a copy that had made chunks of its own
  c.add(300000, -1);
  CHECK(b.after_run_of(0) == c.after_run_of(0) + 1);
}
