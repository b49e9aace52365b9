#include "node/clock.hpp"

#include <chrono>

namespace settee {

int64_t system_clock::now_ms() const {
  // The only call to the system clock in settee.
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace settee
