// user_regex: a regular expression a user wrote (Mango `$regex`), compiled once and matched with a
// bound in time and memory, whatever the pattern and the subject.
//
// Two engines, measured side by side (bench/regex_engines.cpp, docs/architecture.md):
// - RE2 runs every pattern it accepts: matching is linear in the subject, so no pattern can stall.
// - A pattern RE2 refuses but PCRE accepts (backreferences, lookaround, possessive quantifiers:
//   CouchDB's Erlang `re` is PCRE) runs on PCRE2 with JIT and hard limits on backtracking steps,
//   depth and memory; a match that reaches them is an error, never a stall or a crash.
// Both read patterns and subjects as UTF-8. Thread-safe: one compiled pattern may be matched from
// many threads at once.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "node/error.hpp"

namespace settee {

class user_regex {
 public:
  // The PCRE2 fallback's bounds (a match past one of them is an error).
  static constexpr uint32_t match_limit = 1'000'000;  // backtracking steps: ~5 ms of CPU on a short value
  // A step may compare a backreference as long as the value: steps x value bytes stays within this
  // (a 100,000-byte value gets 2,000 steps), and never fewer than min_steps.
  static constexpr uint64_t work_budget = 200'000'000;
  static constexpr uint32_t min_steps = 1'000;
  static constexpr uint32_t depth_limit = 10'000;
  static constexpr uint32_t heap_limit_kib = 16 * 1024;
  static constexpr size_t max_pattern_bytes = 16 * 1024;

  // errc::bad_request naming the error when neither engine accepts `pattern`.
  static result<user_regex> compile(const std::string& pattern);

  // Whether `subject` holds a match (anywhere, as PCRE's and RE2's search); errc::bad_request
  // when the PCRE2 fallback reached a limit on this subject.
  result<bool> search(std::string_view subject) const;

  const std::string& pattern() const;
  bool linear() const;  // true when RE2 runs it

  struct impl;

 private:
  std::shared_ptr<const impl> impl_;
};

}  // namespace settee
