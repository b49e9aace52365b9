#include "actors/view_partials.hpp"

#include "node/log.hpp"

namespace settee {

bool view_partials::keeps(uint32_t view) const {
  if (view >= dv_.builtins.size()) return false;
  const builtin_reduce b = dv_.builtins[view];
  return b == builtin_reduce::sum || b == builtin_reduce::stats ||
         (view < dv_.js_reduces.size() && dv_.js_reduces[view]);
}

std::vector<std::string> view_partials::reduce(uint32_t view, const std::vector<std::vector<view_row>>& blocks) const {
  std::vector<std::string> out(blocks.size());
  if (!keeps(view)) return out;
  const builtin_reduce b = dv_.builtins[view];
  if (b != builtin_reduce::none) {
    for (size_t i = 0; i < blocks.size(); ++i)
      if (auto r = reduce_view_rows(b, blocks[i])) out[i] = r->dump();  // else the rows answer the error
    return out;
  }
  if (failed_) return out;
  std::vector<std::vector<const view_row*>> groups(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i)
    for (const view_row& row : blocks[i]) groups[i].push_back(&row);
  auto values = js_reduce_groups(js_, dv_, dv_.names[view], groups, opts_);
  if (!values) {
    failed_ = true;
    log::warning("the partial reductions of " + dv_.db_name + "/" + dv_.ddoc_id + " view " + dv_.names[view] +
                 " were not made (queries read the rows): " + values.error().reason);
    return out;
  }
  for (size_t i = 0; i < values->size(); ++i) {
    const json& v = (*values)[i];
    if (!(v.is_object() && v.contains("reduce_overflow_error"))) out[i] = v.dump();
  }
  return out;
}

}  // namespace settee
