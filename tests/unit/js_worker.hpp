// The real settee-js worker for unit tests that run JavaScript (CTest names it in SETTEE_JS).
#pragma once
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>

#include "actors/js_pool.hpp"

namespace settee::testing {

inline js_options worker_options(size_t workers = 2, int timeout_ms = 500, size_t heap_mb = 32) {
  js_options o;
  const char* path = std::getenv("SETTEE_JS");
  REQUIRE_MESSAGE(path != nullptr, "SETTEE_JS must name the settee-js worker (CTest sets it)");
  o.worker = path;
  o.max_workers = workers;
  o.timeout = std::chrono::milliseconds(timeout_ms);
  o.heap_mb = heap_mb;
  return o;
}

}  // namespace settee::testing
