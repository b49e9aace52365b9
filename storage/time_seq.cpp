#include "storage/time_seq.hpp"

#include <algorithm>
#include <cstdio>

namespace settee::time_seq {

namespace {

// A bin with its length, oldest first: the roll-up's working form (never stored).
struct span {
  int64_t time;
  int64_t duration;
  uint64_t seq;
};

// One greedy pass from the oldest end: two neighbours both at most `interval` long fold into the
// older one (its time and seq kept); a folded bin is not looked at again in this pass.
std::vector<span> merge(const std::vector<span>& list, int64_t interval) {
  std::vector<span> out;
  out.reserve(list.size());
  for (size_t i = 0; i < list.size();) {
    if (i + 1 < list.size() && list[i].duration <= interval && list[i + 1].duration <= interval) {
      out.push_back({list[i].time, list[i].duration + list[i + 1].duration, list[i].seq});
      i += 2;
    } else {
      out.push_back(list[i]);
      i += 1;
    }
  }
  return out;
}

std::vector<span> concat(std::vector<span> a, const std::vector<span>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Tries the intervals from `first` on, stopping at the first that merges something among the bins
// old enough for it (older than now - next interval); with only 16Y left, halves the older half.
std::vector<span> do_rollup(const std::vector<span>& c, int64_t now, size_t first) {
  if (first + 1 >= intervals.size()) {
    size_t k = c.size() / 2;
    std::vector<span> before(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(k));
    std::vector<span> after(c.begin() + static_cast<std::ptrdiff_t>(k), c.end());
    int64_t longest = 0;
    for (auto& s : before) longest = std::max(longest, s.duration);
    return concat(merge(before, longest), after);
  }
  int64_t threshold = now - intervals[first + 1];
  size_t k = 0;
  while (k < c.size() && c[k].time <= threshold) ++k;
  std::vector<span> before(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(k));
  std::vector<span> after(c.begin() + static_cast<std::ptrdiff_t>(k), c.end());
  std::vector<span> merged = merge(before, intervals[first]);
  if (merged.size() == before.size()) return do_rollup(c, now, first + 1);  // nothing merged
  return concat(std::move(merged), after);
}

// Makes room when all 60 bins are used; `now` is the new bin's time.
std::vector<bin> rollup(int64_t now, const std::vector<bin>& bins) {
  if (bins.size() < max_bins) return bins;
  std::vector<span> c;  // oldest first
  c.reserve(bins.size());
  for (size_t i = bins.size(); i-- > 0;) {
    int64_t end = i == 0 ? now : bins[i - 1].time;
    c.push_back({bins[i].time, end - bins[i].time, bins[i].seq});
  }
  std::vector<span> rolled = do_rollup(c, now, 0);
  std::vector<bin> out;
  out.reserve(rolled.size() + 1);
  for (size_t i = rolled.size(); i-- > 0;) out.push_back({rolled[i].time, rolled[i].seq});
  return out;
}

// Days since 1970-01-01 of a proleptic Gregorian date, and back (era-based: 400-year cycles).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void civil_from_days(int64_t z, int64_t& y, int64_t& m, int64_t& d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y = yoe + era * 400 + (m <= 2);
}

bool leap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

}  // namespace

bool update(tseq& t, int64_t time, uint64_t seq, int64_t min_time) {
  if (time <= 0 || time < min_time) return false;
  int64_t rounded = time / resolution * resolution;
  if (t.bins.empty()) {
    t.bins.push_back({rounded, seq});
    return true;
  }
  const bin top = t.bins.front();
  if (rounded <= top.time || seq <= top.seq) return false;  // same bin, clock went back, or no new change
  std::vector<bin> rest = rollup(rounded, t.bins);
  t.bins.clear();
  t.bins.reserve(rest.size() + 1);
  t.bins.push_back({rounded, seq});
  t.bins.insert(t.bins.end(), rest.begin(), rest.end());
  return true;
}

namespace {

std::optional<uint64_t> since_bins(const tseq& t, int64_t time) {
  if (!t.bins.empty() && time > t.bins.front().time + resolution) return std::nullopt;
  for (const bin& b : t.bins)
    if (b.time <= time) return b.seq;
  return 0;
}

}  // namespace

std::optional<uint64_t> since(const tseq& t, int64_t time) {
  if (t.reset_seq == 0) return since_bins(t, time);
  if (time < t.reset_until) return 0;  // a change the reset forgot may be at or after `time`
  auto s = since_bins(t, time);
  if (!s) return s;
  return std::max(*s, t.reset_seq);  // everything the reset forgot came before `time`
}

void reset(tseq& t, uint64_t update_seq) {
  // Commit times the bins saw are below the newest bin's end: update() ignores earlier times, and a
  // later one opens a new bin. Times below min_time were never in the bins and are older still.
  if (!t.bins.empty()) t.reset_until = std::max(t.reset_until, t.bins.front().time + resolution);
  if (t.reset_until > 0) t.reset_seq = std::max(t.reset_seq, update_seq);
  t.bins.clear();
}

std::vector<std::pair<int64_t, uint64_t>> histogram(const tseq& t, uint64_t update_seq, uint64_t after,
                                                    uint64_t until) {
  std::vector<std::pair<int64_t, uint64_t>> out;
  if (t.bins.empty()) return out;
  std::vector<bin> bins = t.bins;
  if (bins.back().seq > 0) bins.push_back({0, 0});  // what came before the oldest bin
  uint64_t prev = update_seq;                       // bin b holds the seqs in (b.seq, prev]
  for (const bin& b : bins) {
    const uint64_t from = std::max(b.seq, after), to = std::min(prev, until);
    out.emplace_back(b.time, to > from ? to - from : 0);
    prev = b.seq;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

tseq inherit(const tseq& parent, uint64_t parent_seq, size_t child) {
  tseq out = parent;
  out.inherited_seq = parent_seq;
  out.counted_from = child == 0 ? parent.counted_from : parent_seq;
  return out;
}

std::string format_time(int64_t s) {
  int64_t days = s >= 0 ? s / day : (s - day + 1) / day;
  int64_t rem = s - days * day;
  int64_t y, m, d;
  civil_from_days(days, y, m, d);
  char buf[128];  // room for any int64 the compiler can imagine
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ", static_cast<long long>(y),
                static_cast<long long>(m), static_cast<long long>(d), static_cast<long long>(rem / hour),
                static_cast<long long>(rem % hour / 60), static_cast<long long>(rem % 60));
  return buf;
}

std::optional<int64_t> parse_time(std::string_view x) {
  if (x.size() != 20 || x[4] != '-' || x[7] != '-' || x[10] != 'T' || x[13] != ':' || x[16] != ':' || x[19] != 'Z')
    return std::nullopt;
  auto num = [&](size_t at, size_t len, int64_t& out) {
    out = 0;
    for (size_t i = at; i < at + len; ++i) {
      if (x[i] < '0' || x[i] > '9') return false;
      out = out * 10 + (x[i] - '0');
    }
    return true;
  };
  int64_t y, mo, d, h, mi, s;
  if (!num(0, 4, y) || !num(5, 2, mo) || !num(8, 2, d) || !num(11, 2, h) || !num(14, 2, mi) || !num(17, 2, s))
    return std::nullopt;
  static constexpr int month_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12 || h > 23 || mi > 59 || s > 59 || d < 1) return std::nullopt;
  if (d > month_days[mo - 1] + (mo == 2 && leap(y) ? 1 : 0)) return std::nullopt;
  return days_from_civil(y, mo, d) * day + h * hour + mi * 60 + s;
}

}  // namespace settee::time_seq
