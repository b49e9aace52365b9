#include "app/time_seq_tool.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "storage/time_seq.hpp"

namespace settee {

namespace {

const char* usage =
    "usage: settee time-seq simulate --start <YYYY-MM-DDTHH:MM:SSZ> --step <seconds> --count <N>\n"
    "\n"
    "Applies N updates to an empty time-seq, update k at start + k*step with update seq k, and prints\n"
    "the resulting histogram (oldest bin first) as GET /db/_time_seq would count it. [time_seq]\n"
    "min_time is not applied here, so any start after 1970 works.\n";

int fail(const std::string& msg) {
  std::fprintf(stderr, "settee time-seq: %s\n%s", msg.c_str(), usage);
  return 2;
}

bool positive(const std::string& text, long long max, long long& out) {
  char* end = nullptr;
  out = std::strtoll(text.c_str(), &end, 10);
  return !text.empty() && *end == '\0' && out > 0 && out <= max;
}

}  // namespace

int run_time_seq_tool(int argc, char** argv) {
  if (argc < 1 || std::string(argv[0]) != "simulate") return fail("the only command is `simulate`");
  std::string start_text, step_text, count_text;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return fail(a + " needs a value");
    std::string v = argv[++i];
    if (a == "--start")
      start_text = v;
    else if (a == "--step")
      step_text = v;
    else if (a == "--count")
      count_text = v;
    else
      return fail("unknown argument '" + a + "'");
  }
  auto start = time_seq::parse_time(start_text);
  if (!start || *start <= 0) return fail("--start must be a time like 2025-09-01T00:00:00Z after 1970");
  long long step = 0, count = 0;
  if (!positive(step_text, 100LL * time_seq::year, step)) return fail("--step must be a positive number of seconds");
  if (!positive(count_text, 100'000'000, count)) return fail("--count must be from 1 to 100000000");
  time_seq::tseq t;
  for (long long k = 0; k < count; ++k) time_seq::update(t, *start + k * step, static_cast<uint64_t>(k), 1);
  for (auto& [time, n] : time_seq::histogram(t, static_cast<uint64_t>(count))) {
    std::printf("   %s -> %llu\n", time_seq::format_time(time).c_str(), static_cast<unsigned long long>(n));
  }
  return 0;
}

}  // namespace settee
