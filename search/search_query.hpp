// search_query: a full-text query as it travels (issue 54). What a Nouveau request's parameters
// say (nouveau_httpd:validate_query_args), what one shard copy is asked and answers (phases:
// the term statistics of the query, then the hits scored from every copy's statistics summed),
// the copies' answers merged into the one answer, and the bookmark that continues it. Pure code.
//
// The bookmark is the last hit's order (one position in a total order: sort keys, then _id),
// base64url JSON as Nouveau's list of orders: every copy continues after it, so a bookmark stays
// good across a split or move of the database's shards (Nouveau's holds a position per range).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "node/error.hpp"
#include "node/json.hpp"
#include "search/search_ddoc.hpp"
#include "storage/text_index.hpp"

namespace settee {

// The parameters of GET|POST /db/_design/d/_nouveau/idx.
struct search_params {
  text_query query;  // q, limit, sort, bookmark's after, counts, ranges, top_n
  bool update = true;
  bool include_docs = false;
  std::string partition;
  // Clouseau's include_fields: only these stored fields with each hit (none given: all).
  std::optional<std::vector<std::string>> include_fields;
  // Clouseau's grouping: the hits grouped by the value of string field `group_field` (set), the
  // groups in order of their best hit under `group_sort` (empty: relevance), `query.limit`
  // groups, each with its first `group_limit` hits under `query.sort`. `group_by` is the
  // older name (its answer says total_hits and hits where group_field's says total_rows and rows).
  std::string group_field;
  bool group_by = false;
  std::vector<std::string> group_sort;
  size_t group_limit = 1;
};

// Nouveau's parameters from a query string (`qs`: each value as given) or a POST body's members
// (`body`); partition comes from the query string either way. Errors as CouchDB's:
// query_parse_error ("q parameter is mandatory", "limit parameter must be an integer", ...),
// a bookmark that is not one: bad_request "Invalid bookmark".
result<search_params> nouveau_params(const std::map<std::string, std::string>& qs, const json* body);

// Clouseau's parameters of GET|POST /db/_design/d/_search/idx (dreyfus_httpd's parse_index_params
// and validate_search_restrictions): q or query, bookmark, sort ("field<type>" as Clouseau writes
// it), limit (at most 200), stale=ok, include_docs, include_fields, counts, ranges (Lucene range
// strings by label), drilldown, highlight_*. Errors as CouchDB's. `qs` in the request's order
// (drilldown may repeat).
result<search_params> clouseau_params(const std::vector<std::pair<std::string, std::string>>& qs, const json* body);

// One copy's part of a full-text query.
struct search_copy_request {
  // hold: in-process only (never sent): the copy's index itself, up to date unless `update` is
  // false, for the asker to search with this node's other copies as one (text_index::search).
  enum class phase : uint8_t { stats = 0, search = 1, describe = 2, hold = 3 };
  phase what = phase::search;
  search_api api = search_api::nouveau;
  std::string ddoc_id, rev, ddoc, index, signature;  // ddoc: its JSON; signature: the index expected
  // In-process only (never sent): the definition as the asker read it, valid during the call.
  const search_index_def* parsed = nullptr;
  text_query query;                 // query.stats unused: `stats` travels by value
  std::optional<text_stats> stats;  // search: scores from these (none: the copy's own)
  bool update = true;               // brought up to date first
};

struct search_copy_page {
  text_stats stats;  // phase stats
  text_page page;    // phase search
  uint64_t indexed_seq = 0, copy_seq = 0, purge_seq = 0, doc_count = 0, disk_size = 0;
  bool updating = false;
  std::string node;                         // the node whose copy answered (set by the asker, not sent)
  std::shared_ptr<const text_index> index;  // phase hold (not sent)
};

// The node protocol's form of both (JSON text).
std::string encode_request(const search_copy_request& r);
result<search_copy_request> decode_request(const std::string& text);
std::string encode_page(const search_copy_page& p);
result<search_copy_page> decode_page(const std::string& text);

// The copies' answers to `q` as one: hits merged in order and cut at q.limit, totals summed,
// facet counts summed and cut to q.top_n.
text_page merge_pages(const std::vector<search_copy_page>& pages, const text_query& q);

// A hit's order as Nouveau shows it: [{"@type": "float"|"double"|"string", "value": v}, ...].
json order_json(const text_order& order, const std::vector<std::string>& sort);
// The bookmark continuing after `order` (none: null), and back.
json pack_bookmark(const std::optional<text_order>& order, const std::vector<std::string>& sort);
result<text_order> unpack_bookmark(const std::string& bookmark);

}  // namespace settee
