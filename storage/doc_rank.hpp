// doc_rank: how many live documents sort before an id (CouchDB's `offset` in `_all_docs`), in
// O(n/B + B) reads instead of a scan from the first id. Live document ids are counted in buckets of
// consecutive ids, each a row of the shard's "rank" table: key "b" + the bucket's first id ("b"
// alone for the first bucket), value its count. A bucket splits in two when it passes `split_at`
// and goes away when it empties. The table is kept in the commit's own transaction; key "m" holds
// the update seq it is valid for, so a file written by a release that did not keep it (0.2 after a
// downgrade) is rebuilt when it is opened here (storage/FORMAT.md).
// All functions run inside the caller's LMDB transaction (a write one for add/rebuild/mark).
#pragma once
#include <lmdb.h>

#include <cstdint>
#include <string_view>

#include "node/error.hpp"

namespace settee::doc_rank {

// Whether the docs-table record `value` of `id` is a live document (its winner not deleted). A
// record that does not decode counts as not live: the rank is an index, and a corrupt document must
// not take its whole shard down (reading it is the error, storage/shard_store.hpp).
using live_fn = bool (*)(std::string_view id, std::string_view value);

constexpr uint64_t split_at = 1024;

// Counts `id` in (+1) or out (-1) after its docs-table record changed in this transaction.
status add(MDB_txn* t, MDB_dbi rank, MDB_dbi docs, live_fn live, std::string_view id, int delta);
// Live documents whose id sorts before `id`.
status before(MDB_txn* t, MDB_dbi rank, MDB_dbi docs, live_fn live, std::string_view id, uint64_t& out);
// All live documents.
status total(MDB_txn* t, MDB_dbi rank, uint64_t& out);
// Recounts from the docs table.
status rebuild(MDB_txn* t, MDB_dbi rank, MDB_dbi docs, live_fn live);
// The update seq the table is valid for (found = false: never built).
status valid_for(MDB_txn* t, MDB_dbi rank, uint64_t& seq, bool& found);
status mark(MDB_txn* t, MDB_dbi rank, uint64_t seq);

}  // namespace settee::doc_rank
