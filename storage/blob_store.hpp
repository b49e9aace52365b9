// blob_store: attachment bytes in a shard file, stored once per distinct content and counted by
// the revisions that reference them (docs/architecture.md section 29). Two sub-databases:
//   "atts"     key = blob key + 4-byte big-endian chunk number, value = up to chunk_bytes bytes;
//   "att_refs" key = blob key, value = varint references, varint stored length.
// The blob key is the SHA-256 (hex) of the stored bytes (storage/attachments.hpp). All functions run
// inside the caller's LMDB transaction (a write one for add_ref/drop_ref).
#pragma once
#include <lmdb.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "node/error.hpp"

namespace settee::blob_store {

constexpr size_t chunk_bytes = 64 * 1024;

struct tables {
  MDB_dbi chunks = 0;
  MDB_dbi refs = 0;
};

// Whether the shard holds blob `key` (some revision references it).
status has(MDB_txn* t, const tables& db, std::string_view key, bool& found);
// One more reference to `key`. The first one stores `bytes` (then required: without it the
// reference would name bytes the shard does not have, errc::internal); `added` is the number of
// bytes stored by this call (0 when the blob was there).
status add_ref(MDB_txn* t, const tables& db, std::string_view key, const std::string* bytes, uint64_t& added);
// One reference fewer; the last one deletes the bytes (`freed` says how many).
status drop_ref(MDB_txn* t, const tables& db, std::string_view key, uint64_t& freed);
// The whole blob (found = false when the shard does not hold it).
status read(MDB_txn* t, const tables& db, std::string_view key, std::string& out, bool& found);

}  // namespace settee::blob_store
