#include "storage/blob_store.hpp"

#include "storage/codec.hpp"
#include "storage/lmdb_env.hpp"

namespace settee::blob_store {

using lmdb::del;
using lmdb::get;
using lmdb::put;

namespace {

std::string chunk_key(std::string_view key, uint32_t n) {
  std::string k(key);
  for (int shift = 24; shift >= 0; shift -= 8) k.push_back(static_cast<char>((n >> shift) & 0xff));
  return k;
}

struct ref_record {
  uint64_t refs = 0;
  uint64_t length = 0;
};

status read_refs(MDB_txn* t, const tables& db, std::string_view key, ref_record& r, bool& found) {
  std::string_view raw;
  if (auto st = get(t, db.refs, key, raw, found); !st || !found) return st;
  codec::reader in(raw);
  if (!in.varint(r.refs) || !in.varint(r.length)) {
    return {errc::internal, "corrupt attachment reference record: " + std::string(key)};
  }
  return {};
}

status write_refs(MDB_txn* t, const tables& db, std::string_view key, const ref_record& r) {
  codec::writer w;
  w.varint(r.refs);
  w.varint(r.length);
  return put(t, db.refs, key, w.data());
}

uint32_t chunk_count(uint64_t length) {
  return static_cast<uint32_t>((length + chunk_bytes - 1) / chunk_bytes);
}

}  // namespace

status has(MDB_txn* t, const tables& db, std::string_view key, bool& found) {
  ref_record r;
  return read_refs(t, db, key, r, found);
}

status add_ref(MDB_txn* t, const tables& db, std::string_view key, const std::string* bytes, uint64_t& added) {
  added = 0;
  ref_record r;
  bool found = false;
  if (auto st = read_refs(t, db, key, r, found); !st) return st;
  if (!found) {
    if (!bytes) return {errc::internal, "attachment bytes missing for blob " + std::string(key)};
    r.length = bytes->size();
    for (uint32_t n = 0; n < chunk_count(r.length); ++n) {
      std::string_view part(bytes->data() + n * chunk_bytes,
                            std::min<size_t>(chunk_bytes, bytes->size() - n * chunk_bytes));
      if (auto st = put(t, db.chunks, chunk_key(key, n), part); !st) return st;
    }
    added = r.length;
  }
  ++r.refs;
  return write_refs(t, db, key, r);
}

status drop_ref(MDB_txn* t, const tables& db, std::string_view key, uint64_t& freed) {
  freed = 0;
  ref_record r;
  bool found = false;
  if (auto st = read_refs(t, db, key, r, found); !st) return st;
  if (!found || r.refs == 0) return {errc::internal, "attachment reference count below zero: " + std::string(key)};
  if (--r.refs > 0) return write_refs(t, db, key, r);
  for (uint32_t n = 0; n < chunk_count(r.length); ++n) {
    if (auto st = del(t, db.chunks, chunk_key(key, n)); !st) return st;
  }
  freed = r.length;
  return del(t, db.refs, key);
}

status read(MDB_txn* t, const tables& db, std::string_view key, std::string& out, bool& found) {
  ref_record r;
  if (auto st = read_refs(t, db, key, r, found); !st || !found) return st;
  out.clear();
  out.reserve(r.length);
  for (uint32_t n = 0; n < chunk_count(r.length); ++n) {
    std::string_view part;
    bool there = false;
    if (auto st = get(t, db.chunks, chunk_key(key, n), part, there); !st) return st;
    if (!there) return {errc::internal, "attachment chunk missing: " + std::string(key) + " #" + std::to_string(n)};
    out.append(part);
  }
  if (out.size() != r.length) return {errc::internal, "attachment length differs from its record: " + std::string(key)};
  return {};
}

}  // namespace settee::blob_store
