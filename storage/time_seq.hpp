// time_seq: CouchDB's time-seq structure (spec/time_seq.md sections 1-4): up to 60 bins mapping a
// 3-hour-aligned start time to the update seq the shard had when that bin began, youngest first.
// Old bins roll up into exponentially longer ones, so a few kilobytes cover centuries.
// Pure: no I/O, no clock (callers pass the time), no JSON. Plain values, cheap to copy (a shard
// split or move copies the whole struct).
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace settee::time_seq {

constexpr size_t max_bins = 60;
constexpr int64_t hour = 3600, day = 86400, month = 30 * day, year = 365 * day;
// Merge intervals, shortest first; the first is the resolution of a bin.
constexpr std::array<int64_t, 12> intervals = {3 * hour,  6 * hour, 12 * hour, day,      10 * day, month,
                                               6 * month, year,     2 * year,  4 * year, 8 * year, 16 * year};
constexpr int64_t resolution = intervals[0];
constexpr uint32_t version = 1;
constexpr int64_t default_min_time = 1754006400;  // 2025-08-01T00:00:00Z

struct bin {
  int64_t time = 0;  // bin start, Unix seconds, a multiple of `resolution`
  uint64_t seq = 0;  // the update seq when the bin began: everything after it came at or after `time`
  bool operator==(const bin& o) const { return time == o.time && seq == o.seq; }
};

struct tseq {
  uint32_t v = version;
  std::vector<bin> bins;  // youngest first
  // What a reset forgot (settee's own, not CouchDB's): changes up to `reset_seq` were committed
  // before `reset_until` (Unix seconds, exclusive). 0/0 when the bins were never reset.
  uint64_t reset_seq = 0;
  int64_t reset_until = 0;
  // A shard split's lineage (settee's own): a child keeps its parent's bins (the seed: the structure
  // is preserved, so since=<time> stays right), and with them the parent's numbering up to
  // `inherited_seq` (0: not made by a split). Every change is counted once for the database by the
  // shard whose `counted_from` is below it: the first child of a split counts what its parent
  // counted, the others only their own changes (see inherit()).
  uint64_t inherited_seq = 0;
  uint64_t counted_from = 0;
  bool operator==(const tseq& o) const {
    return v == o.v && bins == o.bins && reset_seq == o.reset_seq && reset_until == o.reset_until &&
           inherited_seq == o.inherited_seq && counted_from == o.counted_from;
  }
};

// Records that the shard was at `seq` at `time` (spec section 3). Returns true when the bins
// changed. Never fails: a time below `min_time` (or <= 0), a time in the same or an earlier bin
// than the newest, or a seq that did not grow leave the bins as they are.
bool update(tseq& t, int64_t time, uint64_t seq, int64_t min_time = default_min_time);

// The seq to resume from to see every change at or after `time` (spec section 4): nullopt means
// "now" (the time is after the newest bin's end); 0 when no bin is that old. After a reset, a time
// before `reset_until` is 0 (only a scan can say where those changes are) and any other answer is
// at least `reset_seq`.
std::optional<uint64_t> since(const tseq& t, int64_t time);

// DELETE /db/_time_seq: empties the bins of a shard at `update_seq`, remembering that every change
// so far was committed before the end of the newest bin (so since() never skips one of them).
void reset(tseq& t, uint64_t update_seq);

// Changes per bin, oldest first, given the shard's current update seq (spec section 4); a
// synthetic bin at time 0 holds what came before the oldest bin. Empty bins: empty histogram.
// Only changes with a seq in (after, until] are counted (the same bins, some maybe 0).
std::vector<std::pair<int64_t, uint64_t>> histogram(const tseq& t, uint64_t update_seq, uint64_t after = 0,
                                                    uint64_t until = UINT64_MAX);

// The time-seq of child `child` (0 = the first) of a split of a shard whose time-seq is `parent`
// and whose numbering ended at `parent_seq`: the parent's bins, its numbering inherited up to
// `parent_seq`; the first child goes on counting what the parent counted, the others count from
// `parent_seq` on (so the database's histogram counts each change once, through any chain of splits).
tseq inherit(const tseq& parent, uint64_t parent_seq, size_t child);

// "YYYY-MM-DDTHH:MM:SSZ" (UTC, 4-digit year) for Unix seconds >= 0.
std::string format_time(int64_t unix_seconds);
// Strict parse of exactly that shape (month 1-12, a day that exists in the month, 00-23:00-59:00-59);
// nullopt when the text is not a valid time. Years 0000-9999; times before 1970 are negative.
std::optional<int64_t> parse_time(std::string_view text);

}  // namespace settee::time_seq
