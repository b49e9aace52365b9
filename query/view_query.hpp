// view_query: the options of a view-shaped read (_all_docs, _design_docs, _local_docs and their
// /queries; views later) as CouchDB's couch_mrview_http parses them into an #mrargs: a POST body's
// members first (values as JSON), then the query string (values as text, a repeated parameter's
// last value winning), then couch_mrview_util:validate_args' checks. Pure: unit-tested.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "node/error.hpp"
#include "node/json.hpp"

namespace settee {

// A query string's parameters, decoded, in the order the request gave them.
using query_list = std::vector<std::pair<std::string, std::string>>;

struct view_query {
  bool descending = false;
  bool inclusive_end = true;
  bool include_docs = false;
  bool conflicts = false;
  bool update_seq = false;
  bool attachments = false;        // of included documents
  bool att_encoding_info = false;  // of included documents
  bool sorted = true;
  bool stable = false;
  std::string update = "true";  // "true", "false" or "lazy" (stale=ok and update_after map here)
  std::optional<bool> reduce, group;
  std::optional<int64_t> group_level;
  int64_t limit = -1;  // -1: no limit
  int64_t skip = 0;
  std::optional<json> start_key, end_key;  // `key` sets both
  std::optional<json> keys;                // an array (checked)
  std::optional<std::string> start_key_docid, end_key_docid;
};

// Applies the members of `options` (a JSON object: a POST body or one of `queries`) to `q`.
// `keys_refusal`: the reason when `keys` is not an array (CouchDB's words differ by where it came from).
status apply_view_options(view_query& q, const json& options, const char* keys_refusal);
// Applies query string parameters to `q` (unknown ones are ignored, as CouchDB keeps them as `extra`).
status apply_view_params(view_query& q, const query_list& params);
// validate_args for a view with no reduce function (_all_docs and its kin, map-only views).
status validate_map_query(const view_query& q);
// validate_args for a view queried with its reduce (CouchDB's texts, its "fetchs" included).
status validate_reduce_query(const view_query& q);

}  // namespace settee
