// A temporary directory removed (with its contents) at scope exit.
#pragma once
#include <cstdlib>
#include <string>

struct temp_dir {
  std::string path;
  temp_dir() {
    char tmpl[] = "/tmp/settee-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~temp_dir() { std::system(("rm -rf '" + path + "'").c_str()); }
};
