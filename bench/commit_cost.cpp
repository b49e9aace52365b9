// What time-seq costs a commit, measured below HTTP so the difference is not lost in its noise:
// real LMDB shard files in a temp dir, every commit fsynced, one small document per commit (the
// worst case: time-seq's share is largest when a commit carries the least work).
//
//   settee_commit_cost [--rounds R] [--commits K] [--dir DIR]
//
// Four stores with the same history (the same commits at the same times before the measurement),
// written in turn within each round so they see the same disk weather:
//   off       [time_seq] enabled=false, no bins (a commit as v0.1.0 made it)
//   off-2     the same as off: the control, whose ratio to off is the noise floor
//   on        60 full bins, commits in the newest bin (the usual case: a bin spans 3 hours)
//   on-roll   60 full bins, every commit 3 hours after the last (rolls bins up on every commit)
// Short rounds, many of them: the disk's speed drifts by more than the effect, so each round's
// ratio to `off` (written moments apart) is the paired measure, and its median over the rounds
// is the figure to quote. Prints each round, the medians, then the CPU time of the time-seq work
// alone (update + the larger header encoding), without I/O.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/bench_args.hpp"
#include "storage/shard_store.hpp"

using namespace settee;
using steady = std::chrono::steady_clock;

namespace {

constexpr int64_t start_time = 1800000000;  // after the default min_time, 3h-aligned

struct store {
  const char* name;
  std::shared_ptr<shard_store> s;
  int64_t now;   // the clock this store's commits see
  int64_t step;  // seconds the clock moves per commit
  uint64_t next_id = 0;
  std::vector<double> rates;
  std::vector<double> ratios;  // this round's rate / off's rate in the same round
};

bool commit_one(store& st) {
  write_op op;
  doc_update u;
  u.id = "doc-" + std::to_string(st.next_id++);
  u.body = R"({"type":"reading","value":42,"note":"one small document per fsynced commit"})";
  op.docs.push_back(std::move(u));
  st.now += st.step;
  return st.s->commit({&op}, st.now) && op.st && op.results[0].st;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A shard that has lived for years: commits at growing time steps, enough to fill all 60 bins of a
// store that records them.
constexpr int history_commits = 1200;
bool make_history(store& st) {
  for (int i = 0; i < history_commits; ++i) {
    st.step = time_seq::resolution * (1 + i / 4);
    if (!commit_one(st)) return false;
  }
  return true;
}

template <class F>
double ns_per_call(int n, F&& f) {
  auto t0 = steady::now();
  for (int i = 0; i < n; ++i) f(i);
  return std::chrono::duration<double, std::nano>(steady::now() - t0).count() / n;
}

}  // namespace

int main(int argc, char** argv) {
  bench::bench_args args;
  args.rounds = 41;
  args.commits = 200;
  if (!args.parse(argc, argv, {}, "usage: settee_commit_cost [--rounds R] [--commits K] [--dir DIR]",
                  "settee-commit-cost"))
    return 2;
  const int rounds = args.rounds, commits = args.commits;
  const std::string& dir = args.dir;
  auto open = [&](const char* name, bool enabled) -> std::shared_ptr<shard_store> {
    store_options o;
    o.map_size_bytes = 1ull << 30;
    o.time_seq_enabled = enabled;
    auto s = shard_store::open(dir + "/" + name + ".db", o);
    if (!s.ok()) {
      std::fprintf(stderr, "cannot open %s: %s\n", name, s.error().reason.c_str());
      std::exit(1);
    }
    return *s;
  };
  std::vector<store> stores(4);
  stores[0] = {"off", open("off", false), start_time, 0, 0, {}, {}};
  stores[1] = {"off-2", open("off-2", false), start_time, 0, 0, {}, {}};
  stores[2] = {"on", open("on", true), start_time, 0, 0, {}, {}};
  stores[3] = {"on-roll", open("on-roll", true), start_time, 0, 0, {}, {}};
  for (auto& st : stores) {
    if (!make_history(st)) return std::fprintf(stderr, "could not write the history of %s\n", st.name), 1;
    st.step = 0;  // stays in its newest bin
  }
  if (stores[2].s->header().time_seq.bins.size() != time_seq::max_bins) {
    return std::fprintf(stderr, "the history did not fill the bins\n"), 1;
  }
  stores[3].step = time_seq::resolution;  // a new bin every commit
  std::printf("settee commit cost: %d rounds x %d fsynced one-document commits per store, in %s\n", rounds, commits,
              dir.c_str());
  for (int r = 0; r < rounds; ++r) {
    std::printf("  round %d:", r + 1);
    for (size_t k = 0; k < stores.size(); ++k) {
      store& st = stores[(k + r) % stores.size()];  // rotate who goes first
      auto t0 = steady::now();
      for (int c = 0; c < commits; ++c) {
        if (!commit_one(st)) return std::fprintf(stderr, "commit failed in %s\n", st.name), 1;
      }
      st.rates.push_back(commits / std::chrono::duration<double>(steady::now() - t0).count());
      std::printf(" %s=%.0f", st.name, st.rates.back());
    }
    std::printf("\n");
    for (auto& st : stores) st.ratios.push_back(st.rates.back() / stores[0].rates.back());
  }
  for (auto& st : stores) {
    std::printf("%-8s median %7.0f commits/s  median paired ratio to off %.3f  header %zu bytes, %zu bins\n", st.name,
                median(st.rates), median(st.ratios), st.s->header().encode({}).size(),
                st.s->header().time_seq.bins.size());
  }
  // The time-seq work alone, no I/O: what a commit adds in CPU.
  shard_header full = stores[2].s->header(), empty = stores[0].s->header();
  time_seq::tseq t = full.time_seq;
  int64_t when = stores[2].now;
  double same_bin = ns_per_call(1000000, [&](int i) { time_seq::update(t, when, full.update_seq + i); });
  time_seq::tseq rolling = full.time_seq;
  double new_bin = ns_per_call(
      100000, [&](int i) { time_seq::update(rolling, when + (i + 1) * time_seq::resolution, full.update_seq + i); });
  size_t sink = 0;
  double enc_full = ns_per_call(100000, [&](int) { sink += full.encode({}).size(); });
  double enc_empty = ns_per_call(100000, [&](int) { sink += empty.encode({}).size(); });
  std::printf(
      "cpu: update same bin %.0f ns, update new bin %.0f ns, header encode %.0f ns with 60 bins vs %.0f ns "
      "without (%zu)\n",
      same_bin, new_bin, enc_full, enc_empty, sink % 10);
  stores.clear();
  return 0;
}
