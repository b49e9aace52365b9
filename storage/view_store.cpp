#include "storage/view_store.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <set>
#include <string_view>

#include "storage/codec.hpp"
#include "storage/doc_key.hpp"
#include "storage/key_buckets.hpp"
#include "storage/lmdb_env.hpp"

namespace settee {
namespace {

// Meta keys.
constexpr std::string_view k_signature = "signature", k_shard = "shard_uuid", k_collator = "collator",
                           k_views = "views", k_seq = "seq", k_format = "format", k_purge_seq = "purge_seq",
                           k_partials = "partials";
// Which views keep partials: "2" since 0.5 (JavaScript reduces too). A file without it (made by
// 0.4, whose partials are _sum's and _stats') has every block marked dirty once at open.
constexpr std::string_view partials_version = "2";
// The file's layout: a file of another (an older build's) is emptied and indexed again.
constexpr std::string_view format_version = "3";

// Counting blocks (FORMAT.md "View index"): a view's rows table cut into runs of consecutive
// entries, each with its number of rows, so that counting the rows before a position reads the
// blocks before it and at most one block's rows. A block splits past max_block rows and merges
// into the one before it under min_block.
constexpr uint64_t max_block = 512, min_block = 64;
std::string count_key(uint32_t view) {
  return "count/" + std::to_string(view);
}

// A row value: kind 0 = one row, kind 1 = a bucket of (position, row) sorted by position
// (storage/key_buckets.hpp).
constexpr uint8_t single = key_buckets::single_kind, bucket = key_buckets::bucket_kind;

std::string view_prefix(uint32_t view) {
  return {static_cast<char>((view >> 8) & 0xff), static_cast<char>(view & 0xff)};
}

std::string position(uint32_t view, const std::string& sort_key, std::string_view id, uint32_t order) {
  std::string p = view_prefix(view) + sort_key;
  codec::put_escaped(p, id);
  p.push_back(0x00);
  for (int shift = 24; shift >= 0; shift -= 8) p.push_back(static_cast<char>((order >> shift) & 0xff));
  return p;
}

std::string lmdb_key(const std::string& pos) {
  return pos.size() <= view_store::max_key ? pos : pos.substr(0, view_store::max_key);
}

// After every position of `key_part` (a view prefix and sort key, perhaps an escaped id and its
// 0x00): no position continues with 0xff bytes this long (UTF-8 and the escape have none, the
// emit order is never 2^32 - 1).
std::string past(std::string p) {
  return p + std::string(5, '\xff');
}

// The positions a bound stands for: lower bounds are "at or after L", upper "before U".
std::string lower_of(uint32_t view, const view_bound& b) {
  if (!b.set) return view_prefix(view);
  std::string p = view_prefix(view) + b.sort_key;
  if (b.doc_id) {
    codec::put_escaped(p, *b.doc_id);
    p.push_back(0x00);
  }
  return b.inclusive ? p : past(p);
}

std::string upper_of(uint32_t view, const view_bound& b) {
  if (!b.set) return view_prefix(view + 1);
  std::string p = view_prefix(view) + b.sort_key;
  if (b.doc_id) {
    codec::put_escaped(p, *b.doc_id);
    p.push_back(0x00);
  }
  return b.inclusive ? past(p) : p;
}

struct stored_row {
  std::string pos, id, key_json, value_json;
};

// A row's fields after its position (the position is the key of a single row, or in its bucket).
void encode_row(codec::writer& w, const stored_row& r) {
  w.str(r.id);
  w.str(r.key_json);
  w.str(r.value_json);
}

bool decode_rows(std::string_view value, std::string_view lkey, std::vector<stored_row>& out) {
  codec::reader rd(value);
  uint8_t kind = 0;
  if (!rd.byte(kind)) return false;
  if (kind == single) {
    stored_row r;
    r.pos = std::string(lkey);
    if (!rd.str(r.id) || !rd.str(r.key_json) || !rd.str(r.value_json)) return false;
    out.push_back(std::move(r));
    return rd.done();
  }
  return kind == bucket && key_buckets::decode(rd, out, [](codec::reader& r, stored_row& row) {
           return r.str(row.id) && r.str(row.key_json) && r.str(row.value_json);
         });
}

std::string encode_bucket(const std::vector<stored_row>& rows) {
  return key_buckets::encode(rows, [](codec::writer& w, const stored_row& r) { encode_row(w, r); });
}

status corrupt(const char* what) {
  return {errc::internal, std::string("view index: a malformed ") + what};
}

status read_u64(MDB_txn* t, MDB_dbi dbi, std::string_view key, uint64_t& out) {
  std::string_view v;
  bool found = false;
  if (auto st = lmdb::get(t, dbi, key, v, found); !st) return st;
  out = found ? std::stoull(std::string(v)) : 0;
  return {};
}

status read_str(MDB_txn* t, MDB_dbi dbi, std::string_view key, std::string& out) {
  std::string_view v;
  bool found = false;
  if (auto st = lmdb::get(t, dbi, key, v, found); !st) return st;
  out = found ? std::string(v) : "";
  return {};
}

// Rows in one rows-table entry: 1, or a bucket's.
result<uint64_t> rows_in(std::string_view lkey, std::string_view value) {
  if (!value.empty() && static_cast<uint8_t>(value[0]) == single) return 1;
  std::vector<stored_row> all;
  if (!decode_rows(value, lkey, all)) return corrupt("bucket");
  return all.size();
}

std::string u64_text(uint64_t n) {
  return std::to_string(n);
}

struct cursor {
  MDB_cursor* c = nullptr;
  ~cursor() {
    if (c) mdb_cursor_close(c);
  }
};

// The tables a row's change touches, and the blocks marked dirty in this transaction.
struct tables {
  MDB_dbi rows, blocks, partials, dirty;
  std::set<std::string>* marked;
};

// Block `start` changed: its partial reduction goes, and it waits in `dirty` to be reduced again
// (once per transaction: a batch touches a block many times).
status mark_dirty(MDB_txn* t, const tables& tb, const std::string& start) {
  if (!tb.marked->insert(start).second) return {};
  if (auto st = lmdb::del(t, tb.partials, start); !st) return st;
  return lmdb::put(t, tb.dirty, start, "");
}

// The block holding rows-table key `lk` of view `view`: its start key and count. `found` false
// when the view has no block yet.
status block_of(MDB_txn* t, MDB_dbi blocks, uint32_t view, const std::string& lk, std::string& start, uint64_t& n,
                bool& found) {
  cursor c;
  if (int rc = mdb_cursor_open(t, blocks, &c.c); rc != 0) return lmdb::to_status(rc, "view blocks");
  MDB_val k = lmdb::val(lk), v;
  int rc = mdb_cursor_get(c.c, &k, &v, MDB_SET_RANGE);
  if (rc == MDB_NOTFOUND || (rc == 0 && lmdb::view(k) != lk))
    rc = rc == MDB_NOTFOUND ? mdb_cursor_get(c.c, &k, &v, MDB_LAST) : mdb_cursor_get(c.c, &k, &v, MDB_PREV);
  found = false;
  if (rc == MDB_NOTFOUND) return {};
  if (rc != 0) return lmdb::to_status(rc, "view blocks");
  const std::string_view key = lmdb::view(k);
  if (key.substr(0, 2) != view_prefix(view)) return {};  // another view's: this one has none
  start = std::string(key);
  n = std::stoull(std::string(lmdb::view(v)));
  found = true;
  return {};
}

// Splits the block at `start` (of `n` rows) in two at the coarsest change of key between its
// middle quarters: where the entry shares the shortest prefix with the one before it (the nearest
// to the middle among equals). A sort key is free of prefixes and an array's elements come in
// order, so a cut where keys differ early lies on a group's edge for `group=true` and for every
// `group_level` it can: a grouped reduce then takes the blocks on each side whole instead of
// reading the rows around the edge (section 52 of docs/architecture.md).
status split_block(MDB_txn* t, const tables& tb, const std::string& start, uint64_t n) {
  cursor c;
  if (int rc = mdb_cursor_open(t, tb.rows, &c.c); rc != 0) return lmdb::to_status(rc, "view blocks");
  MDB_val k = lmdb::val(start), v;
  uint64_t before = 0, cut_before = 0;
  std::string prev, cut;
  size_t cut_shared = SIZE_MAX;
  auto off_middle = [n](uint64_t b) { return b > n / 2 ? b - n / 2 : n / 2 - b; };
  for (int rc = mdb_cursor_get(c.c, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(c.c, &k, &v, MDB_NEXT)) {
    const std::string_view key = lmdb::view(k);
    if (before > n - n / 4 && !cut.empty()) break;
    if (before >= n / 4 && key != start) {
      const size_t shared =
          static_cast<size_t>(std::mismatch(prev.begin(), prev.end(), key.begin(), key.end()).first - prev.begin());
      if (cut.empty() || shared < cut_shared || (shared == cut_shared && off_middle(before) < off_middle(cut_before))) {
        cut.assign(key);
        cut_shared = shared;
        cut_before = before;
      }
    }
    auto in = rows_in(key, lmdb::view(v));
    if (!in) return in.error();
    before += *in;
    prev.assign(key);
  }
  if (cut.empty()) return {};  // one entry (a bucket) holds them all: nothing to cut
  if (auto st = lmdb::put(t, tb.blocks, cut, u64_text(n - cut_before)); !st) return st;
  if (auto st = mark_dirty(t, tb, cut); !st) return st;
  return lmdb::put(t, tb.blocks, start, u64_text(cut_before));
}

// Counts `delta` rows in or out of the block holding key `lk` of view `view`, splitting a block
// grown past max_block and merging one shrunk under min_block into the one before it.
status count_rows(MDB_txn* t, const tables& tb, uint32_t view, const std::string& lk, int64_t delta) {
  std::string start;
  uint64_t n = 0;
  bool found = false;
  if (auto st = block_of(t, tb.blocks, view, lk, start, n, found); !st) return st;
  if (!found) {  // the view's first block starts at its prefix: every key of the view is in one
    start = view_prefix(view);
    n = 0;
  }
  n = static_cast<uint64_t>(static_cast<int64_t>(n) + delta);
  if (auto st = lmdb::put(t, tb.blocks, start, u64_text(n)); !st) return st;
  if (auto st = mark_dirty(t, tb, start); !st) return st;
  if (n > max_block) return split_block(t, tb, start, n);
  if (n < min_block && start != view_prefix(view)) {
    // The block before (the view's first block is before any other of the view).
    cursor c;
    if (int rc = mdb_cursor_open(t, tb.blocks, &c.c); rc != 0) return lmdb::to_status(rc, "view blocks");
    MDB_val k = lmdb::val(start), v;
    int rc = mdb_cursor_get(c.c, &k, &v, MDB_SET_KEY);
    if (rc == 0) rc = mdb_cursor_get(c.c, &k, &v, MDB_PREV);
    if (rc != 0) return lmdb::to_status(rc, "view blocks");
    const std::string prev(lmdb::view(k));
    const uint64_t m = std::stoull(std::string(lmdb::view(v)));
    if (m + n <= max_block) {
      if (auto st = lmdb::del(t, tb.blocks, start); !st) return st;
      if (auto st = lmdb::del(t, tb.partials, start); !st) return st;
      if (auto st = lmdb::del(t, tb.dirty, start); !st) return st;
      tb.marked->erase(start);
      if (auto st = mark_dirty(t, tb, prev); !st) return st;
      return lmdb::put(t, tb.blocks, prev, u64_text(m + n));
    }
  }
  return {};
}

// Removes the row at `pos` (absent: nothing); counted out of its block.
status remove_row(MDB_txn* t, const tables& tb, uint32_t view, const std::string& pos) {
  const std::string lk = lmdb_key(pos);
  std::string_view v;
  bool found = false;
  if (auto st = lmdb::get(t, tb.rows, lk, v, found); !st || !found) return st;
  if (lk.size() == pos.size()) {
    if (auto st = lmdb::del(t, tb.rows, lk); !st) return st;
    return count_rows(t, tb, view, lk, -1);
  }
  std::vector<stored_row> all;
  if (!decode_rows(v, lk, all)) return corrupt("bucket");
  if (!key_buckets::take(all, pos)) return {};
  status st = all.empty() ? lmdb::del(t, tb.rows, lk) : lmdb::put(t, tb.rows, lk, encode_bucket(all));
  if (!st) return st;
  return count_rows(t, tb, view, lk, -1);
}

// Inserts (replaces) row `r` of view `view`; a new row is counted into its block.
status insert_row(MDB_txn* t, const tables& tb, uint32_t view, const stored_row& r) {
  const std::string lk = lmdb_key(r.pos);
  std::string_view v;
  bool found = false;
  if (auto st = lmdb::get(t, tb.rows, lk, v, found); !st) return st;
  if (lk.size() == r.pos.size()) {
    codec::writer w;
    w.byte(single);
    encode_row(w, r);
    if (auto st = lmdb::put(t, tb.rows, lk, w.data()); !st) return st;
    return found ? status{} : count_rows(t, tb, view, lk, +1);
  }
  std::vector<stored_row> all;
  if (found && !decode_rows(v, lk, all)) return corrupt("bucket");
  const bool added = key_buckets::put(all, r, true);  // decode_rows refused an unsorted bucket
  if (auto st = lmdb::put(t, tb.rows, lk, encode_bucket(all)); !st) return st;
  return added ? count_rows(t, tb, view, lk, +1) : status{};
}

}  // namespace

result<std::unique_ptr<view_store>> view_store::open(const std::string& path, const view_meta& expected) {
  return lmdb::open_or_remove(path, [&]() -> result<std::unique_ptr<view_store>> {
    std::unique_ptr<view_store> s(new view_store());
    lmdb::txn t;
    // The index records the seq it covers in each commit: a commit undone by a machine crash is
    // indexed again, so one fsync a commit is enough.
    lmdb::file_options opts;
    opts.meta_sync = false;
    status st = lmdb::open_file(path, opts,
                                {{"meta", &s->meta_},
                                 {"rows", &s->rows_},
                                 {"ids", &s->ids_},
                                 {"blocks", &s->blocks_},
                                 {"partials", &s->partials_},
                                 {"dirty", &s->dirty_}},
                                s->env_, t);
    if (!st) return st;
    view_meta found;
    uint64_t views = 0;
    std::string format;
    if (!(st = read_str(t.get(), s->meta_, k_format, format)) ||
        !(st = read_str(t.get(), s->meta_, k_signature, found.signature)) ||
        !(st = read_str(t.get(), s->meta_, k_shard, found.shard_uuid)) ||
        !(st = read_str(t.get(), s->meta_, k_collator, found.collator)) ||
        !(st = read_u64(t.get(), s->meta_, k_views, views)) || !(st = read_u64(t.get(), s->meta_, k_seq, found.seq)) ||
        !(st = read_u64(t.get(), s->meta_, k_purge_seq, found.purge_seq)))
      return st;
    found.views = static_cast<uint32_t>(views);
    const bool same = format == format_version && found.signature == expected.signature &&
                      found.shard_uuid == expected.shard_uuid && found.collator == expected.collator &&
                      found.views == expected.views;
    if (!same) {
      if (!(st = s->reset(t.get(), expected))) return st;
      found = expected;
      found.seq = 0;
      found.purge_seq = 0;
    }
    if (!(st = s->mark_all_dirty_once(t.get()))) return st;
    if (!(st = t.commit())) return st;
    s->meta_cache_ = found;
    s->seq_ = found.seq;
    s->purge_seq_ = found.purge_seq;
    s->path_ = path;
    return s;
  });
}

status view_store::mark_all_dirty_once(MDB_txn* t) {
  std::string version;
  if (auto st = read_str(t, meta_, k_partials, version); !st) return st;
  if (version == partials_version) return {};
  cursor c;
  if (int rc = mdb_cursor_open(t, blocks_, &c.c); rc != 0) return lmdb::to_status(rc, "view blocks");
  MDB_val k, v;
  int rc = mdb_cursor_get(c.c, &k, &v, MDB_FIRST);
  for (; rc == 0; rc = mdb_cursor_get(c.c, &k, &v, MDB_NEXT))
    if (auto st = lmdb::put(t, dirty_, lmdb::view(k), ""); !st) return st;
  if (rc != MDB_NOTFOUND) return lmdb::to_status(rc, "view blocks");
  return lmdb::put(t, meta_, k_partials, partials_version);
}

view_store::~view_store() {
  if (env_) lmdb::close_file(env_);
}

status view_store::reset(MDB_txn* t, const view_meta& m) {
  for (MDB_dbi dbi : {meta_, rows_, ids_, blocks_, partials_, dirty_})
    if (int rc = mdb_drop(t, dbi, 0); rc != 0) return lmdb::to_status(rc, "view index reset");
  status st;
  if (!(st = lmdb::put(t, meta_, k_format, format_version)) || !(st = lmdb::put(t, meta_, k_signature, m.signature)) ||
      !(st = lmdb::put(t, meta_, k_shard, m.shard_uuid)) || !(st = lmdb::put(t, meta_, k_collator, m.collator)) ||
      !(st = lmdb::put(t, meta_, k_views, std::to_string(m.views))) || !(st = lmdb::put(t, meta_, k_seq, "0")))
    return st;
  return {};
}

view_meta view_store::meta() const {
  view_meta m = meta_cache_;  // only its seq changes after open
  m.seq = seq_.load(std::memory_order_acquire);
  return m;
}

uint64_t view_store::disk_size() const {
  struct stat st {};
  return ::stat(path_.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

uint64_t view_store::active_size() const {
  // The pages up to the last one used, less those on LMDB's free list (as mdb_stat -f counts them:
  // each free-list record is a page list whose first word is its length).
  MDB_envinfo info{};
  MDB_stat st{};
  if (mdb_env_info(env_, &info) != 0 || mdb_env_stat(env_, &st) != 0) return 0;
  uint64_t free_pages = 0;
  lmdb::txn t;
  if (!t.begin(env_, true)) return 0;
  MDB_cursor* c = nullptr;
  if (mdb_cursor_open(t.get(), 0, &c) != 0) return 0;
  MDB_val k, v;
  while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0) free_pages += *static_cast<const size_t*>(v.mv_data);
  mdb_cursor_close(c);
  const uint64_t pages = static_cast<uint64_t>(info.me_last_pgno) + 1;
  return (pages > free_pages ? pages - free_pages : 0) * st.ms_psize;
}

status view_store::clear(uint64_t purge_seq) {
  lmdb::txn t;
  if (auto st = t.begin(env_, false); !st) return st;
  if (auto st = reset(t.get(), meta_cache_); !st) return st;
  if (auto st = lmdb::put(t.get(), meta_, k_purge_seq, std::to_string(purge_seq)); !st) return st;
  if (auto st = t.commit(); !st) return st;
  seq_.store(0, std::memory_order_release);
  purge_seq_.store(purge_seq, std::memory_order_release);
  return {};
}

status view_store::apply(const std::vector<view_doc>& docs, uint64_t seq, const block_reducer* reducer,
                         std::optional<uint64_t> purge_seq) {
  lmdb::txn t;
  if (auto st = t.begin(env_, false); !st) return st;
  std::set<std::string> marked;
  const tables tb{rows_, blocks_, partials_, dirty_, &marked};
  std::vector<int64_t> delta(meta_cache_.views, 0);
  for (const view_doc& d : docs) {
    const std::string idk = doc_key::of(d.id);
    // What the document emitted before goes.
    std::string_view old;
    bool found = false;
    if (auto st = lmdb::get(t.get(), ids_, idk, old, found); !st) return st;
    if (found) {
      codec::reader rd(old);
      std::string id, pos;
      if (!rd.str(id)) return corrupt("document entry");
      while (!rd.done()) {
        if (!rd.str(pos) || pos.size() < 2) return corrupt("document entry");
        const uint32_t view = (static_cast<uint8_t>(pos[0]) << 8) | static_cast<uint8_t>(pos[1]);
        if (view < delta.size()) --delta[view];
        if (auto st = remove_row(t.get(), tb, view, pos); !st) return st;
      }
    }
    // What it emits now comes in.
    codec::writer entry;
    entry.str(d.id);
    bool any = false;
    for (uint32_t v = 0; v < d.views.size() && v < meta_cache_.views; ++v) {
      for (uint32_t i = 0; i < d.views[v].size(); ++i) {
        const view_row_in& in = d.views[v][i];
        stored_row r{position(v, in.sort_key, d.id, i), d.id, in.key_json, in.value_json};
        if (auto st = insert_row(t.get(), tb, v, r); !st) return st;
        entry.str(r.pos);
        ++delta[v];
        any = true;
      }
    }
    status st = any ? lmdb::put(t.get(), ids_, idk, entry.data()) : lmdb::del(t.get(), ids_, idk);
    if (!st) return st;
  }
  for (uint32_t v = 0; v < delta.size(); ++v) {
    if (!delta[v]) continue;
    uint64_t n = 0;
    if (auto st = read_u64(t.get(), meta_, count_key(v), n); !st) return st;
    n = static_cast<uint64_t>(static_cast<int64_t>(n) + delta[v]);
    if (auto st = lmdb::put(t.get(), meta_, count_key(v), std::to_string(n)); !st) return st;
  }
  if (auto st = lmdb::put(t.get(), meta_, k_seq, std::to_string(seq)); !st) return st;
  if (purge_seq)
    if (auto st = lmdb::put(t.get(), meta_, k_purge_seq, std::to_string(*purge_seq)); !st) return st;
  if (reducer)
    if (auto st = settle_in(t.get(), *reducer); !st) return st;
  if (auto st = t.commit(); !st) return st;
  seq_.store(seq, std::memory_order_release);
  if (purge_seq) purge_seq_.store(*purge_seq, std::memory_order_release);
  return {};
}

status view_store::settle(const block_reducer& reducer) {
  {
    lmdb::txn r;
    if (auto st = r.begin(env_, true); !st) return st;
    MDB_stat st{};
    if (int rc = mdb_stat(r.get(), dirty_, &st); rc != 0) return lmdb::to_status(rc, "view blocks");
    if (st.ms_entries == 0) return {};  // nothing changed since: no write, no fsync
  }
  lmdb::txn t;
  if (auto st = t.begin(env_, false); !st) return st;
  if (auto st = settle_in(t.get(), reducer); !st) return st;
  return t.commit();
}

status view_store::settle_in(MDB_txn* t, const block_reducer& reducer) {
  std::vector<std::string> dirty;
  {
    cursor c;
    if (int rc = mdb_cursor_open(t, dirty_, &c.c); rc != 0) return lmdb::to_status(rc, "view blocks");
    MDB_val k, v;
    for (int rc = mdb_cursor_get(c.c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c.c, &k, &v, MDB_NEXT))
      dirty.emplace_back(lmdb::view(k));
  }
  // The dirty blocks of one view (they sort by view), reduced a run of them at a time.
  constexpr size_t run = 256;
  uint32_t run_view = 0;
  std::vector<std::string> starts;
  std::vector<std::vector<view_row>> blocks;
  auto flush = [&]() -> status {
    if (starts.empty()) return {};
    const std::vector<std::string> made = reducer.reduce(run_view, blocks);
    for (size_t i = 0; i < starts.size() && i < made.size(); ++i)
      if (!made[i].empty())
        if (auto st = lmdb::put(t, partials_, starts[i], made[i]); !st) return st;
    starts.clear();
    blocks.clear();
    return {};
  };
  for (const std::string& start : dirty) {
    if (auto st = lmdb::del(t, dirty_, start); !st) return st;
    if (start.size() < 2) continue;
    const uint32_t view = (static_cast<uint8_t>(start[0]) << 8) | static_cast<uint8_t>(start[1]);
    if (!reducer.keeps(view)) continue;
    if (view != run_view || starts.size() >= run)
      if (auto st = flush(); !st) return st;
    run_view = view;
    // The block's rows: from its start to the next block's (or the view's end).
    std::string next = view_prefix(view + 1);
    {
      cursor c;
      if (int rc = mdb_cursor_open(t, blocks_, &c.c); rc != 0) return lmdb::to_status(rc, "view blocks");
      MDB_val k = lmdb::val(start), v;
      int rc = mdb_cursor_get(c.c, &k, &v, MDB_SET_KEY);
      if (rc == MDB_NOTFOUND) continue;  // merged away
      if (rc == 0) rc = mdb_cursor_get(c.c, &k, &v, MDB_NEXT);
      if (rc == 0 && lmdb::view(k) < next) next = std::string(lmdb::view(k));
      if (rc != 0 && rc != MDB_NOTFOUND) return lmdb::to_status(rc, "view blocks");
    }
    blocks.emplace_back();
    if (auto st = walk(t, start, next, view_scan{}, nullptr, blocks.back()); !st) return st;
    starts.push_back(start);
  }
  return flush();
}

status view_store::reduce_range(const view_scan& s, std::vector<std::string>& partials,
                                std::vector<view_row>& rows) const {
  lmdb::txn t;
  if (auto st = t.begin(env_, true); !st) return st;
  const std::string low = lower_of(s.view, s.low), high = upper_of(s.view, s.high), end = view_prefix(s.view + 1);
  if (low >= high) return {};
  // From the block holding low: a block wholly in [low, high) gives its partial (its rows when it
  // has none yet), the blocks at the range's ends their rows in range.
  std::string start;
  uint64_t n = 0;
  bool found = false;
  if (auto st = block_of(t.get(), blocks_, s.view, lmdb_key(low), start, n, found); !st) return st;
  if (!found) return {};  // the view has no rows
  cursor c;
  if (int rc = mdb_cursor_open(t.get(), blocks_, &c.c); rc != 0) return lmdb::to_status(rc, "view blocks");
  MDB_val k = lmdb::val(start), v;
  int rc = mdb_cursor_get(c.c, &k, &v, MDB_SET_KEY);
  while (rc == 0 && lmdb::view(k) < high) {
    const std::string from(lmdb::view(k));
    rc = mdb_cursor_get(c.c, &k, &v, MDB_NEXT);
    if (rc != 0 && rc != MDB_NOTFOUND) return lmdb::to_status(rc, "view blocks");
    const std::string next = rc == 0 && lmdb::view(k) < end ? std::string(lmdb::view(k)) : end;
    std::string_view partial;
    bool has = false;
    if (from >= low && next <= high)
      if (auto st = lmdb::get(t.get(), partials_, from, partial, has); !st) return st;
    if (has) {
      partials.emplace_back(partial);
    } else if (auto st = walk(t.get(), std::max(from, low), std::min(next, high), view_scan{}, nullptr, rows); !st) {
      return st;
    }
    if (next == end) break;
  }
  if (rc != 0 && rc != MDB_NOTFOUND) return lmdb::to_status(rc, "view blocks");
  return {};
}

namespace {

// The group a rows-table key starts (its sort key's group bytes) into `id`; false when the key
// does not tell (an LMDB key cut at max_key before the group's bytes end, or a malformed one).
bool group_of(const std::function<size_t(std::string_view)>& group_length, std::string_view key, std::string& id) {
  if (key.size() < 2) return false;
  const size_t n = group_length(key.substr(2));
  if (n == std::string_view::npos || 2 + n > key.size()) return false;
  id.assign(key.substr(2, n));
  return true;
}

}  // namespace

status view_store::whole_group_block(MDB_txn* t, group_walk& w, const std::string& from, const std::string& next,
                                     bool& whole, std::string& last_key) const {
  whole = false;
  last_key.clear();
  if (w.use == block_use::rows || from < w.low || next > w.high || !group_of(w.group_length, from, w.id)) return {};
  // Wholly inside one group: the next block starts in range, in the same group (the group's last
  // row is then in a later block), or the block's last row is in the group (it ends there: its
  // key is the group's last).
  std::string id;
  if (next < w.high && next != w.end && group_of(w.group_length, next, id) && id == w.id) {
    whole = true;
  } else {
    cursor c;
    if (int rc = mdb_cursor_open(t, rows_, &c.c); rc != 0) return lmdb::to_status(rc, "view scan");
    MDB_val k = lmdb::val(next), v;
    int rc = mdb_cursor_get(c.c, &k, &v, MDB_SET_RANGE);
    rc = mdb_cursor_get(c.c, &k, &v, rc == 0 ? MDB_PREV : MDB_LAST);
    if (rc != 0 && rc != MDB_NOTFOUND) return lmdb::to_status(rc, "view scan");
    if (rc != 0 || lmdb::view(k) < from || !group_of(w.group_length, lmdb::view(k), id) || id != w.id) return {};
    std::vector<stored_row> rows;
    if (!decode_rows(lmdb::view(v), lmdb::view(k), rows) || rows.empty()) return corrupt("row");
    whole = true;
    last_key = std::move(rows.back().key_json);
  }
  if (w.use != block_use::partials) return {};
  std::string_view partial;
  if (auto st = lmdb::get(t, partials_, from, partial, whole); !st) return st;
  w.partial.assign(partial);
  if (!whole) last_key.clear();
  return {};
}

status view_store::group_rows(MDB_txn* t, group_walk& w, const std::string& low, const std::string& high,
                              uint64_t max_groups, std::vector<view_group>& out, bool& full) const {
  cursor c;
  if (int rc = mdb_cursor_open(t, rows_, &c.c); rc != 0) return lmdb::to_status(rc, "view scan");
  // A single row's position is its LMDB key: counted (block_use::counts) without decoding it,
  // but for the keys of a group's first and last rows.
  const bool counting = w.use == block_use::counts;
  std::vector<stored_row> rows;
  auto key_of = [&](const MDB_val& k, const MDB_val& v, bool last, std::string& key) {
    rows.clear();
    if (!decode_rows(lmdb::view(v), lmdb::view(k), rows) || rows.empty()) return false;
    key = (last ? rows.back() : rows.front()).key_json;
    return true;
  };
  const std::string from = lmdb_key(low);
  MDB_val k = lmdb::val(from), v, prev_k{0, nullptr}, prev_v{0, nullptr};
  int rc = mdb_cursor_get(c.c, &k, &v, MDB_SET_RANGE);
  for (; rc == 0 && lmdb::view(k) < high && !full; rc = mdb_cursor_get(c.c, &k, &v, MDB_NEXT)) {
    const bool one = v.mv_size && static_cast<const uint8_t*>(v.mv_data)[0] == single;
    if (one) {
      const std::string_view pos = lmdb::view(k);
      if (pos < low) continue;
      if (!group_of(w.group_length, pos, w.id)) return corrupt("row position");
      if (out.empty() || out.back().id != w.id) {
        if (!out.empty() && prev_v.mv_data && !key_of(prev_k, prev_v, true, out.back().last_key)) return corrupt("row");
        fold_run(w, out);
        if ((full = out.size() >= max_groups)) break;
        out.push_back(view_group{w.id, "", "", 0, {}, {}});
        if (!key_of(k, v, false, out.back().first_key)) return corrupt("row");
      }
      prev_k = k;
      prev_v = v;
      if (counting) {
        ++out.back().counted;
        continue;
      }
      // Its fields read straight into the run (no position: a reduce needs none).
      codec::reader rd(lmdb::view(v).substr(1));
      view_row& row = w.run.emplace_back();
      if (!rd.str(row.id) || !rd.str(row.key_json) || !rd.str(row.value_json)) return corrupt("row");
      continue;
    }
    rows.clear();
    if (!decode_rows(lmdb::view(v), lmdb::view(k), rows)) return corrupt("row");
    for (stored_row& r : rows) {
      if (r.pos < low || r.pos >= high) continue;
      if (!group_of(w.group_length, r.pos, w.id)) return corrupt("row position");
      if (out.empty() || out.back().id != w.id) {
        if (!out.empty() && prev_v.mv_data && !key_of(prev_k, prev_v, true, out.back().last_key)) return corrupt("row");
        fold_run(w, out);
        if ((full = out.size() >= max_groups)) break;
        out.push_back(view_group{w.id, r.key_json, "", 0, {}, {}});
      }
      out.back().last_key = r.key_json;
      prev_v = MDB_val{0, nullptr};  // the last key is known
      if (counting)
        ++out.back().counted;
      else
        w.run.push_back({std::move(r.id), std::move(r.key_json), std::move(r.value_json), std::move(r.pos)});
    }
  }
  if (rc != 0 && rc != MDB_NOTFOUND) return lmdb::to_status(rc, "view scan");
  if (!out.empty() && prev_v.mv_data && !key_of(prev_k, prev_v, true, out.back().last_key)) return corrupt("row");
  fold_run(w, out);
  return {};
}

void view_store::fold_run(group_walk& w, std::vector<view_group>& out) {
  if (w.run.empty()) return;
  std::vector<std::string> made;
  // A long run folded (a group's rows then never pile up); a short one stays rows (one reduce of
  // all the group's rows later costs less than a call per run).
  constexpr size_t fold_from = 64;
  if (w.fold && w.run.size() >= fold_from) {  // the run lent to the reducer, not copied
    std::vector<std::vector<view_row>> one(1);
    one[0].swap(w.run);
    made = w.fold->reduce(w.view, one);
    w.run.swap(one[0]);
  }
  if (!made.empty() && !made[0].empty()) {
    out.back().partials.push_back(std::move(made[0]));
  } else {
    std::vector<view_row>& rows = out.back().rows;
    if (rows.empty()) {
      rows.swap(w.run);  // the usual case: the group's rows are this run
    } else {
      rows.reserve(rows.size() + w.run.size());
      for (view_row& row : w.run) rows.push_back(std::move(row));
    }
  }
  w.run.clear();
}

status view_store::reduce_groups(const view_scan& s, const std::function<size_t(std::string_view)>& group_length,
                                 block_use use, uint64_t max_groups, std::vector<view_group>& out,
                                 const block_reducer* fold) const {
  lmdb::txn t;
  if (auto st = t.begin(env_, true); !st) return st;
  group_walk w{group_length, use,   lower_of(s.view, s.low), upper_of(s.view, s.high), view_prefix(s.view + 1),
               fold,         s.view};
  if (w.low >= w.high || max_groups == 0) return {};
  std::string start;
  uint64_t n = 0;
  bool found = false, full = false;  // full: max_groups reached, the next group ends the walk
  if (auto st = block_of(t.get(), blocks_, s.view, lmdb_key(w.low), start, n, found); !st) return st;
  if (!found) return {};  // the view has no rows
  cursor c;
  if (int rc = mdb_cursor_open(t.get(), blocks_, &c.c); rc != 0) return lmdb::to_status(rc, "view blocks");
  MDB_val k = lmdb::val(start), v;
  int rc = mdb_cursor_get(c.c, &k, &v, MDB_SET_KEY);
  while (rc == 0 && lmdb::view(k) < w.high && !full) {
    const std::string from(lmdb::view(k));
    const uint64_t rows_in_block = std::stoull(std::string(lmdb::view(v)));
    rc = mdb_cursor_get(c.c, &k, &v, MDB_NEXT);
    if (rc != 0 && rc != MDB_NOTFOUND) return lmdb::to_status(rc, "view blocks");
    const std::string next = rc == 0 && lmdb::view(k) < w.end ? std::string(lmdb::view(k)) : w.end;
    bool whole = false;
    std::string last_key;
    if (auto st = whole_group_block(t.get(), w, from, next, whole, last_key); !st) return st;
    std::vector<view_row> rows;
    if (whole && (out.empty() || out.back().id != w.id)) {
      if (out.size() >= max_groups) break;
      // The group starts with this block: its first row's key.
      view_scan one;
      one.limit = 1;
      if (auto st = walk(t.get(), from, next, one, nullptr, rows); !st) return st;
      if (rows.empty()) return corrupt("block");
      out.push_back(view_group{w.id, rows[0].key_json, rows[0].key_json, 0, {}, {}});
    }
    if (whole && !last_key.empty()) out.back().last_key = std::move(last_key);
    if (whole && use == block_use::counts) {
      out.back().counted += rows_in_block;
    } else if (whole) {
      out.back().partials.push_back(w.partial);
    } else if (auto st = group_rows(t.get(), w, std::max(from, w.low), std::min(next, w.high), max_groups, out, full);
               !st) {
      return st;
    }
    if (next == w.end) break;
  }
  if (rc != 0 && rc != MDB_NOTFOUND) return lmdb::to_status(rc, "view blocks");
  return {};
}

result<std::vector<view_row>> view_store::scan(const view_scan& s, uint64_t* total) const {
  lmdb::txn t;
  if (auto st = t.begin(env_, true); !st) return st;
  if (total)
    if (auto st = read_u64(t.get(), meta_, count_key(s.view), *total); !st) return st;
  std::vector<view_row> out;
  if (auto st = walk(t.get(), lower_of(s.view, s.low), upper_of(s.view, s.high), s, nullptr, out); !st) return st;
  return out;
}

result<uint64_t> view_store::count(const view_scan& s) const {
  lmdb::txn t;
  if (auto st = t.begin(env_, true); !st) return st;
  const std::string low = lower_of(s.view, s.low), high = upper_of(s.view, s.high);
  if (low >= high) return uint64_t{0};
  auto below_high = rank(t.get(), s.view, high);
  if (!below_high) return below_high;
  auto below_low = rank(t.get(), s.view, low);
  if (!below_low) return below_low;
  return *below_high > *below_low ? *below_high - *below_low : 0;
}

result<uint64_t> view_store::rank(MDB_txn* t, uint32_t view, const std::string& pos) const {
  const std::string first = view_prefix(view), end = view_prefix(view + 1);
  if (pos <= first) return uint64_t{0};
  if (pos >= end) {
    uint64_t n = 0;
    if (auto st = read_u64(t, meta_, count_key(view), n); !st) return st;
    return n;
  }
  cursor c;
  if (int rc = mdb_cursor_open(t, blocks_, &c.c); rc != 0) return lmdb::to_status(rc, "view blocks");
  MDB_val k = lmdb::val(first), v;
  int rc = mdb_cursor_get(c.c, &k, &v, MDB_SET_RANGE);
  uint64_t below = 0;
  // Whole blocks before `pos` (every row of a block is before the next block's start), then the
  // rows of the block `pos` falls in, counted from its start.
  while (rc == 0 && lmdb::view(k) < end) {
    const std::string start(lmdb::view(k));
    const uint64_t n = std::stoull(std::string(lmdb::view(v)));
    rc = mdb_cursor_get(c.c, &k, &v, MDB_NEXT);
    if (rc != 0 && rc != MDB_NOTFOUND) return lmdb::to_status(rc, "view blocks");
    const std::string_view next = rc == 0 && lmdb::view(k) < end ? lmdb::view(k) : std::string_view(end);
    if (next <= pos) {
      below += n;
      continue;
    }
    uint64_t inside = 0;
    std::vector<view_row> none;
    view_scan counting;
    if (auto st = walk(t, start, pos, counting, &inside, none); !st) return st;
    return below + inside;
  }
  if (rc != 0 && rc != MDB_NOTFOUND) return lmdb::to_status(rc, "view blocks");
  return below;
}

status view_store::walk(MDB_txn* t, const std::string& low, const std::string& high, const view_scan& s,
                        uint64_t* counted, std::vector<view_row>& out) const {
  if (low >= high) return {};
  cursor c;
  if (int rc = mdb_cursor_open(t, rows_, &c.c); rc != 0) return lmdb::to_status(rc, "view scan");
  uint64_t skipped = 0;
  bool more = true;
  // Takes the rows of one LMDB entry that fall in [low, high), in the scan's direction.
  auto take = [&](const MDB_val& k, const MDB_val& v) -> status {
    // Counting a single row: its position is its key, nothing to decode.
    const std::string_view key = lmdb::view(k);
    if (counted && v.mv_size && static_cast<const uint8_t*>(v.mv_data)[0] == single) {
      if (key >= low && key < high) ++*counted;
      return {};
    }
    std::vector<stored_row> rows;
    if (!decode_rows(lmdb::view(v), lmdb::view(k), rows)) return corrupt("row");
    if (s.descending) std::reverse(rows.begin(), rows.end());
    for (auto& r : rows) {
      if (r.pos < low || r.pos >= high) continue;
      if (counted) {
        ++*counted;
        continue;
      }
      if (skipped < s.skip) {
        ++skipped;
        continue;
      }
      if (out.size() >= s.limit) {
        more = false;
        break;
      }
      out.push_back({std::move(r.id), std::move(r.key_json), std::move(r.value_json), std::move(r.pos)});
    }
    return {};
  };
  MDB_val k, v;
  if (!s.descending) {
    // From the first entry at or after low's first max_key bytes (a bucket there may hold rows
    // before low: take() leaves them), until an entry at or after high.
    std::string from = lmdb_key(low);
    k = lmdb::val(from);
    for (int rc = mdb_cursor_get(c.c, &k, &v, MDB_SET_RANGE); more; rc = mdb_cursor_get(c.c, &k, &v, MDB_NEXT)) {
      if (rc == MDB_NOTFOUND) break;
      if (rc != 0) return lmdb::to_status(rc, "view scan");
      if (lmdb::view(k) >= high) break;
      if (auto st = take(k, v); !st) return st;
    }
  } else {
    // From the last entry before high (or the bucket high starts with), back until an entry
    // wholly before low.
    std::string from = lmdb_key(high);
    k = lmdb::val(from);
    int rc = mdb_cursor_get(c.c, &k, &v, MDB_SET_RANGE);
    if (rc == MDB_NOTFOUND)
      rc = mdb_cursor_get(c.c, &k, &v, MDB_LAST);
    else if (rc == 0 && lmdb::view(k) >= high)
      rc = mdb_cursor_get(c.c, &k, &v, MDB_PREV);
    for (; more; rc = mdb_cursor_get(c.c, &k, &v, MDB_PREV)) {
      if (rc == MDB_NOTFOUND) break;
      if (rc != 0) return lmdb::to_status(rc, "view scan");
      const std::string_view key = lmdb::view(k);
      if (key < low && std::string_view(low).substr(0, key.size()) != key) break;
      if (auto st = take(k, v); !st) return st;
    }
  }
  return {};
}

}  // namespace settee
