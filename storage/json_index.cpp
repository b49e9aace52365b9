#include "storage/json_index.hpp"

#include <algorithm>

#include "storage/codec.hpp"
#include "storage/key_buckets.hpp"
#include "storage/lmdb_env.hpp"

namespace settee::json_index {
namespace {

// A row's value: kind 0 = one row (its id follows), kind 1 = a bucket of (position, id) sorted by
// position.
// (storage/key_buckets.hpp)
constexpr char single = key_buckets::single_kind, bucket = key_buckets::bucket_kind;

std::string number_prefix(uint32_t n) {
  std::string p(4, '\0');
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
  return p;
}

struct entry {
  std::string pos, id;  // pos with the number prefix
};

status corrupt() {
  return {errc::internal, "JSON index: a malformed row"};
}

// The rows one rows-table entry holds (key `key`, value `value`), in order.
bool decode_entry(std::string_view key, std::string_view value, std::vector<entry>& out) {
  out.clear();
  if (value.empty()) return false;
  if (value[0] == single) {
    out.push_back({std::string(key), std::string(value.substr(1))});
    return true;
  }
  if (value[0] != bucket) return false;
  codec::reader r(value.substr(1));
  return key_buckets::decode(r, out, [](codec::reader& in, entry& e) { return in.str(e.id); }) && !out.empty();
}

std::string encode_bucket(const std::vector<entry>& rows) {
  return key_buckets::encode(rows, [](codec::writer& w, const entry& e) { w.str(e.id); });
}

std::string key_of(const std::string& full) {
  return full.size() < bucket_len ? full : full.substr(0, bucket_len);
}

status read_bucket(MDB_txn* t, MDB_dbi rows, const std::string& key, std::vector<entry>& out) {
  std::string_view v;
  bool found = false;
  if (auto st = lmdb::get(t, rows, key, v, found); !st) return st;
  out.clear();
  if (found && !decode_entry(key, v, out)) return corrupt();
  return {};
}

status add(MDB_txn* t, MDB_dbi rows, const std::string& full, std::string_view id) {
  if (full.size() < bucket_len) return lmdb::put(t, rows, full, std::string(1, single) + std::string(id));
  const std::string key = key_of(full);
  std::vector<entry> all;
  if (auto st = read_bucket(t, rows, key, all); !st) return st;
  if (!key_buckets::put(all, entry{full, std::string(id)}, false)) return {};  // there already
  return lmdb::put(t, rows, key, encode_bucket(all));
}

status remove(MDB_txn* t, MDB_dbi rows, const std::string& full) {
  if (full.size() < bucket_len) return lmdb::del(t, rows, full);
  const std::string key = key_of(full);
  std::vector<entry> all;
  if (auto st = read_bucket(t, rows, key, all); !st) return st;
  key_buckets::take(all, full);
  return all.empty() ? lmdb::del(t, rows, key) : lmdb::put(t, rows, key, encode_bucket(all));
}

struct cursor {
  MDB_cursor* c = nullptr;
  ~cursor() {
    if (c) mdb_cursor_close(c);
  }
};

// Deletes every key of `dbi` that starts with `prefix`.
status drop_prefix(MDB_txn* t, MDB_dbi dbi, const std::string& prefix) {
  cursor c;
  if (int rc = mdb_cursor_open(t, dbi, &c.c); rc != 0) return lmdb::to_status(rc, "JSON index");
  MDB_val k = lmdb::val(prefix), v;
  int rc = mdb_cursor_get(c.c, &k, &v, MDB_SET_RANGE);
  while (rc == 0 && lmdb::view(k).substr(0, prefix.size()) == prefix) {
    if (rc = mdb_cursor_del(c.c, 0); rc != 0) return lmdb::to_status(rc, "JSON index");
    rc = mdb_cursor_get(c.c, &k, &v, MDB_GET_CURRENT);
    if (rc == EINVAL) rc = MDB_NOTFOUND;  // deleted the last one
  }
  if (rc != 0 && rc != MDB_NOTFOUND) return lmdb::to_status(rc, "JSON index");
  return {};
}

std::string encode_def(const json_index_def& d) {
  codec::writer w;
  w.varint(d.number);
  w.str(d.definition);
  w.byte(d.built ? 1 : 0);
  w.str(d.build_from);
  return std::move(w.data());
}

}  // namespace

std::string position(std::string_view sort_key, std::string_view id) {
  std::string p(sort_key);
  codec::put_escaped(p, id);
  p.push_back('\0');
  return p;
}

std::string past(std::string_view prefix) {
  return std::string(prefix) + std::string(4, '\xff');  // no sort key, escaped id or 0x00 has 0xff
}

status load_defs(MDB_txn* t, const tables& tb, std::vector<json_index_def>& out) {
  out.clear();
  cursor c;
  if (int rc = mdb_cursor_open(t, tb.defs, &c.c); rc != 0) return lmdb::to_status(rc, "JSON index definitions");
  MDB_val k, v;
  for (int rc = mdb_cursor_get(c.c, &k, &v, MDB_FIRST); rc != MDB_NOTFOUND;
       rc = mdb_cursor_get(c.c, &k, &v, MDB_NEXT)) {
    if (rc != 0) return lmdb::to_status(rc, "JSON index definitions");
    json_index_def d;
    d.signature = std::string(lmdb::view(k));
    codec::reader r(lmdb::view(v));
    uint64_t number = 0;
    uint8_t built = 0;
    if (!r.varint(number) || !r.str(d.definition) || !r.byte(built) || !r.str(d.build_from))
      return {errc::internal, "JSON index: a malformed definition"};
    d.number = static_cast<uint32_t>(number);
    d.built = built != 0;
    out.push_back(std::move(d));
  }
  return {};
}

status put_def(MDB_txn* t, const tables& tb, const json_index_def& d) {
  return lmdb::put(t, tb.defs, d.signature, encode_def(d));
}

status clear(MDB_txn* t, const tables& tb, uint32_t number) {
  return drop_prefix(t, tb.rows, number_prefix(number));
}

status drop(MDB_txn* t, const tables& tb, const json_index_def& d) {
  if (auto st = clear(t, tb, d.number); !st) return st;
  return lmdb::del(t, tb.defs, d.signature);
}

status set_row(MDB_txn* t, const tables& tb, uint32_t number, std::string_view id,
               const std::optional<std::string>& was, const std::optional<std::string>& now) {
  if (was == now) return {};
  const std::string n = number_prefix(number);
  if (was) {
    if (auto st = remove(t, tb.rows, n + position(*was, id)); !st) return st;
  }
  return now ? add(t, tb.rows, n + position(*now, id), id) : status{};
}

status scan(MDB_txn* t, const tables& tb, uint32_t number, std::string_view low, std::string_view high, bool descending,
            const std::function<bool(std::string_view pos, std::string_view id)>& visit) {
  const std::string n = number_prefix(number);
  const std::string lo = n + std::string(low);
  const std::string hi = high.empty() ? number_prefix(number + 1) : n + std::string(high);
  cursor c;
  if (int rc = mdb_cursor_open(t, tb.rows, &c.c); rc != 0) return lmdb::to_status(rc, "JSON index");
  std::vector<entry> rows;
  auto in = [&](const entry& e) { return e.pos >= lo && e.pos < hi; };
  MDB_val k, v;
  int rc;
  if (!descending) {
    const std::string start = key_of(lo);
    k = lmdb::val(start);
    for (rc = mdb_cursor_get(c.c, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(c.c, &k, &v, MDB_NEXT)) {
      const std::string_view key = lmdb::view(k), value = lmdb::view(v);
      if (key >= hi) break;
      if (!value.empty() && value[0] == single) {  // one row: read in place
        if (key >= lo && !visit(key.substr(4), value.substr(1))) return {};
        continue;
      }
      if (!decode_entry(key, value, rows)) return corrupt();
      for (const entry& e : rows)
        if (in(e) && !visit(std::string_view(e.pos).substr(4), e.id)) return {};
    }
  } else {
    const std::string start = key_of(hi);
    k = lmdb::val(start);
    rc = mdb_cursor_get(c.c, &k, &v, MDB_SET_RANGE);
    // The entry found is at or after `hi`; only a bucket named by hi's first bytes may hold rows
    // before it.
    if (rc == 0 && !(lmdb::view(k) == start && start.size() == bucket_len))
      rc = mdb_cursor_get(c.c, &k, &v, MDB_PREV);
    else if (rc == MDB_NOTFOUND)
      rc = mdb_cursor_get(c.c, &k, &v, MDB_LAST);
    for (; rc == 0; rc = mdb_cursor_get(c.c, &k, &v, MDB_PREV)) {
      if (!decode_entry(lmdb::view(k), lmdb::view(v), rows)) return corrupt();
      if (rows.back().pos < lo) break;
      for (auto it = rows.rbegin(); it != rows.rend(); ++it)
        if (in(*it) && !visit(std::string_view(it->pos).substr(4), it->id)) return {};
    }
  }
  if (rc != 0 && rc != MDB_NOTFOUND) return lmdb::to_status(rc, "JSON index");
  return {};
}

status count(MDB_txn* t, const tables& tb, uint32_t number, std::string_view low, std::string_view high, uint64_t cap,
             uint64_t& out) {
  out = 0;
  return scan(t, tb, number, low, high, false, [&](std::string_view, std::string_view) { return ++out < cap; });
}

}  // namespace settee::json_index
