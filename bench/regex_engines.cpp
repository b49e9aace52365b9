// bench/regex_engines: PCRE2 (JIT, with match/heap limits) against RE2 on the patterns that crashed or
// stalled std::regex (issue 27) and on ordinary Mango patterns; time per match and each outcome.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <re2/re2.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct pcre {
  pcre2_code* code = nullptr;
  pcre2_match_context* mctx = pcre2_match_context_create(nullptr);
  pcre2_match_data* md = nullptr;
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 512 * 1024, nullptr);
  explicit pcre(const std::string& p) {
    int err;
    PCRE2_SIZE off;
    code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(), PCRE2_UTF, &err, &off, nullptr);
    if (!code) return;
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    md = pcre2_match_data_create_from_pattern(code, nullptr);
    pcre2_set_match_limit(mctx, 1000000);
    pcre2_set_depth_limit(mctx, 10000);
    pcre2_set_heap_limit(mctx, 8192);  // KiB
    pcre2_jit_stack_assign(mctx, nullptr, stack);
  }
  int run(const std::string& s) {
    return pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, md, mctx);
  }
};

void one(const char* name, const std::string& pat, const std::string& subject, int reps) {
  pcre p(pat);
  RE2::Options o;
  o.set_log_errors(false);
  RE2 r(pat, o);
  double t0 = now_s();
  int pr = 0;
  for (int i = 0; i < reps && p.code; ++i) pr = p.run(subject);
  double t1 = now_s();
  bool rr = false;
  for (int i = 0; i < reps && r.ok(); ++i) rr = RE2::PartialMatch(subject, r);
  double t2 = now_s();
  std::printf("%-34s len %7zu | pcre2-jit %9.1f us %s | re2 %9.1f us %s\n", name, subject.size(),
              p.code ? (t1 - t0) / reps * 1e6 : 0.0,
              !p.code                            ? "compile error"
              : pr >= 0                          ? "match"
              : pr == PCRE2_ERROR_NOMATCH        ? "no match"
              : pr == PCRE2_ERROR_MATCHLIMIT     ? "MATCH LIMIT"
              : pr == PCRE2_ERROR_JIT_STACKLIMIT ? "JIT STACK LIMIT"
                                                 : "error",
              r.ok() ? (t2 - t1) / reps * 1e6 : 0.0,
              !r.ok() ? "unsupported"
              : rr    ? "match"
                      : "no match");
}
}  // namespace

int main() {
  std::string a100k(100000, 'a');
  std::string ab20k;
  for (int i = 0; i < 10000; ++i) ab20k += "ab";
  one("^a*$ (crashed std::regex)", "^a*$", a100k, 20);
  one("(a|b)*c (crashed std::regex)", "(a|b)*c", ab20k, 5);
  one("^(a|a)*b$ 29 chars (14.7 s)", "^(a|a)*b$", std::string(29, 'a'), 3);
  one("^(a|a)*b$ 10,000 chars", "^(a|a)*b$", std::string(10000, 'a'), 3);
  one("^(a|a)*[bc]$ 29 chars + d", "^(a|a)*[bc]$", std::string(29, 'a') + "d", 3);
  one("^(a|a)*[bc]$ 40 chars + d", "^(a|a)*[bc]$", std::string(40, 'a') + "d", 3);
  one("^(\\w+\\s?)*$ 40 chars + !", "^(\\w+\\s?)*$", std::string(40, 'a') + "!", 3);
  one("(a|b)*[cd] 20,000 chars", "(a|b)*[cd]", ab20k, 3);
  one("(x+x+)+y 5,000 chars", "(x+x+)+y", std::string(5000, 'x'), 3);
  one("^[A-Z][a-z]+ Smith$ short", "^[A-Z][a-z]+ Smith$", "Johnathan Smith", 200000);
  one("(?i)smith short", "(?i)smith", "Johnathan SMITH of somewhere", 200000);
  one("^user_\\d{4}$ short", "^user_\\d{4}$", "user_1234", 200000);
  one("backreference (a+)\\1", "(a+)\\1", "aaaa", 1000);
  one("lookahead foo(?=bar)", "foo(?=bar)", "foobar", 1000);
  one("\\p{L}+ unicode", "^\\p{L}+$", "héllo", 1000);
}
