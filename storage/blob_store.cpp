#include "storage/blob_store.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

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

status has(MDB_txn* t, const tables& db, std::string_view key, uint64_t length, bool& found) {
  ref_record r;
  if (auto st = read_refs(t, db, key, r, found); !st || !found) return st;
  found = r.refs > 0 || r.length == length;
  return {};
}

namespace {

status put_chunks(MDB_txn* t, const tables& db, std::string_view key, uint64_t offset, std::string_view bytes) {
  for (size_t at = 0; at < bytes.size(); at += chunk_bytes) {
    auto n = static_cast<uint32_t>((offset + at) / chunk_bytes);
    if (auto st = put(t, db.chunks, chunk_key(key, n), bytes.substr(at, chunk_bytes)); !st) return st;
  }
  return {};
}

status del_chunks(MDB_txn* t, const tables& db, std::string_view key, uint64_t length) {
  for (uint32_t n = 0; n < chunk_count(length); ++n) {
    if (auto st = del(t, db.chunks, chunk_key(key, n)); !st) return st;
  }
  return {};
}

}  // namespace

status add_ref(MDB_txn* t, const tables& db, std::string_view key, const std::string* bytes, uint64_t& added) {
  added = 0;
  ref_record r;
  bool found = false;
  if (auto st = read_refs(t, db, key, r, found); !st) return st;
  if (!found && !bytes) return {errc::internal, "attachment bytes missing for blob " + std::string(key)};
  if (bytes && (!found || r.refs == 0)) {  // new, or replacing what was staged
    if (found) {
      if (auto st = del_chunks(t, db, key, r.length); !st) return st;
    }
    if (auto st = put_chunks(t, db, key, 0, *bytes); !st) return st;
    added = bytes->size();
    added -= std::min<uint64_t>(added, found ? r.length : 0);
    r.length = bytes->size();
  }
  ++r.refs;
  return write_refs(t, db, key, r);
}

status stage(MDB_txn* t, const tables& db, std::string_view key, uint64_t offset, std::string_view bytes, bool& whole,
             uint64_t& added) {
  whole = false;
  added = 0;
  ref_record r;
  bool found = false;
  if (auto st = read_refs(t, db, key, r, found); !st) return st;
  if (found && r.refs > 0) {
    whole = true;
    return {};
  }
  if (offset + bytes.size() <= r.length && found) return {};  // staged already
  if (offset != r.length || offset % chunk_bytes != 0) {
    return {errc::bad_request, "attachment piece out of order: at " + std::to_string(offset) + ", " +
                                   std::to_string(r.length) + " bytes staged"};
  }
  if (auto st = put_chunks(t, db, key, offset, bytes); !st) return st;
  r.length += bytes.size();
  added = bytes.size();
  return write_refs(t, db, key, r);
}

status drop_staged(MDB_txn* t, const tables& db, std::string_view key, uint64_t& freed) {
  freed = 0;
  ref_record r;
  bool found = false;
  if (auto st = read_refs(t, db, key, r, found); !st || !found || r.refs > 0) return st;
  if (auto st = del_chunks(t, db, key, r.length); !st) return st;
  freed = r.length;
  return del(t, db.refs, key);
}

status drop_all_staged(MDB_txn* t, const tables& db, uint64_t& freed) {
  freed = 0;
  std::vector<std::string> staged;
  MDB_cursor* c = nullptr;
  if (int rc = mdb_cursor_open(t, db.refs, &c); rc != 0) return lmdb::to_status(rc, "mdb_cursor_open");
  MDB_val k, v;
  int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
  for (; rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    codec::reader in(lmdb::view(v));
    uint64_t refs = 0;
    if (in.varint(refs) && refs == 0) staged.emplace_back(lmdb::view(k));
  }
  mdb_cursor_close(c);
  if (rc != MDB_NOTFOUND) return lmdb::to_status(rc, "mdb_cursor_get");
  for (const std::string& key : staged) {
    uint64_t bytes = 0;
    if (auto st = drop_staged(t, db, key, bytes); !st) return st;
    freed += bytes;
  }
  return {};
}

status drop_ref(MDB_txn* t, const tables& db, std::string_view key, uint64_t& freed) {
  freed = 0;
  ref_record r;
  bool found = false;
  if (auto st = read_refs(t, db, key, r, found); !st) return st;
  if (!found || r.refs == 0) return {errc::internal, "attachment reference count below zero: " + std::string(key)};
  if (--r.refs > 0) return write_refs(t, db, key, r);
  if (auto st = del_chunks(t, db, key, r.length); !st) return st;
  freed = r.length;
  return del(t, db.refs, key);
}

status read(MDB_txn* t, const tables& db, std::string_view key, std::string& out, bool& found) {
  return read_range(t, db, key, 0, UINT64_MAX, out, found);
}

namespace {

// Blobs up to this size stay mapped after a read: small hot attachments would pay a fault per page
// on every GET (GET of 1 KB: 28k/s kept, 10k/s released).
constexpr uint64_t release_above = 1u << 20;

// Drops the pages of mapped `v` from this process's page table (MADV_DONTNEED on a read-only
// shared file mapping: a later access, here or by another reader of a page they share, maps them
// again from the page cache).
void release_mapped(std::string_view v) {
  static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  auto begin = reinterpret_cast<uintptr_t>(v.data());
  uintptr_t from = begin & ~(page - 1), to = (begin + v.size() + page - 1) & ~(page - 1);
  if (to > from) ::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
}

}  // namespace

status read_range(MDB_txn* t, const tables& db, std::string_view key, uint64_t offset, uint64_t length,
                  std::string& out, bool& found, bool release) {
  ref_record r;
  if (auto st = read_refs(t, db, key, r, found); !st || !found) return st;
  if (r.refs == 0) {  // staged only: not a blob any revision has yet
    found = false;
    return {};
  }
  out.clear();
  if (offset >= r.length) return {};
  const uint64_t end = offset + std::min(length, r.length - offset);
  out.reserve(end - offset);
  for (auto n = static_cast<uint32_t>(offset / chunk_bytes); uint64_t{n} * chunk_bytes < end; ++n) {
    std::string_view part;
    bool there = false;
    if (auto st = get(t, db.chunks, chunk_key(key, n), part, there); !st) return st;
    const uint64_t at = uint64_t{n} * chunk_bytes;
    if (!there || (at + part.size() < end && part.size() != chunk_bytes))
      return {errc::internal, "attachment chunk missing: " + std::string(key) + " #" + std::to_string(n)};
    const uint64_t from = std::max(offset, at) - at;
    const uint64_t to = std::min<uint64_t>(end - at, part.size());
    if (to < from) return {errc::internal, "attachment length differs from its record: " + std::string(key)};
    out.append(part.substr(from, to - from));
    if (release && r.length > release_above) release_mapped(part);
  }
  if (out.size() != end - offset)
    return {errc::internal, "attachment length differs from its record: " + std::string(key)};
  return {};
}

}  // namespace settee::blob_store
