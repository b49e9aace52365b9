// doc_key: where a document id lives in a shard file's tables (storage/FORMAT.md). LMDB keys hold
// at most 511 bytes, and CouchDB's ids have no length limit. An id of up to max_plain bytes is its
// own key (every file written before 0.3 has only those); a longer one is keyed by its first
// max_plain bytes and its SHA-256, and its record carries the whole id. Keys then sort as the ids
// do, except among long ids that share their first max_plain bytes: readers sort such a group by
// the ids themselves (shard_store's scan_docs), which keeps `_all_docs` in id order. Pure.
#pragma once
#include <string>
#include <string_view>

#include "storage/rev_tree.hpp"

namespace settee::doc_key {

constexpr size_t max_plain = 400;

// The docs-table key of `id`.
std::string of(std::string_view id);
// Whether a docs-table key is a long id's (its record starts with the whole id).
inline bool is_long(std::string_view key) {
  return key.size() > max_plain;
}
// The first max_plain bytes of a long key: the ids of its group start with them.
inline std::string_view group(std::string_view key) {
  return key.substr(0, max_plain);
}
// The bodies-table key of revision `rev` of `id`: the length-prefixed id and the revision text;
// for a long id, length 0 and its SHA-256 instead (an id is never empty).
std::string body(std::string_view id, const rev_id& rev);

}  // namespace settee::doc_key
