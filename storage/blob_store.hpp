// blob_store: attachment bytes in a shard file, stored once per distinct content and counted by
// the revisions that reference them (docs/architecture.md section 29). Two sub-databases:
//   "atts"     key = blob key + 4-byte big-endian chunk number, value = up to chunk_bytes bytes;
//   "att_refs" key = blob key, value = varint references, varint stored length.
// A record with 0 references is a blob being staged (a large upload, or internal replication of a
// large blob, arrives in pieces, each committed in its own transaction): its length is what has
// arrived so far, from the start. The write that names it turns it into a real reference; a
// restart drops what is still staged (drop_all_staged).
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

// Whether the shard holds blob `key` (some revision references it, or it was staged whole:
// `length` stored bytes have arrived).
status has(MDB_txn* t, const tables& db, std::string_view key, uint64_t length, bool& found);
// One more reference to `key`. The first one stores `bytes`, or takes a staged blob (one of them is
// required: without it the reference would name bytes the shard does not have, errc::internal);
// `added` is the number of bytes stored by this call (0 when the blob was there, or staged).
status add_ref(MDB_txn* t, const tables& db, std::string_view key, const std::string* bytes, uint64_t& added);
// Stages `bytes` at `offset` of blob `key`. Pieces arrive in order, each a multiple of chunk_bytes
// but the last; a piece already staged is skipped (a retry). `whole` is set when the shard holds
// the whole blob already (referenced: the sender can stop). `added`: bytes stored by this call.
status stage(MDB_txn* t, const tables& db, std::string_view key, uint64_t offset, std::string_view bytes, bool& whole,
             uint64_t& added);
// Drops blob `key` if it is only staged (an upload that failed); `freed` bytes.
status drop_staged(MDB_txn* t, const tables& db, std::string_view key, uint64_t& freed);
// Drops every staged blob (at open: no upload survives a restart); `freed` bytes.
status drop_all_staged(MDB_txn* t, const tables& db, uint64_t& freed);
// One reference fewer; the last one deletes the bytes (`freed` says how many).
status drop_ref(MDB_txn* t, const tables& db, std::string_view key, uint64_t& freed);
// The whole blob (found = false when the shard does not hold it).
status read(MDB_txn* t, const tables& db, std::string_view key, std::string& out, bool& found);
// At most `length` bytes of a referenced blob from `offset` (fewer at its end; none past it).
// `release` (read transactions only, whose pages are the file's map): the pages copied from a blob
// over 1 MiB are let go from the process's resident memory (they stay in the page cache), so reading a 1 GB
// blob does not leave 1 GB resident. Never in a write transaction: its pages may be its own.
status read_range(MDB_txn* t, const tables& db, std::string_view key, uint64_t offset, uint64_t length,
                  std::string& out, bool& found, bool release = false);

}  // namespace settee::blob_store
