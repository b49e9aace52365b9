// clock: the single seam through which settee reads the time (DESIGN.md section 7).
// Wall time (what a change's commit time, a time-seq bin, a token's time are): a `clock`, given to
// whoever needs it; production uses system_clock, tests manual_clock, set exactly.
// Monotonic time (how long something took, when a wait must end): mono::now() and `deadline`,
// never the wall clock, which may jump. tests/tools/tidy.py fails the build on a clock read
// anywhere else.
// Thread-safety: every function and implementation may be called from any thread.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace settee {

namespace mono {
using duration = std::chrono::steady_clock::duration;
using time_point = std::chrono::steady_clock::time_point;
// The monotonic clock (a manual one while a test installed it).
time_point now();
// Seconds since `since`, as a double (durations for metrics).
inline double seconds_since(time_point since) {
  return std::chrono::duration<double>(now() - since).count();
}

// For tests: a monotonic clock that moves only when told, and wakes the threads waiting for it
// (wait_until below). install() makes it the clock of the whole process until uninstalled.
class manual {
 public:
  manual();
  ~manual();  // uninstalls
  void install();
  time_point now() const;
  // Moves the clock on and wakes every waiter, which looks again at its deadline.
  void advance(duration d);
  // How many threads wait on this clock now.
  size_t waiters() const;

  // wait_until's manual form.
  bool wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, time_point at,
                  const std::function<bool()>& pred);

 private:
  struct waiter {
    std::condition_variable* cv;
    std::mutex* mu;
  };
  mutable std::mutex mu_;
  std::condition_variable quiet_;  // notifying_ went to 0
  time_point now_;
  std::vector<waiter> waiting_;
  int notifying_ = 0;  // advance() calls notifying waiters now
};
// The manual clock installed, if any.
manual* installed();

// Waits on `cv` (its `lock` held) until `pred` holds or the monotonic clock reaches `at`; returns
// pred(). The one way a thread waits for a monotonic time point, so that a test's manual clock can
// end the wait.
template <class Pred>
bool wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, time_point at, Pred pred) {
  if (manual* m = installed()) return m->wait_until(cv, lock, at, std::function<bool()>(pred));
  return cv.wait_until(lock, at, pred);
}
}  // namespace mono

// When a wait must end: a point on the monotonic clock.
class deadline {
 public:
  // `d` from now.
  static deadline in(std::chrono::milliseconds d) { return deadline(mono::now() + d); }
  explicit deadline(mono::time_point at) : at_(at) {}
  mono::time_point at() const { return at_; }
  bool passed() const { return mono::now() >= at_; }
  // What is left (zero once passed).
  std::chrono::milliseconds left() const {
    auto l = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - mono::now());
    return l.count() > 0 ? l : std::chrono::milliseconds(0);
  }
  // The earlier of the two.
  deadline or_sooner(std::chrono::milliseconds d) const { return deadline(std::min(at_, mono::now() + d)); }

 private:
  mono::time_point at_;
};

// Milliseconds since the unix epoch on the system's clock, for what stamps real time without
// logic depending on it (log lines).
int64_t wall_ms();

class clock {
 public:
  virtual ~clock() = default;
  // Milliseconds since the unix epoch.
  virtual int64_t now_ms() const = 0;
  int64_t now_s() const { return now_ms() / 1000; }
};

class system_clock final : public clock {
 public:
  int64_t now_ms() const override;
};

// For tests of whole processes: the time is the number (Unix seconds) in a file the test rewrites,
// read again on every call; while the file is missing or unreadable, the system clock. Enabled by
// SETTEE_CLOCK_FILE=<path>; never in production.
class file_clock final : public clock {
 public:
  explicit file_clock(std::string path) : path_(std::move(path)) {}
  int64_t now_ms() const override;

 private:
  std::string path_;
  system_clock fallback_;
};

// A clock that only moves when told to.
class manual_clock final : public clock {
 public:
  explicit manual_clock(int64_t start_ms = 0) : now_ms_(start_ms) {}
  int64_t now_ms() const override { return now_ms_.load(); }
  void set_ms(int64_t ms) { now_ms_.store(ms); }
  void advance_ms(int64_t delta) { now_ms_.fetch_add(delta); }

 private:
  std::atomic<int64_t> now_ms_;
};

}  // namespace settee
