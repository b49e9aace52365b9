// bench_args: the flags settee's C++ storage benchmarks share (--rounds R, --commits K, --dir DIR,
// and any of their own), and the scratch directory each writes in when --dir is not given (made
// under /tmp, removed when the benchmark ends).
#pragma once
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace settee::bench {

struct bench_args {
  int rounds = 1;
  int commits = 1;
  std::string dir;
  std::map<std::string, std::string> own;  // the benchmark's own flags given ("--only": value)
  bool own_dir = false;

  ~bench_args() {
    if (own_dir) std::filesystem::remove_all(dir);
  }
  // Reads argv (flags in pairs); false after printing `usage` on an unknown flag or a missing value.
  // `scratch` names the directory made when --dir is not given ("settee-commit-cost").
  bool parse(int argc, char** argv, const std::vector<std::string>& own_flags, const char* usage, const char* scratch) {
    if (argc % 2 == 0) return std::fprintf(stderr, "%s\n", usage), false;
    for (int i = 1; i + 1 < argc; i += 2) {
      std::string k = argv[i];
      if (k == "--rounds")
        rounds = std::max(1, std::atoi(argv[i + 1]));
      else if (k == "--commits")
        commits = std::max(1, std::atoi(argv[i + 1]));
      else if (k == "--dir")
        dir = argv[i + 1];
      else if (std::find(own_flags.begin(), own_flags.end(), k) != own_flags.end())
        own[k] = argv[i + 1];
      else
        return std::fprintf(stderr, "%s\n", usage), false;
    }
    if (!dir.empty()) return true;
    std::string tmpl = "/tmp/" + std::string(scratch) + "-XXXXXX";
    if (!::mkdtemp(tmpl.data())) return std::perror("mkdtemp"), false;
    dir = tmpl;
    own_dir = true;
    return true;
  }
};

}  // namespace settee::bench
