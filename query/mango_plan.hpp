// mango_plan: which index answers a _find, and which of its key ranges hold the answer
// (mango_idx_view's is_usable, field_ranges and start/end keys, mango_cursor's choice). An index
// is usable when the selector requires every field it indexes (a document without one is not in
// it), sort fields aside, and when it gives the sort (its fields after the ones the selector holds
// constant start with the sort's). Of the usable indexes the one whose leading fields the selector
// narrows most is chosen (equalities first, then a range), then the one with fewer fields.
// Pure: no I/O.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "node/error.hpp"
#include "node/json.hpp"
#include "query/mango_index.hpp"
#include "query/mango_query.hpp"

namespace settee {

// What the selector says of one field, ANDed (mango_idx_view's range): values in
// [low, high] (each end inclusive or not; unset: unbounded), or nothing at all.
struct field_range {
  std::optional<json> low, high;
  bool low_inclusive = true, high_inclusive = true;
  bool empty = false;
  bool equality() const;
};

// A JSON index the query cannot use: CouchDB's reason (mango_cursor's is_partial, field_mismatch,
// sort_order_mismatch) and settee's words for it.
struct rejected_index {
  std::string index;  // "_design/d/name"
  std::string reason, why;
};

struct query_plan {
  std::optional<query_index> index;  // nullopt: the special _all_docs index
  // The index's rows to read: [low, high) positions (storage/json_index.hpp), in key order.
  std::vector<std::pair<std::string, std::string>> ranges;
  bool descending = false;
  // For _explain: CouchDB's start_key and end_key of the index's view (`"<MAX>"` above any key).
  json start_key, end_key;
  std::vector<std::string> warnings;  // CouchDB's, one each
  // For _explain: the database's JSON indexes the query cannot use, and why; those it can, best
  // first ("_design/d/name").
  std::vector<rejected_index> rejected;
  std::vector<std::string> usable;
  // The ranges hold exactly the selector's matches (only range operators on the fields they
  // encode): the copies answer the rows without matching their documents.
  bool covered = false;
  // A union: a top-level $or whose branches each use their own index, answered part after part
  // (`index` and the keys are the first part's). A part's `filter` is what its documents must
  // match: the selector, and none of the branches before its own (the parts are disjoint).
  std::vector<query_plan> parts;
  json filter;  // a part's; null elsewhere (the query's selector)
};

// The plans of `q` over the database's JSON indexes `indexes`: the chosen one first (the index
// use_index names, else the one whose leading fields the selector narrows most, else the special
// _all_docs index), then the other usable indexes', best first, unless use_index named one; the
// caller may choose among them by the rows their ranges hold. Errors as CouchDB's: a sort no
// usable index gives (400 no_usable_index), use_index naming an unusable index without
// allow_fallback.
result<std::vector<query_plan>> plan_find(const find_query& q, const std::vector<query_index>& indexes);

// Whether use_index names `ix` (its design document, with or without "_design/", and its name when
// given).
bool named_by(const query_index& ix, const find_query& q);

// The range of `field` the selector's conjunction requires (not narrowed: unbounded).
field_range range_of(const json& selector, const std::string& field);

}  // namespace settee
