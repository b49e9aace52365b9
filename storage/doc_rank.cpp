#include "storage/doc_rank.hpp"

#include <string>

#include "storage/codec.hpp"
#include "storage/lmdb_env.hpp"

namespace settee::doc_rank {

namespace {

constexpr std::string_view marker_key = "m";

std::string bucket_key(std::string_view first_id) {
  std::string k = "b";
  k += first_id;
  return k;
}

std::string encode_count(uint64_t n) {
  codec::writer w;
  w.varint(n);
  return std::move(w.data());
}

using lmdb::put;

status corrupt_bucket(std::string_view key) {
  return {errc::internal, "corrupt rank record '" + std::string(key) + "'"};
}

// A cursor that closes itself.
struct cursor {
  MDB_cursor* c = nullptr;
  ~cursor() {
    if (c) mdb_cursor_close(c);
  }
  status open(MDB_txn* t, MDB_dbi dbi) { return lmdb::to_status(mdb_cursor_open(t, dbi, &c), "mdb_cursor_open"); }
};

// The bucket holding `id`: the last "b" key <= "b" + id (the first bucket, "b", always exists).
status find_bucket(MDB_txn* t, MDB_dbi rank, std::string_view id, std::string& key, uint64_t& count) {
  cursor c;
  if (auto st = c.open(t, rank); !st) return st;
  std::string want = bucket_key(id);
  MDB_val k = lmdb::val(want), v;
  int rc = mdb_cursor_get(c.c, &k, &v, MDB_SET_RANGE);
  if (rc == 0 && lmdb::view(k) != want) rc = mdb_cursor_get(c.c, &k, &v, MDB_PREV);
  if (rc == MDB_NOTFOUND) rc = mdb_cursor_get(c.c, &k, &v, MDB_LAST);
  while (rc == 0 && lmdb::view(k).substr(0, 1) != "b") rc = mdb_cursor_get(c.c, &k, &v, MDB_PREV);
  if (rc != 0)
    return rc == MDB_NOTFOUND ? status{errc::internal, "rank table without its first bucket"}
                              : lmdb::to_status(rc, "mdb_cursor_get");
  key.assign(lmdb::view(k));
  codec::reader r(lmdb::view(v));
  if (!r.varint(count)) return corrupt_bucket(key);
  return {};
}

// Visits the docs-table records from `from` on (ascending) until `visit` returns false.
template <class F>
status scan_docs(MDB_txn* t, MDB_dbi docs, std::string_view from, F&& visit) {
  cursor c;
  if (auto st = c.open(t, docs); !st) return st;
  MDB_val k = lmdb::val(from), v;
  int rc = from.empty() ? mdb_cursor_get(c.c, &k, &v, MDB_FIRST) : mdb_cursor_get(c.c, &k, &v, MDB_SET_RANGE);
  for (; rc == 0; rc = mdb_cursor_get(c.c, &k, &v, MDB_NEXT)) {
    bool go_on = true;
    if (auto st = visit(lmdb::view(k), lmdb::view(v), go_on); !st) return st;
    if (!go_on) return {};
  }
  return rc == MDB_NOTFOUND ? status{} : lmdb::to_status(rc, "mdb_cursor_get");
}

// Splits an overfull bucket at its middle live document.
status split(MDB_txn* t, MDB_dbi rank, MDB_dbi docs, live_fn live, std::string_view first_id, uint64_t count) {
  uint64_t half = count / 2, seen = 0;
  std::string middle;
  auto st = scan_docs(t, docs, first_id, [&](std::string_view id, std::string_view value, bool& go_on) -> status {
    if (!live(id, value)) return {};
    if (seen++ == half) {
      middle.assign(id);
      go_on = false;
    }
    return {};
  });
  if (!st) return st;
  if (middle.empty() || middle == first_id) return {};  // fewer live documents than counted: keep it whole
  if (auto s2 = put(t, rank, bucket_key(first_id), encode_count(half)); !s2) return s2;
  return put(t, rank, bucket_key(middle), encode_count(count - half));
}

}  // namespace

status add(MDB_txn* t, MDB_dbi rank, MDB_dbi docs, live_fn live, std::string_view id, int delta) {
  std::string key;
  uint64_t count = 0;
  if (auto st = find_bucket(t, rank, id, key, count); !st) return st;
  if (delta < 0 && count == 0)
    return {errc::internal, "rank table out of step with the documents at '" + std::string(id) + "'"};
  count = delta < 0 ? count - 1 : count + 1;
  std::string_view first_id = std::string_view(key).substr(1);
  if (count == 0 && !first_id.empty()) return lmdb::del(t, rank, key);
  if (auto st = put(t, rank, key, encode_count(count)); !st) return st;
  if (count > split_at) return split(t, rank, docs, live, first_id, count);
  return {};
}

status before(MDB_txn* t, MDB_dbi rank, MDB_dbi docs, live_fn live, std::string_view id, uint64_t& out) {
  out = 0;
  std::string want = bucket_key(id), holder;
  {
    cursor c;
    if (auto st = c.open(t, rank); !st) return st;
    MDB_val k = lmdb::val(std::string_view("b")), v;
    int rc = mdb_cursor_get(c.c, &k, &v, MDB_SET_RANGE);
    uint64_t pending = 0;  // the count of the bucket before the current one
    for (; rc == 0; rc = mdb_cursor_get(c.c, &k, &v, MDB_NEXT)) {
      std::string_view key = lmdb::view(k);
      if (key.substr(0, 1) != "b" || key > std::string_view(want)) break;
      codec::reader r(lmdb::view(v));
      uint64_t n = 0;
      if (!r.varint(n)) return corrupt_bucket(key);
      out += pending;  // every bucket before the holder counts whole
      pending = n;
      holder.assign(key.substr(1));
    }
    if (rc != 0 && rc != MDB_NOTFOUND) return lmdb::to_status(rc, "mdb_cursor_get");
  }
  // Within the holder: its live documents before `id`.
  return scan_docs(t, docs, holder, [&](std::string_view doc_id, std::string_view value, bool& go_on) -> status {
    if (doc_id >= id) {
      go_on = false;
      return {};
    }
    if (live(doc_id, value)) ++out;
    return {};
  });
}

status total(MDB_txn* t, MDB_dbi rank, uint64_t& out) {
  out = 0;
  cursor c;
  if (auto st = c.open(t, rank); !st) return st;
  MDB_val k = lmdb::val(std::string_view("b")), v;
  int rc = mdb_cursor_get(c.c, &k, &v, MDB_SET_RANGE);
  for (; rc == 0 && lmdb::view(k).substr(0, 1) == "b"; rc = mdb_cursor_get(c.c, &k, &v, MDB_NEXT)) {
    codec::reader r(lmdb::view(v));
    uint64_t n = 0;
    if (!r.varint(n)) return corrupt_bucket(lmdb::view(k));
    out += n;
  }
  return rc == 0 || rc == MDB_NOTFOUND ? status{} : lmdb::to_status(rc, "mdb_cursor_get");
}

status rebuild(MDB_txn* t, MDB_dbi rank, MDB_dbi docs, live_fn live) {
  if (int rc = mdb_drop(t, rank, 0); rc != 0) return lmdb::to_status(rc, "mdb_drop");
  std::string first;  // the current bucket's first id ("" for the first bucket)
  uint64_t n = 0;
  auto st = scan_docs(t, docs, "", [&](std::string_view id, std::string_view value, bool&) -> status {
    if (!live(id, value)) return {};
    if (n == split_at / 2) {  // start the next bucket half full: room to grow before a split
      if (auto s2 = put(t, rank, bucket_key(first), encode_count(n)); !s2) return s2;
      first.assign(id);
      n = 0;
    }
    ++n;
    return {};
  });
  if (!st) return st;
  return put(t, rank, bucket_key(first), encode_count(n));
}

status valid_for(MDB_txn* t, MDB_dbi rank, uint64_t& seq, bool& found) {
  std::string_view raw;
  if (auto st = lmdb::get(t, rank, marker_key, raw, found); !st || !found) return st;
  codec::reader r(raw);
  if (!r.varint(seq)) found = false;  // unreadable: rebuilt like a missing one
  return {};
}

status mark(MDB_txn* t, MDB_dbi rank, uint64_t seq) {
  return put(t, rank, marker_key, encode_count(seq));
}

}  // namespace settee::doc_rank
