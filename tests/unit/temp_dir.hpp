// A temporary directory removed (with its contents) at scope exit.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

struct temp_dir {
  std::string path;
  temp_dir() {
    char tmpl[] = "/tmp/settee-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};
