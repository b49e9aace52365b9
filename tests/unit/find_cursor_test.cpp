// find_cursor's pure parts: how the copies' counts of a plan's ranges add up.
#include <doctest/doctest.h>

#include <cstdint>

#include "actors/find_cursor.hpp"

using namespace settee;

namespace {

std::vector<mango_page> counted(std::initializer_list<uint64_t> per_range) {
  std::vector<mango_page> pages;
  for (uint64_t n : per_range) {
    mango_page p;
    p.estimated = n;
    pages.push_back(p);
  }
  return pages;
}

}  // namespace

TEST_CASE("find_cursor: a plan's estimated rows are unknown while any range's index is not built") {
  CHECK(estimated_rows(counted({})) == 0);
  CHECK(estimated_rows(counted({3, 0, 147})) == 150);
  // Not built in the first range, nothing in the second: unknown, not a huge count (a planner
  // weighing it would pick an index with a known count instead, and _explain would show a number).
  CHECK(estimated_rows(counted({UINT64_MAX, 0})) == UINT64_MAX);
  CHECK(estimated_rows(counted({UINT64_MAX, 3})) == UINT64_MAX);
  CHECK(estimated_rows(counted({3, UINT64_MAX})) == UINT64_MAX);
  // Large counts stay below "unknown".
  CHECK(estimated_rows(counted({UINT64_MAX - 1, 5})) == UINT64_MAX - 1);
}
