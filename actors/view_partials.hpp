// view_partials: the partial reductions a view index keeps per counting block (issue 56 point 0),
// as CouchDB keeps reductions in its B-tree nodes: _sum and _stats natively, a JavaScript reduce
// by its own function on the workers (reduce(keys, values, false) over the block's rows, the
// blocks of one settle in one exchange). A _count keeps none (the block's count is its partial);
// _approx_count_distinct and views without a reduce keep none. A block whose reduce fails (a
// _stats of a string, a JavaScript error, timeout or reduce_overflow_error) keeps none: its rows
// are read by the query, which meets the same error under the settings of its own time.
#pragma once

#include <string>
#include <vector>

#include "actors/js_pool.hpp"
#include "actors/js_reduce.hpp"
#include "actors/view_index.hpp"
#include "storage/view_store.hpp"

namespace settee {

// One per index update (its failures are remembered for the update).
class view_partials final : public block_reducer {
 public:
  // `dv` and `js` outlive it.
  view_partials(const design_views& dv, js_pool& js, js_reduce_options opts) : dv_(dv), js_(js), opts_(opts) {}
  bool keeps(uint32_t view) const override;
  std::vector<std::string> reduce(uint32_t view, const std::vector<std::vector<view_row>>& blocks) const override;

 private:
  const design_views& dv_;
  js_pool& js_;
  js_reduce_options opts_;
  // A JavaScript reduce failed (a timeout, a dead worker): no more calls in this update, so a
  // function that loops costs one timeout per update, not one per run of blocks.
  mutable bool failed_ = false;
};

}  // namespace settee
