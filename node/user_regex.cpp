#include "node/user_regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <re2/re2.h>

#include <algorithm>

namespace settee {

struct user_regex::impl {
  std::string pattern;
  std::unique_ptr<RE2> re2;  // set when RE2 runs the pattern
  pcre2_code* pcre = nullptr;

  ~impl() { pcre2_code_free(pcre); }
};

namespace {

// Each thread's PCRE2 match context: the limits and a JIT stack, made once per thread.
struct pcre_thread_state {
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr);

  pcre_thread_state() {
    pcre2_set_match_limit(context, user_regex::match_limit);
    pcre2_set_depth_limit(context, user_regex::depth_limit);
    pcre2_set_heap_limit(context, user_regex::heap_limit_kib);
    pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~pcre_thread_state() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
  }
};

std::string pcre_message(int code) {
  PCRE2_UCHAR buf[256];
  int n = pcre2_get_error_message(code, buf, sizeof buf);
  return n > 0 ? std::string(reinterpret_cast<char*>(buf), static_cast<size_t>(n)) : "error " + std::to_string(code);
}

}  // namespace

result<user_regex> user_regex::compile(const std::string& pattern) {
  if (pattern.size() > max_pattern_bytes) {
    return status{errc::bad_request, "regular expression longer than " + std::to_string(max_pattern_bytes) + " bytes"};
  }
  auto m = std::make_shared<impl>();
  m->pattern = pattern;
  RE2::Options options;
  options.set_log_errors(false);
  options.set_encoding(RE2::Options::EncodingUTF8);
  auto re2 = std::make_unique<RE2>(pattern, options);
  if (re2->ok()) {
    m->re2 = std::move(re2);
  } else {
    int code = 0;
    PCRE2_SIZE offset = 0;
    m->pcre = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                            PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &code, &offset, nullptr);
    if (!m->pcre) {
      return status{errc::bad_request,
                    "invalid regular expression: " + pcre_message(code) + " at offset " + std::to_string(offset)};
    }
    pcre2_jit_compile(m->pcre, PCRE2_JIT_COMPLETE);  // without JIT (no memory for it) it still runs, bounded
  }
  user_regex r;
  r.impl_ = std::move(m);
  return r;
}

result<bool> user_regex::search(std::string_view subject) const {
  if (impl_->re2) return RE2::PartialMatch(re2::StringPiece(subject.data(), subject.size()), *impl_->re2);
  thread_local pcre_thread_state state;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create_from_pattern(impl_->pcre, nullptr), &pcre2_match_data_free);
  if (!data) return status{errc::bad_request, "regular expression: out of memory"};
  // A step may compare a backreference as long as the value: the steps allowed shrink as the value
  // grows, so that steps x bytes stays within work_budget (FUZZ_SEED=1796026247 found
  // `(a+)\1]a` on 100,000 'a's: a million steps of ~50 KB compares, over a minute).
  const uint32_t steps = static_cast<uint32_t>(
      std::clamp<uint64_t>(work_budget / std::max<size_t>(subject.size(), 1), min_steps, match_limit));
  pcre2_set_match_limit(state.context, steps);
  int rc = pcre2_match(impl_->pcre, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0, 0, data.get(),
                       state.context);
  if (rc >= 0) return true;
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  return status{errc::bad_request, "regular expression " + impl_->pattern + " stopped on a value of " +
                                       std::to_string(subject.size()) + " bytes: " + pcre_message(rc) +
                                       " (a pattern with backreferences or lookaround backtracks; see docs/api.md)"};
}

const std::string& user_regex::pattern() const {
  return impl_->pattern;
}

bool user_regex::linear() const {
  return impl_->re2 != nullptr;
}

}  // namespace settee
