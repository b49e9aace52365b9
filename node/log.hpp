// Minimal levelled logging to stderr. Thread-safe (one write(2) per line). Each line:
//   [level] 2026-11-26T02:15:00.123Z <node name> message
// stamped by the node's clock (node/clock.hpp) once set_context has run, the system's before.
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace settee {
class clock;
}

namespace settee::log {

enum class level { debug = 0, info = 1, warning = 2, error = 3, none = 4 };

void set_level(level l);
// The clock that stamps lines and the node name they carry (call once at start-up; `c` outlives logging).
void set_context(const clock* c, std::string node_name);
// Writes the signal and a backtrace to stderr, then lets the signal end the process as it would
// have (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT). Not under sanitizers (they print their own).
void install_crash_handler();
// `text` with bytes a log line must not carry raw (control characters, DEL) as '?'.
std::string printable(std::string_view text);
// `text` with each byte that is not part of a valid UTF-8 sequence as '?': every line write()
// sends is UTF-8, whatever a client put in a name or an id it quotes.
std::string utf8_only(std::string_view text);
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
