// json_index: the JSON (Mango) indexes a shard copy keeps inside its own file (issue 32), updated
// in the transaction that writes the document, so an index is never behind its copy. Storage
// takes no JSON: what a document's key is in an index comes from above (index_keys, made by
// query/mango_index from the index's definition, which storage keeps as opaque text).
//
// Tables (storage/FORMAT.md "JSON indexes"): `json_defs`, by signature: the index's number in this
// file, its definition, and how far its build has come; `json_rows`, by position: the index's
// number (4 bytes), the key's collation sort key, the document id escaped (codec::put_escaped),
// 0x00 (the order of a view: key, then id), each row holding its id; a position of bucket_len
// bytes or more is kept in the bucket of the positions sharing its first bucket_len bytes, sorted
// within (scans stay in order whatever the keys' length). A document has at most one row per index
// (a JSON index emits one key). Where a document's row is comes from its revision, not from a
// table: a write passes the key its previous winner had (index_keys over that body) and the key
// its winner has now, so an index costs one tree a commit (the rows), not two.
// Pure functions over an LMDB transaction; shard_store calls them (its writer and snapshots).
#pragma once

#include <lmdb.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "node/error.hpp"

namespace settee {

// One index of a copy, as its file records it.
struct json_index_def {
  std::string signature;   // what identifies the index (its definition, hashed, above storage)
  std::string definition;  // opaque to storage (JSON text, query/mango_index)
  uint32_t number = 0;     // its rows' prefix in this file
  bool built = false;      // every document of the copy is in it
  std::string build_from;  // not built: the docs-table key where the build goes on ("" = start)
};

// What a document is in the indexes of a copy, computed above storage.
class index_keys {
 public:
  virtual ~index_keys() = default;
  // For each of `defs`, the sort key document `id` (winning revision `rev`, stored body `body`)
  // has in it, or nullopt when it is not in it (it lacks a field, a partial filter refuses it).
  // `out` gets one entry per def. Never throws; a body it cannot read is in no index.
  virtual void keys_of(const std::vector<const json_index_def*>& defs, std::string_view id, std::string_view rev,
                       std::string_view body, std::vector<std::optional<std::string>>& out) const = 0;
  // What the keys are made with (the collator's version, how keys are derived): rows made by
  // another version may sit where keys_of no longer puts them, so a file records it and builds
  // its indexes again when it changes.
  virtual std::string version() const = 0;
};

namespace json_index {

struct tables {
  MDB_dbi defs = 0, rows = 0;
};

// Positions (without the index number): sort key, escaped id, 0x00.
std::string position(std::string_view sort_key, std::string_view id);
// After every position that starts with `prefix` (a sort key or a part of one).
std::string past(std::string_view prefix);

status load_defs(MDB_txn* t, const tables& tb, std::vector<json_index_def>& out);
status put_def(MDB_txn* t, const tables& tb, const json_index_def& d);
// Removes the index and every row of it.
status drop(MDB_txn* t, const tables& tb, const json_index_def& d);
// Removes every row of index `number` (its definition stays).
status clear(MDB_txn* t, const tables& tb, uint32_t number);
// Moves document `id`'s row of index `number` from `was` (its sort key before this write; nullopt:
// it had none) to `now` (nullopt: none now); nothing when the two are equal. Adding a row that is
// there already is harmless (an index's build adds rows with `was` nullopt).
status set_row(MDB_txn* t, const tables& tb, uint32_t number, std::string_view id,
               const std::optional<std::string>& was, const std::optional<std::string>& now);

// Rows of index `number` with positions in [low, high) ("" high: to the index's end), ascending
// or descending; visit(position, id) returns false to stop.
status scan(MDB_txn* t, const tables& tb, uint32_t number, std::string_view low, std::string_view high, bool descending,
            const std::function<bool(std::string_view pos, std::string_view id)>& visit);
// How many rows of index `number` are in [low, high), counting at most `cap` (a planner's estimate).
status count(MDB_txn* t, const tables& tb, uint32_t number, std::string_view low, std::string_view high, uint64_t cap,
             uint64_t& out);

constexpr size_t bucket_len = 480;  // an LMDB key holds at most 511 bytes

}  // namespace json_index
}  // namespace settee
