// mango_explain: what CouchDB's _explain says of a _find beside the plan (mango_cursor:explain):
// every index but the chosen one with whether the query could use it, the first reason it was not
// chosen, its ranking and whether it covers the query's fields (index_candidates); the selector's
// fields a JSON index could and could not serve (selector_hints); whether the chosen index covers
// the fields the query needs (covering). Computed from settee's own plan, in CouchDB's vocabulary.
// Pure: no I/O.
#pragma once
#include <string>
#include <vector>

#include "node/json.hpp"
#include "query/mango_index.hpp"
#include "query/mango_plan.hpp"
#include "query/mango_query.hpp"

namespace settee {

// An index as _explain and GET /db/_index show it (mango_idx:to_json); the special _all_docs index.
json index_json(const query_index& ix);
const json& all_docs_index_json();

// mango_selector:fields of a normalized selector: the fields it names, through $and/$or/$nor
// lists (a $not or $elemMatch member counts as one field of its own name, as CouchDB's).
std::vector<std::string> selector_fields(const json& normalized);

// mango_idx_view:indexable_fields: the fields of the normalized selector's conjunction (through
// $and) whose condition an index range serves ($lt, $lte, $eq, $gt, $gte, $beginsWith, $exists).
std::vector<std::string> indexable_fields(const json& normalized);

// [{"type":"json","indexable_fields":[...],"unindexable_fields":[...]}], each list sorted.
json selector_hints(const json& normalized);

// mango_idx_view:covers: `fields` (not empty) all among the index's fields and _id.
bool covers(const query_index& ix, const std::vector<std::string>& fields);

// CouchDB's index_candidates for `plan` (the chosen one left out), over the database's JSON
// indexes `indexes` and the special index.
json index_candidates(const find_query& q, const std::vector<query_index>& indexes, const query_plan& plan);

// The top-level `covering`: the chosen JSON index holds every field the query reads (its `fields`
// and the selector's); false for all fields and for the special index.
bool plan_covers(const find_query& q, const query_plan& plan);

}  // namespace settee
