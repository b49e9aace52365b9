#include "node/log.hpp"

#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <ctime>

#include "node/clock.hpp"

namespace settee::log {

namespace {
std::atomic<int> current{static_cast<int>(level::info)};
const char* names[] = {"debug", "info", "warning", "error", "none"};
std::atomic<const clock*> stamp_clock{nullptr};
std::string node;  // " <name>" once known

int64_t now_ms() {
  if (const clock* c = stamp_clock.load()) return c->now_ms();
  return wall_ms();
}

// 2026-11-26T02:15:00.123Z
void append_time(std::string& out, int64_t ms) {
  time_t s = static_cast<time_t>(ms / 1000);
  tm t{};
  ::gmtime_r(&s, &t);
  char buf[40];
  size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &t);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms % 1000));
  out += buf;
}
}  // namespace

void set_context(const clock* c, std::string node_name) {
  std::string tag = node_name.empty() ? "" : " " + node_name;
  if (tag != node) node = std::move(tag);  // set at start-up, before other threads log
  stamp_clock.store(c);
}

std::string printable(std::string_view text) {
  std::string out(text);
  for (char& ch : out)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';
  return out;
}

namespace {

// The length of the valid UTF-8 sequence at the start of `s` (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0.
size_t utf8_sequence(std::string_view s) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = b(0);
  if (lead < 0x80) return 1;
  size_t n = lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
  if (n == 0 || s.size() < n) return 0;
  for (size_t i = 1; i < n; ++i)
    if ((b(i) & 0xc0) != 0x80) return 0;
  const unsigned char second = b(1);
  if ((lead == 0xe0 && second < 0xa0) || (lead == 0xed && second > 0x9f) || (lead == 0xf0 && second < 0x90) ||
      (lead == 0xf4 && second > 0x8f))
    return 0;
  return n;
}

}  // namespace

std::string utf8_only(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence(text.substr(i));
    if (n == 0) {
      out += '?';
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

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
  append_time(line, now_ms());
  line += node;
  line += ' ';
  // Most lines are ASCII; one that is not is checked (a client's bytes in a name it quotes).
  if (std::any_of(message.begin(), message.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }))
    line += utf8_only(message);
  else
    line += message;
  line += '\n';
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
}

void rate_limited::warning(const std::string& line) {
  auto now = mono::now();
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

namespace {

// The UTC date of `days` since 1970-01-01 (Howard Hinnant's civil_from_days): no library call, so
// the crash handler may use it.
void civil_from_days(int64_t days, int& y, unsigned& m, unsigned& d) {
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y = static_cast<int>(yoe + era * 400 + (m <= 2));
}

[[maybe_unused]] void on_fatal_signal(int sig) {
  // Only async-signal-safe calls: the wall clock, write(2), backtrace_symbols_fd (backtrace was
  // warmed up); the line is stamped and names the node as every other line.
  const int64_t ms = wall_ms();  // the system clock (vDSO): no lock, safe here
  int y = 1970;
  unsigned mo = 1, d = 1;
  civil_from_days(ms / 86400000, y, mo, d);
  const int64_t sod = ms / 1000 % 86400;
  char head[256];
  const char* name = sigabbrev_np(sig);
  int n = std::snprintf(head, sizeof head,
                        "[error] %04d-%02u-%02uT%02d:%02d:%02d.%03dZ%s settee: fatal signal %d (SIG%s); backtrace:\n",
                        y, mo, d, static_cast<int>(sod / 3600), static_cast<int>(sod / 60 % 60),
                        static_cast<int>(sod % 60), static_cast<int>(ms % 1000), node.c_str(), sig, name ? name : "?");
  n = std::min<int>(n, static_cast<int>(sizeof head) - 1);
  [[maybe_unused]] auto w = ::write(STDERR_FILENO, head, static_cast<size_t>(n));
  void* frames[64];
  int depth = ::backtrace(frames, 64);
  ::backtrace_symbols_fd(frames, depth, STDERR_FILENO);
  ::raise(sig);  // the handler was reset (SA_RESETHAND): the default action ends the process
}

}  // namespace

void install_crash_handler() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return;
#else
  void* warm[1];
  ::backtrace(warm, 1);  // loads libgcc now, so the handler never allocates
  static char alt_stack[64 * 1024];
  stack_t ss{};
  ss.ss_sp = alt_stack;
  ss.ss_size = sizeof alt_stack;
  ::sigaltstack(&ss, nullptr);  // the main thread's stack overflow still gets its trace
  struct sigaction sa {};
  sa.sa_handler = on_fatal_signal;
  sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(sig, &sa, nullptr);
#endif
}

}  // namespace settee::log
