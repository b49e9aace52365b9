#include "node/check.hpp"

#include <cstdlib>
#include <string>

#include "node/log.hpp"

namespace settee {

void check_failed(const char* expr, const char* file, int line) {
  log::error(std::string("invariant failed: ") + expr + " at " + file + ":" + std::to_string(line));
  std::abort();
}

}  // namespace settee
