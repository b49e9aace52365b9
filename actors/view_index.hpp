// view_index: a design document's views over one shard copy (issue 31): its view_store brought up
// to date from the copy's changes by the JavaScript workers' map (js_pool, ["map", ...]), a batch
// of documents per exchange. What CouchDB's couch_mrview_updater does for one shard: the winning
// revision of each changed document is mapped (design documents are not, as CouchDB's default),
// a deleted one's rows go; a map function that throws on a document is logged with the document's
// id and that document emits nothing in that view.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "actors/js_pool.hpp"
#include "actors/js_reduce.hpp"
#include "actors/view_reduce.hpp"
#include "node/error.hpp"
#include "node/json.hpp"
#include "storage/shard_store.hpp"
#include "storage/view_store.hpp"

namespace settee {

// A design document's views, as the indexer and the workers need them.
struct design_views {
  std::string db_name;  // for log lines: "<db>/<ddoc_id>"
  std::string ddoc_id;
  std::string rev;
  std::string worker_key;  // js_pool::worker_key of this revision
  std::string ddoc_json;
  std::vector<std::string> names;        // the views with a map function, in the design document's order
  std::vector<builtin_reduce> builtins;  // each view's built-in reduce (none: none, or JavaScript)
  std::vector<bool> js_reduces;          // each view's reduce is a JavaScript function
  std::string signature;                 // view_signature(): the index file's identity
  // A partitioned view (a partitioned database's design document, unless its options.partitioned
  // is false): its rows are keyed [partition, key] (partition_sort_key), so a partition's rows are
  // one range of the index; it answers partition queries only, as CouchDB's.
  bool partitioned = false;
  // options.local_seq: the map functions see each document's _local_seq (as CouchDB's).
  bool local_seq = false;
};

// The sort key a partitioned view's row of `key` (its sort key) has in partition `partition`:
// the collation's of [partition, key], 0x60 + sort_key(partition) + key + 0x00 (arrays are their
// elements' keys in a row: node/collation.hpp).
std::string partition_sort_key(const std::string& partition, const std::string& key);
// `s` within partition `partition` of a partitioned view: its bounds wrapped, an open end at the
// partition's first or last row.
view_scan partition_scan(const view_scan& s, const std::string& partition);

// CouchDB's idea of a view signature: a hash of what decides the rows (the language, each view's
// map, reduce and options, the design document's options and views.lib), so that an edit of
// anything else (a filter, a validate_doc_update) keeps the index. Hex SHA-256 (CouchDB's is an
// MD5 of Erlang terms: not comparable across the two, nor meant to be).
std::string view_signature(const json& ddoc);

// The views of design document `ddoc` (revision `rev`) of the database `db_key`.
design_views views_of(const std::string& db_key, bool partitioned_db, const std::string& ddoc_id,
                      const std::string& rev, const json& ddoc);

// Indexes the changes of `store` after index.meta().seq, up to `target` (at least; 0: whatever is
// committed when it starts), in batches of up to `batch` documents or `batch_bytes` of their
// bodies (at least one document), each one exchange with a worker and one fsynced apply().
// Errors: the shard or the index failed, or no worker could run the map.
// The blocks' partial reductions are made with `reduce`'s limits (actors/view_partials.hpp).
// `progress`, when set, is told after each batch the copy's seq indexed so far; when it answers
// false the update stops there (unavailable: what is indexed so far stands).
status update_view_index(const shard_store& store, view_store& index, js_pool& js, const design_views& views,
                         uint64_t target = 0, size_t batch = 500, size_t batch_bytes = 16u << 20,
                         const std::function<bool(uint64_t indexed_seq)>& progress = {},
                         const js_reduce_options& reduce = {});

}  // namespace settee
