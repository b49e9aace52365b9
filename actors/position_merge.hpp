// position_merge: the coordinator's merge of the pages one copy of each range answered (views,
// _find on a JSON index), by the rows' positions in the copies' indexes: byte strings whose order
// is the index's order. Pages come from other nodes too, so their order is checked into an error
// (in_order) before the merge, whose own order is then an invariant.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "node/check.hpp"

namespace settee {

// Whether `positions` are in the query's direction (equal neighbours allowed).
template <class Range, class Pos>
bool in_order(const Range& rows, Pos pos, bool descending) {
  const std::string* prev = nullptr;
  for (const auto& row : rows) {
    const std::string& p = pos(row);
    if (prev && (descending ? p > *prev : p < *prev)) return false;
    prev = &p;
  }
  return true;
}

// Takes rows from `parts` sorted pages, smallest position first (largest when `descending`):
// `head(r)` is page r's next position (null when it has none left), `take(r)` consumes it and says
// whether to go on. The positions taken never go back.
template <class Head, class Take>
void merge_positions(size_t parts, bool descending, Head head, Take take) {
  std::string last;
  bool any = false;
  for (;;) {
    size_t best = parts;
    const std::string* best_pos = nullptr;
    for (size_t r = 0; r < parts; ++r) {
      const std::string* p = head(r);
      if (p && (!best_pos || (descending ? *p > *best_pos : *p < *best_pos))) {
        best = r;
        best_pos = p;
      }
    }
    if (!best_pos) return;
    SETTEE_CHECK(!any || (descending ? *best_pos <= last : *best_pos >= last));  // a merge never goes back
    last = *best_pos;
    any = true;
    if (!take(best)) return;
  }
}

}  // namespace settee
