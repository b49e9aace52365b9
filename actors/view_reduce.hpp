// view_reduce: CouchDB's built-in reduce functions, run natively (couch_query_servers'
// builtin_reduce): `_count`, `_sum` (numbers, arrays of numbers added element by element, objects
// of them member by member), `_stats` ({sum, count, min, max, sumsqr}, of numbers or arrays of
// numbers) and `_approx_count_distinct` (of the keys; exact here, which an approximation may be).
// A `_sum` of something it cannot add reduces to CouchDB's error object, as CouchDB answers it
// (200, {"error":"builtin_reduce_error","reason":...,"caused_by":value}); a `_stats` of such a
// value is an error. Pure: unit-tested.
#pragma once

#include <string>
#include <vector>

#include "node/error.hpp"
#include "node/json.hpp"
#include "storage/view_store.hpp"

namespace settee {

enum class builtin_reduce { none, count, sum, stats, approx_count_distinct };

// The built-in a reduce source names ("_sum", and CouchDB's prefix match: "_sum  " too); `none`
// for JavaScript; an unknown name starting with "_" is an error (CouchDB's compile-time refusal).
result<builtin_reduce> builtin_of(const std::string& source);

// Reduces the rows (key, value) of one group.
result<json> reduce_rows(builtin_reduce how, const std::vector<std::pair<const json*, const json*>>& rows);

// reduce_rows over rows as an index holds them (their key and value JSON texts).
result<json> reduce_view_rows(builtin_reduce how, const std::vector<view_row>& rows);

// Combines partial reductions of `count`, `sum` or `stats` (of consecutive runs of one group's
// rows) into the group's (CouchDB's rereduce of the built-ins).
result<json> rereduce(builtin_reduce how, const std::vector<json>& partials);

}  // namespace settee
