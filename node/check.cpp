#include "node/check.hpp"

#include <cstdlib>
#include <string>

#include "node/log.hpp"

namespace settee {

namespace {
thread_local bool event_loop_thread = false;
}

void mark_event_loop_thread() {
  event_loop_thread = true;
}

bool on_event_loop_thread() {
  return event_loop_thread;
}

void check_failed(const char* expr, const char* file, int line) {
  log::error(std::string("invariant failed: ") + expr + " at " + file + ":" + std::to_string(line));
  std::abort();
}

}  // namespace settee
