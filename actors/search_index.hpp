// search_index: one full-text index of a design document over one shard copy (issue 54): its
// text_index brought up to date from the copy's changes by the JavaScript workers' index
// functions (js_pool::index), a batch of documents per exchange, as view_index does for views.
// The winning revision of each changed document is indexed (design documents are not, as
// CouchDB's); a deleted one, or one whose function indexed nothing or threw, leaves the index
// (a throw is logged with the document's id, as CouchDB's nouveau.js and dreyfus.js log it).
#pragma once

#include <functional>
#include <string>

#include "actors/js_pool.hpp"
#include "node/error.hpp"
#include "search/search_ddoc.hpp"
#include "storage/shard_store.hpp"
#include "storage/text_index.hpp"

namespace settee {

// A search index as the updater and the workers need it.
struct search_target {
  std::string db_name;     // for log lines
  std::string worker_key;  // js_pool::worker_key of the design document's revision
  std::string ddoc_json;
  search_index_def def;
};

// Indexes the changes of `store` after index.seq(), up to `target` at least (0: whatever is
// committed when it starts), in batches of up to `batch` documents or `batch_bytes` of their
// bodies, each one exchange with a worker and one durable commit. Purge requests the index has
// not applied remove their documents first (all of it again when the copy forgot some).
// `progress`, when set, is told the copy's seq indexed after each batch; false stops the update
// there (unavailable).
status update_search_index(const shard_store& store, text_index& index, js_pool& js, const search_target& t,
                           uint64_t target = 0, size_t batch = 500, size_t batch_bytes = 16u << 20,
                           const std::function<bool(uint64_t indexed_seq)>& progress = {});

}  // namespace settee
