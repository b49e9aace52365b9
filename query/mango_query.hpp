// mango_query: a `_find` (or `_explain`) request body checked as CouchDB's mango_opts,
// mango_sort and mango_fields check it, with their error names and texts (their ~w terms printed
// as mango_error prints them: json_util's erlang_w and erlang_p), and what the cursor needs of it:
// the compiled selector, the projection of `fields`, the sort, the paging and the bookmark.
// Pure: no I/O.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "node/error.hpp"
#include "node/json.hpp"
#include "query/mango_selector.hpp"

namespace settee {

struct find_query {
  json selector;  // as given
  mango_selector matcher;
  std::vector<std::string> fields;                 // empty: all fields
  std::vector<std::pair<std::string, bool>> sort;  // field, descending
  std::vector<std::string> use_index;              // [] or [ddoc] or [ddoc, name] (ddoc without _design/)
  std::optional<std::string> bookmark;             // as given (nullopt: none, CouchDB's "nil")
  uint64_t limit = 25, skip = 0;
  uint64_t r = 1;
  bool conflicts = false, update = true, stable = false, execution_stats = false, allow_fallback = true;
  std::string stale = "false";  // "ok" or "false"
  // A partitioned database's query of one partition (set by the handler, not parsed): only the
  // partition's range is asked.
  std::optional<size_t> only_range;
  // The selector without the clause a partition's query adds to it (a text index keeps to the
  // partition itself); null: `selector`.
  json text_selector;
};

// mango_sort: ["a", {"b": "asc"}, ...] as (field, descending), one direction for all fields; its
// errors (invalid_sort_json, invalid_sort_dir, invalid_sort_field, unsupported_mixed_sort).
result<std::vector<std::pair<std::string, bool>>> parse_sort(const json& v);

// The body of a _find or _explain, checked; errors as CouchDB's (400 with mango's error names).
result<find_query> parse_find(const json& body);

// `doc` with only the `fields` (dotted paths) it has, nested as in the document; all of it when
// `fields` is empty (mango_doc's projection).
json project(const json& doc, const std::vector<std::string>& fields);

// The opaque bookmark of a position in `_all_docs` order (after document `last_id`), and back
// (nullopt: not a bookmark this node made).
std::string all_docs_bookmark(const std::string& last_id);
std::optional<std::string> all_docs_position(const std::string& bookmark);

// The opaque bookmark of a position in a JSON index (its signature's first 16 characters): each
// range's last position answered, by range name ("00000000-7fffffff"); and back (nullopt: not such
// a bookmark). Positions are in key order on every range, so a split's children go on from their
// parent's position.
std::string index_bookmark(const std::string& signature,
                           const std::vector<std::pair<std::string, std::string>>& positions);
struct index_position {
  std::string signature;                                    // its first 16 characters
  std::vector<std::pair<std::string, std::string>> ranges;  // range name, position
};
std::optional<index_position> index_positions(const std::string& bookmark);

// The bookmark of a union of indexes: part `part` at its own bookmark `inner` ("" = its start).
std::string union_bookmark(size_t part, const std::string& inner);
std::optional<std::pair<size_t, std::string>> union_position(const std::string& bookmark);

}  // namespace settee
