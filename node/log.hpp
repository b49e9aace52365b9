// Minimal levelled logging to stderr. Thread-safe (one write(2) per line).
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace settee::log {

enum class level { debug = 0, info = 1, warning = 2, error = 3, none = 4 };

void set_level(level l);
bool parse_level(const std::string& text, level& out);
bool enabled(level l);
void write(level l, const std::string& message);

inline void debug(const std::string& m) {
  write(level::debug, m);
}
inline void info(const std::string& m) {
  write(level::info, m);
}
inline void warning(const std::string& m) {
  write(level::warning, m);
}
inline void error(const std::string& m) {
  write(level::error, m);
}

// Warnings that strangers can cause (refused connections, failed accepts) at most once per 10 s,
// with a count of what was left out: otherwise anyone who reaches a port could fill the disk.
class rate_limited {
 public:
  void warning(const std::string& line);

 private:
  std::mutex mu_;
  std::chrono::steady_clock::time_point last_{};
  uint64_t suppressed_ = 0;
};

}  // namespace settee::log
