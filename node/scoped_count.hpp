// scoped_count: one more in an atomic counter for as long as it lives (requests running, exchanges
// under way). Relaxed: the counts are gauges and hints, they order nothing.
#pragma once

#include <atomic>

namespace settee {

template <class T>
class scoped_count {
 public:
  explicit scoped_count(std::atomic<T>& n) : n_(n), before_(n.fetch_add(1, std::memory_order_relaxed)) {}
  ~scoped_count() { n_.fetch_sub(1, std::memory_order_relaxed); }
  scoped_count(const scoped_count&) = delete;
  scoped_count& operator=(const scoped_count&) = delete;
  // The count before this one joined (0: it was the only one).
  T before() const { return before_; }

 private:
  std::atomic<T>& n_;
  const T before_;
};

}  // namespace settee
