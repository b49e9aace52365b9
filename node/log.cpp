#include "node/log.hpp"

#include <unistd.h>

#include <atomic>

namespace settee::log {

namespace {
std::atomic<int> current{static_cast<int>(level::info)};
const char* names[] = {"debug", "info", "warning", "error", "none"};
}  // namespace

void set_level(level l) {
  current.store(static_cast<int>(l));
}

bool parse_level(const std::string& text, level& out) {
  for (int i = 0; i <= static_cast<int>(level::none); ++i) {
    if (text == names[i]) {
      out = static_cast<level>(i);
      return true;
    }
  }
  if (text == "warn") {
    out = level::warning;
    return true;
  }
  return false;
}

bool enabled(level l) {
  return static_cast<int>(l) >= current.load();
}

void write(level l, const std::string& message) {
  if (!enabled(l)) return;
  std::string line = "[";
  line += names[static_cast<int>(l)];
  line += "] ";
  line += message;
  line += '\n';
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
}

void rate_limited::warning(const std::string& line) {
  auto now = std::chrono::steady_clock::now();
  uint64_t left_out = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (last_ != std::chrono::steady_clock::time_point{} && now - last_ < std::chrono::seconds(10)) {
      ++suppressed_;
      return;
    }
    left_out = suppressed_;
    suppressed_ = 0;
    last_ = now;
  }
  log::warning(line + (left_out ? " (and " + std::to_string(left_out) + " more since the last such line)" : ""));
}

}  // namespace settee::log
