#include "node/clock.hpp"

#include <chrono>
#include <cstdio>

namespace settee {

int64_t system_clock::now_ms() const {
  return wall_ms();
}

int64_t wall_ms() {
  // The only read of the system clock in settee.
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

mono::time_point mono::now() {
  // The only read of the monotonic clock in settee.
  return std::chrono::steady_clock::now();
}

int64_t file_clock::now_ms() const {
  if (std::FILE* f = std::fopen(path_.c_str(), "r")) {
    long long seconds = 0;
    int n = std::fscanf(f, "%lld", &seconds);
    std::fclose(f);
    if (n == 1) return seconds * 1000;
  }
  return fallback_.now_ms();
}

}  // namespace settee
