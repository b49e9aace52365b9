#include "storage/purge_log.hpp"

#include <memory>

#include "node/check.hpp"
#include "storage/codec.hpp"
#include "storage/doc_key.hpp"
#include "storage/lmdb_env.hpp"

namespace settee::purge_log {
namespace {

using cursor_ptr = std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)>;

status open_cursor(MDB_txn* t, MDB_dbi dbi, cursor_ptr& out) {
  MDB_cursor* c = nullptr;
  if (int rc = mdb_cursor_open(t, dbi, &c); rc != 0) return lmdb::to_status(rc, "purges");
  out = cursor_ptr(c, mdb_cursor_close);
  return {};
}

std::string seq_entry(uint64_t seq) {
  return "s" + codec::seq_key(seq);
}

// "d" + str(doc key): what every entry of document `id` starts with.
std::string doc_prefix(std::string_view id) {
  codec::writer w;
  w.str(doc_key::of(id));
  return "d" + w.data();
}

bool decode(std::string_view key, std::string_view value, purge_info& out) {
  if (key.size() != 9 || key[0] != 's' || !codec::parse_seq_key(key.substr(1), out.seq)) return false;
  codec::reader r(value);
  uint64_t n = 0;
  if (!r.str(out.uuid) || !r.str(out.id) || !r.varint(n) || n > value.size()) return false;
  out.revs.clear();
  for (uint64_t i = 0; i < n; ++i) {
    std::string text;
    rev_id rev;
    if (!r.str(text) || !parse_rev(text, rev)) return false;
    out.revs.push_back(std::move(rev));
  }
  return r.done();
}

}  // namespace

status add(MDB_txn* t, MDB_dbi dbi, const purge_info& p) {
  SETTEE_CHECK(p.seq > 0 && !p.uuid.empty());  // seqs start at 1; every request has its uuid
  codec::writer w;
  w.str(p.uuid);
  w.str(p.id);
  w.varint(p.revs.size());
  for (const rev_id& r : p.revs) w.str(r.str());
  if (auto st = lmdb::put(t, dbi, seq_entry(p.seq), w.data()); !st) return st;
  if (auto st = lmdb::put(t, dbi, doc_prefix(p.id) + codec::seq_key(p.seq), ""); !st) return st;
  return lmdb::put(t, dbi, "u" + p.uuid, codec::seq_key(p.seq));
}

status known(MDB_txn* t, MDB_dbi dbi, std::string_view uuid, bool& found) {
  std::string_view raw;
  return lmdb::get(t, dbi, "u" + std::string(uuid), raw, found);
}

status scan(MDB_txn* t, MDB_dbi dbi, uint64_t since, const std::function<bool(const purge_info&)>& visit) {
  if (since == UINT64_MAX) return {};
  cursor_ptr c(nullptr, mdb_cursor_close);
  if (auto st = open_cursor(t, dbi, c); !st) return st;
  const std::string start = seq_entry(since + 1);
  MDB_val k = lmdb::val(start), v;
  for (int rc = mdb_cursor_get(c.get(), &k, &v, MDB_SET_RANGE); rc == 0;
       rc = mdb_cursor_get(c.get(), &k, &v, MDB_NEXT)) {
    const std::string_view key = lmdb::view(k);
    if (key.empty() || key[0] != 's') break;
    purge_info p;
    if (!decode(key, lmdb::view(v), p)) return {errc::internal, "corrupt purge record"};
    if (!visit(p)) break;
  }
  return {};
}

status revs_of(MDB_txn* t, MDB_dbi dbi, std::string_view id, std::vector<rev_id>& out) {
  out.clear();
  const std::string prefix = doc_prefix(id);
  std::vector<uint64_t> seqs;
  {
    cursor_ptr c(nullptr, mdb_cursor_close);
    if (auto st = open_cursor(t, dbi, c); !st) return st;
    MDB_val k = lmdb::val(prefix), v;
    for (int rc = mdb_cursor_get(c.get(), &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(c.get(), &k, &v, MDB_NEXT)) {
      const std::string_view key = lmdb::view(k);
      uint64_t seq = 0;
      if (key.substr(0, prefix.size()) != prefix) break;
      if (!codec::parse_seq_key(key.substr(prefix.size()), seq)) return {errc::internal, "corrupt purge record"};
      seqs.push_back(seq);
    }
  }
  for (uint64_t seq : seqs) {
    std::string_view raw;
    bool found = false;
    if (auto st = lmdb::get(t, dbi, seq_entry(seq), raw, found); !st) return st;
    purge_info p;
    if (!found || !decode(seq_entry(seq), raw, p)) return {errc::internal, "corrupt purge record"};
    out.insert(out.end(), p.revs.begin(), p.revs.end());
  }
  return {};
}

status oldest(MDB_txn* t, MDB_dbi dbi, uint64_t& out) {
  out = 0;
  return scan(t, dbi, 0, [&](const purge_info& p) {
    out = p.seq;
    return false;
  });
}

status prune(MDB_txn* t, MDB_dbi dbi, uint64_t upto) {
  std::vector<purge_info> gone;
  status st = scan(t, dbi, 0, [&](const purge_info& p) {
    if (p.seq > upto) return false;
    gone.push_back(p);
    return true;
  });
  for (size_t i = 0; i < gone.size() && st; ++i) {
    st = lmdb::del(t, dbi, seq_entry(gone[i].seq));
    if (st) st = lmdb::del(t, dbi, doc_prefix(gone[i].id) + codec::seq_key(gone[i].seq));
    if (st) st = lmdb::del(t, dbi, "u" + gone[i].uuid);
  }
  return st;
}

}  // namespace settee::purge_log
