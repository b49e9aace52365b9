// purge_log: the purge requests a shard copy applied (issue 35), in its own file's `purges` table,
// written in the transaction that applies them. CouchDB's purge infos: each request has a uuid
// (the same on every copy: the coordinator makes it), the document id and the revisions asked
// for (not only those removed), and this copy's purge seq, 1, 2, ... in the order it applied them.
// The uuid makes a request applied once per copy however often internal replication brings it.
//
// Table `purges` (storage/FORMAT.md): "s" + seq (8 bytes big-endian) -> str uuid, str id,
// varint n, n x str rev; "u" + uuid -> seq (8 bytes big-endian); "d" + str(doc_key of the id) +
// seq -> empty (the requests naming a document).
// Pure functions over an LMDB transaction; shard_store calls them.
#pragma once

#include <lmdb.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "node/error.hpp"
#include "storage/rev_tree.hpp"

namespace settee {

// One purge request as a copy recorded it (seq 0: not recorded yet).
struct purge_info {
  uint64_t seq = 0;
  std::string uuid;
  std::string id;
  std::vector<rev_id> revs;
};

namespace purge_log {

// In the uuid of a request a copy recorded itself for the history a purge removed with the
// revisions it named (shard_store::record_implied_purge): not a client's, left out of listings.
constexpr std::string_view implied_marker = "/implied-";
inline bool is_implied(const purge_info& p) {
  return p.uuid.find(implied_marker) != std::string::npos;
}

// Records `p` (its seq set) under its seq and its uuid.
status add(MDB_txn* t, MDB_dbi dbi, const purge_info& p);
// Whether a request with this uuid was recorded (and not pruned since).
status known(MDB_txn* t, MDB_dbi dbi, std::string_view uuid, bool& found);
// Requests with seq > since, ascending; visit returns false to stop.
status scan(MDB_txn* t, MDB_dbi dbi, uint64_t since, const std::function<bool(const purge_info&)>& visit);
// The lowest seq recorded (0: none).
status oldest(MDB_txn* t, MDB_dbi dbi, uint64_t& out);
// The revisions the recorded requests for document `id` named.
status revs_of(MDB_txn* t, MDB_dbi dbi, std::string_view id, std::vector<rev_id>& out);
// Forgets the requests with seq <= upto.
status prune(MDB_txn* t, MDB_dbi dbi, uint64_t upto);

}  // namespace purge_log
}  // namespace settee
