// js_reduce: a view's JavaScript reduce function, run on the workers (issue 31) as CouchDB runs it
// over its B-tree: each group's rows reduced in chunks (one call each: reduce(keys, values, false)
// with keys [[key, id], ...]), and a group that took more than one chunk has its chunks' values
// re-reduced (reduce(null, values, true)) in rounds until one value is left. Many calls travel in
// one exchange with a worker (js_pool::run_each). A call that throws gives null (logged), as
// couchjs' handleViewError; a worker that times out or dies fails the query.
//
// reduce_limit, CouchDB's [query_server_config] reduce_limit: a call whose answer's JSON is over
// 4096 bytes and more than half the size of its input's does not reduce. `on` (the default) makes
// the group's value {"reduce_overflow_error": reason} (a 200, as CouchDB's couch_query_servers),
// `log` logs it and keeps the value, `off` does not look.
#pragma once

#include <string>
#include <vector>

#include "actors/js_pool.hpp"
#include "node/error.hpp"
#include "node/json.hpp"
#include "storage/view_store.hpp"

namespace settee {

struct design_views;  // actors/view_index.hpp

enum class reduce_limit { on, off, log };

// "true", "false" or "log" (CouchDB's words); anything else is `on`.
reduce_limit reduce_limit_of(const std::string& setting);

struct js_reduce_options {
  reduce_limit limit = reduce_limit::on;
  size_t chunk_rows = 1000;          // rows (or values) in one reduce (rereduce) call, at most
  size_t chunk_bytes = 64u << 10;    // and their JSON's bytes, at least one row
  size_t exchange_bytes = 4u << 20;  // the calls' JSON in one exchange with a worker, at least one call
};

// The value of each group (its rows, in order) under view `view`'s reduce function of `dv`.
result<std::vector<json>> js_reduce_groups(js_pool& js, const design_views& dv, const std::string& view,
                                           const std::vector<std::vector<const view_row*>>& groups,
                                           const js_reduce_options& opts = {});

// The value of each group from its partial values (JSON texts: reductions of runs of its rows,
// e.g. on several shard copies): rereduce calls until one is left (a group of one value is it).
result<std::vector<json>> js_rereduce_groups(js_pool& js, const design_views& dv, const std::string& view,
                                             const std::vector<std::vector<std::string>>& values,
                                             const js_reduce_options& opts = {});

}  // namespace settee
