// clock: the single seam through which settee reads the time (DESIGN.md section 7).
// Production code uses system_clock; tests use manual_clock and set it exactly.
// Thread-safety: both implementations may be called from any thread.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

namespace settee {

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
