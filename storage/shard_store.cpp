#include "storage/shard_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "node/check.hpp"
#include "node/clock.hpp"
#include "node/crypto.hpp"
#include "node/json.hpp"
#include "node/log.hpp"
#include "node/metrics.hpp"
#include "storage/codec.hpp"
#include "storage/db_events.hpp"
#include "storage/doc_key.hpp"
#include "storage/doc_rank.hpp"
#include "storage/lmdb_env.hpp"

namespace settee {

namespace {

constexpr const char* header_key = "header";
constexpr const char* indexes_key = "json_indexes_kept";  // what the JSON indexes are kept to (mark_of)

// bodies key (storage/doc_key.hpp).
std::string body_key(std::string_view id, const rev_id& rev) {
  return doc_key::body(id, rev);
}

// A docs-table record: the whole id first when its key is a long id's, then seq and tree.
std::string encode_doc(std::string_view id, uint64_t seq, const rev_tree& tree) {
  codec::writer w;
  if (id.size() > doc_key::max_plain) w.str(id);
  w.varint(seq);
  tree.encode(w);
  return std::move(w.data());
}

// Decodes the record `value` stored under docs-table key `key`.
bool decode_doc(std::string_view key, std::string_view value, doc_info& out) {
  codec::reader r(value);
  if (doc_key::is_long(key)) {
    if (!r.str(out.id) || doc_key::of(out.id) != key) return false;
  } else {
    out.id.assign(key);
  }
  return r.varint(out.seq) && rev_tree::decode(r, out.tree) && r.done() && !out.tree.empty();
}

// The record under docs-table key `key` (found=false: none); a record that does not decode is an error.
status load_doc(MDB_txn* t, MDB_dbi docs, const std::string& key, doc_info& out, bool& found) {
  std::string_view raw;
  if (auto st = lmdb::get(t, docs, key, raw, found); !st || !found) return st;
  if (!decode_doc(key, raw, out)) return {errc::internal, "corrupt document record: " + key.substr(0, 400)};
  return {};
}

// doc_rank's view of a docs-table record: a live document (its winner is not deleted).
bool live_record(std::string_view key, std::string_view value) {
  doc_info d;
  return decode_doc(key, value, d) && !d.tree.winner_deleted();
}

std::string encode_change(const doc_info& d, int64_t now_s) {
  const rev_tree& t = d.tree;
  auto leaves = t.sorted_leaves();
  codec::writer w;
  w.str(d.id);
  w.str(t.rev(leaves.front()).str());
  w.byte(t.nodes()[leaves.front()].deleted ? 1 : 0);
  w.varint(leaves.size());
  for (int l : leaves) w.str(t.rev(l).str());
  w.varint(static_cast<uint64_t>(now_s < 0 ? 0 : now_s));
  return std::move(w.data());
}

bool decode_change(uint64_t seq, std::string_view value, change_entry& out) {
  codec::reader r(value);
  uint8_t deleted = 0;
  uint64_t n = 0, t = 0;
  out.seq = seq;
  if (!r.str(out.id) || !r.str(out.rev) || !r.byte(deleted) || !r.varint(n)) return false;
  out.deleted = deleted;
  out.leaf_revs.resize(n);
  for (auto& rv : out.leaf_revs)
    if (!r.str(rv)) return false;
  if (!r.varint(t)) return false;
  out.time_s = static_cast<int64_t>(t);
  return true;
}

// The commit time of a by_seq value, the rest passed over (encode_change's layout).
bool decode_change_time(std::string_view value, int64_t& time_s) {
  codec::reader r(value);
  uint8_t deleted = 0;
  uint64_t n = 0, t = 0;
  if (!r.skip_str() || !r.skip_str() || !r.byte(deleted) || !r.varint(n)) return false;
  for (uint64_t i = 0; i < n; ++i)
    if (!r.skip_str()) return false;
  if (!r.varint(t)) return false;
  time_s = static_cast<int64_t>(t);
  return true;
}

std::string encode_local(uint64_t rev, std::string_view body) {
  codec::writer w;
  w.varint(rev);
  w.str(body);
  return std::move(w.data());
}

using lmdb::del;
using lmdb::get;
using lmdb::put;

enum class doc_state { absent, live, deleted };

doc_state state_of(const rev_tree& t) {
  if (t.empty()) return doc_state::absent;
  return t.winner_deleted() ? doc_state::deleted : doc_state::live;
}

void count(shard_header& h, doc_state s, int delta) {
  if (s == doc_state::live) h.doc_count += delta;
  if (s == doc_state::deleted) h.doc_del_count += delta;
}

// The revision whose rows a document has in JSON indexes: its winner, unless that is a tombstone.
std::optional<rev_id> live_winner(const rev_tree& tree) {
  if (tree.empty() || tree.winner_deleted()) return std::nullopt;
  return tree.rev(tree.winner());
}

}  // namespace

result<std::shared_ptr<shard_store>> shard_store::open(const std::string& path, const store_options& opts) {
  return lmdb::open_or_remove(path, [&] { return open_env(path, opts); });
}

result<std::shared_ptr<shard_store>> shard_store::open_env(const std::string& path, const store_options& opts) {
  std::shared_ptr<shard_store> s(new shard_store());
  s->path_ = path;
  s->min_time_ = opts.time_seq_min_time;
  s->time_seq_enabled_ = opts.time_seq_enabled;
  lmdb::txn t;
  if (auto st = lmdb::open_file(path, {opts.map_size_bytes, opts.role != file_role::derived},
                                {{"meta", &s->meta_},
                                 {"docs", &s->docs_},
                                 {"bodies", &s->bodies_},
                                 {"by_seq", &s->by_seq_},
                                 {"local", &s->local_},
                                 {"rank", &s->rank_},
                                 {"atts", &s->blobs_.chunks},
                                 {"att_refs", &s->blobs_.refs},
                                 {"json_defs", &s->jx_.defs},
                                 {"json_rows", &s->jx_.rows},
                                 {"purges", &s->purges_}},
                                s->env_, t);
      !st) {
    return st;
  }
  std::string_view raw;
  bool found = false;
  if (auto st = get(t.get(), s->meta_, header_key, raw, found); !st) return st;
  shard_header h;
  bool dirty = false;
  if (found) {
    s->header_raw_.assign(raw);
    if (!shard_header::decode(s->header_raw_, h)) return status{errc::internal, path + ": unreadable header"};
    if (h.format_version > shard_header::current_format) {
      return status{errc::internal, path + ": written by a newer release of settee (file format " +
                                        std::to_string(h.format_version) + "; this release reads formats up to " +
                                        std::to_string(shard_header::current_format) + ")"};
    }
  } else {
    h.shard_uuid = crypto::random_hex(16);
    h.created_at = opts.created_at;
    h.revs_limit = opts.revs_limit;
    dirty = true;
  }
  if (h.epochs.empty() || h.epochs.back().first != opts.node_name) {
    h.epochs.emplace_back(opts.node_name, h.update_seq);  // a new owner starts a new epoch
    dirty = true;
  }
  // The rank table is current only if every commit since it was last marked kept it (a release
  // before 0.3 wrote this file without it): otherwise count it again.
  uint64_t rank_seq = 0;
  bool rank_found = false;
  if (auto st = doc_rank::valid_for(t.get(), s->rank_, rank_seq, rank_found); !st) return st;
  if (!rank_found || rank_seq != h.update_seq) {
    if (auto st = doc_rank::rebuild(t.get(), s->rank_, s->docs_, live_record); !st) return st;
    if (auto st = doc_rank::mark(t.get(), s->rank_, h.update_seq); !st) return st;
  }
  if (opts.role == file_role::catalog) {
    s->db_events_ = true;
    if (int rc = mdb_dbi_open(t.get(), "db_events", MDB_CREATE, &s->events_); rc != 0) {
      return lmdb::to_status(rc, "mdb_dbi_open");
    }
    // Events found at open carry no time: the commits that made them are not known.
    if (auto st = s->reconcile_db_events(t.get(), h.update_seq, 0); !st) return st;
  }
  s->index_keys_ = opts.keys_of_indexes;
  if (auto st = s->open_indexes(t.get(), h.update_seq); !st) return st;
  // Blobs staged for uploads that were in progress: nothing names them, no sender resumes them.
  uint64_t staged = 0;
  if (auto st = blob_store::drop_all_staged(t.get(), s->blobs_, staged); !st) return st;
  if (staged > 0) {
    h.external_size -= std::min(h.external_size, staged);
    dirty = true;
  }
  if (dirty) {
    std::string bytes = h.encode(s->header_raw_);
    if (auto st = put(t.get(), s->meta_, header_key, bytes); !st) return st;
    s->header_raw_ = std::move(bytes);
  }
  if (auto st = t.commit(); !st) return st;
  if (h.sealed) s->sealed_.store(true);  // a move's source stays sealed until the move ends
  s->header_ = std::move(h);
  return s;
}

shard_store::~shard_store() {
  if (env_) lmdb::close_file(env_);
  if (on_closed_) on_closed_();
}

shard_header shard_store::header() const {
  std::lock_guard<std::mutex> lock(header_mu_);
  return header_;
}

uint64_t shard_store::update_seq() const {
  std::lock_guard<std::mutex> lock(header_mu_);
  return header_.update_seq;
}

uint64_t shard_store::purge_seq() const {
  std::lock_guard<std::mutex> lock(header_mu_);
  return header_.purge_seq;
}

std::string shard_store::security() const {
  std::lock_guard<std::mutex> lock(header_mu_);
  return header_.security;
}

uint64_t shard_store::file_size() const {
  struct stat st {};
  return ::stat(path_.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

status shard_store::sync() {
  if (int rc = mdb_env_sync(env_, 1); rc != 0) return lmdb::to_status(rc, ("cannot sync " + path_).c_str());
  return {};
}

void shard_store::remove_files(const std::string& path) {
  lmdb::remove_file(path);
}

status shard_store::failed() const {
  std::lock_guard<std::mutex> lock(header_mu_);
  return failed_;
}

status shard_store::commit(const std::vector<write_op*>& ops, int64_t now_s) {
  if (status latched = failed(); !latched) {
    for (write_op* op : ops) op->st = latched;
    return latched;
  }
  const auto started = mono::now();
  shard_header h = header();
  const uint64_t seq_before = h.update_seq, purge_seq_before = h.purge_seq;
  bool changed = false;   // something a feed or the header shows (time-seq records it)
  bool imported = false;  // a split's copy: the seqs are the parent's, and so are the bins
  lmdb::txn t;
  status st = t.begin(env_, false);
  const bool sealed = sealed_.load();
  reset_working();
  for (size_t o = 0; o < ops.size() && st; ++o) {
    write_op& op = *ops[o];
    if (sealed && op.what != write_op::kind::format && op.what != write_op::kind::import) {
      op.st = {errc::shard_moved, "the shard is sealed for a split or a move; its documents are going to a new copy"};
      doc_result refused;
      refused.st = op.st;
      op.results.assign(op.docs.size(), refused);
      continue;
    }
    switch (op.what) {
      case write_op::kind::docs:
        op.results.resize(op.docs.size());
        for (size_t i = 0; i < op.docs.size() && st; ++i) st = apply_doc(t.get(), h, op.docs[i], op.results[i], now_s);
        break;
      case write_op::kind::local:
        st = apply_local(t.get(), op);
        break;
      case write_op::kind::security:
        h.security = op.security;
        changed = true;
        break;
      case write_op::kind::revs_limit:
        h.revs_limit = op.revs_limit;
        changed = true;
        break;
      case write_op::kind::time_seq_reset:
        time_seq::reset(h.time_seq, h.update_seq);  // the next commit opens the first new bin
        break;
      case write_op::kind::format:
        h.format_version = std::max(h.format_version, op.format_version);
        if (op.seal) h.sealed = *op.seal;
        break;
      case write_op::kind::import:
        st = import_step(t.get(), h, *op.import);
        imported = true;
        break;
      case write_op::kind::compact:
        st = compact_step(t.get(), h, op);
        break;
      case write_op::kind::stage_blob:
      case write_op::kind::drop_staged:
        st = stage_blob(t.get(), h, op);
        break;
      case write_op::kind::index_define:
      case write_op::kind::index_drop:
      case write_op::kind::index_build:
        st = index_op(t.get(), op, working_);
        break;
      case write_op::kind::purge:
        if (db_events_) {
          op.st = {errc::bad_request, "the node's catalog cannot be purged"};
          break;
        }
        op.purged.assign(op.purges.size(), {});
        for (size_t i = 0; i < op.purges.size() && st; ++i) {
          st = apply_purge(t.get(), h, op.purges[i], op.purged[i], now_s);
        }
        if (st) st = prune_purges(t.get(), h);
        changed = true;
        break;
      case write_op::kind::purged_infos_limit:
        if (op.purged_infos_limit == 0) {
          op.st = {errc::bad_request, "`purge_infos_limit` must be positive integer"};
          break;
        }
        h.purged_infos_limit = op.purged_infos_limit;
        st = prune_purges(t.get(), h);
        changed = true;
        break;
    }
  }
  // Time-seq, in the same transaction (spec section 5): the seq committed before this commit, at
  // the clock's time. Never an error: an early, repeated or backward time leaves the bins alone.
  if (st && time_seq_enabled_ && !imported && (changed || h.update_seq != seq_before)) {
    time_seq::update(h.time_seq, now_s, seq_before, min_time_);
  }
  // A commit never takes the file's seqs back (by_seq keys, tokens and checkpoints rely on them).
  SETTEE_CHECK(h.update_seq >= seq_before && h.purge_seq >= purge_seq_before);
  std::string bytes;
  if (st) {
    bytes = h.encode(header_raw_);
    st = put(t.get(), meta_, header_key, bytes);
  }
  if (st) st = doc_rank::mark(t.get(), rank_, h.update_seq);
  if (st && !working_->empty() && index_keys_) st = put(t.get(), meta_, indexes_key, mark_of(h.update_seq));
  if (st && db_events_) st = put(t.get(), events_, "m", codec::seq_key(h.update_seq));
  if (st) {
    const auto flushing = mono::now();
    st = commit_txn(t);  // LMDB fsyncs before returning (but for a derived file)
    auto& m = metrics::node();
    const auto done = mono::now();
    m.fsync_seconds.observe(std::chrono::duration<double>(done - flushing).count());
    m.commit_seconds.observe(std::chrono::duration<double>(done - started).count());
    m.commit_ops.observe(static_cast<double>(ops.size()));
    if (!st && st.code != errc::storage_full) {
      log::error("shard " + path_ + ": commit failed (" + st.reason + "); the shard is read-only until reopened");
      std::lock_guard<std::mutex> lock(header_mu_);
      failed_ = {errc::internal, "the shard is read-only after a failed commit (" + st.reason +
                                     "); restart the node once the disk is healthy"};
      st = failed_;
    }
  }
  if (!st) {
    for (write_op* op : ops) op->st = st;
    reset_working();
    return st;
  }
  std::lock_guard<std::mutex> lock(header_mu_);
  indexes_ = working_;
  header_ = std::move(h);
  header_raw_ = std::move(bytes);
  return {};
}

status shard_store::apply_doc(MDB_txn* t, shard_header& h, doc_update& u, doc_result& r, int64_t now_s) {
  doc_info d;
  bool found = false;
  const std::string key = doc_key::of(u.id);
  if (auto st = load_doc(t, docs_, key, d, found); !st) return st;
  d.id = u.id;
  doc_state before = state_of(d.tree);
  const std::optional<rev_id> was_winner = live_winner(d.tree);
  int leaf = -1;
  std::vector<std::string> keys;  // the blobs the new revision's attachments name

  if (u.new_edits) {
    // The revision this edit would create is already here (internal replication or a read repair
    // delivered the same edit first): still a conflict for this copy, but marked, so the coordinator
    // can count it as agreement when another copy committed the edit in this request.
    // Without a base revision, re-creating a deleted document extends its tombstone (CouchDB's
    // rebase), so the edit's revision is computed from that base.
    std::optional<rev_id> rebase;
    if (found && u.revs.empty() && before == doc_state::deleted) rebase = d.tree.rev(d.tree.winner());
    const rev_id* extends = !u.revs.empty() ? &u.revs.front() : rebase ? &*rebase : nullptr;
    int base = found && extends ? d.tree.find(*extends) : -1;
    // An edit that cannot apply (a stale or missing base, or no base for a live document) is the
    // conflict CouchDB reports before it looks at stubs.
    const bool conflicted = extends ? base < 0 || !d.tree.is_leaf(base) : found && before == doc_state::live;
    if (auto st = settle_attachments(t, d, u, base, conflicted, extends ? extends->pos + 1 : 1, keys, r);
        !st || !r.st) {
      return st;
    }
    if (found) {  // the revision this edit makes, from the base it extends
      rev_id same{extends ? extends->pos + 1 : 1, make_rev_hash(u.deleted, extends, u.body, u.hash)};
      if (d.tree.find(same) >= 0) {
        r.st = {errc::conflict, "Document update conflict."};
        r.rev = same;
        r.added = false;
        r.known = true;
        return {};
      }
    }
    int parent = -1;
    if (!u.revs.empty()) {
      parent = d.tree.find(u.revs.front());
      if (parent < 0 || !d.tree.is_leaf(parent)) {
        r.st = {errc::conflict, "Document update conflict."};
        return {};
      }
    } else if (before == doc_state::live) {
      r.st = {errc::conflict, "Document update conflict."};
      return {};
    } else if (rebase) {
      parent = d.tree.winner();
    }
    if (auto st = add_edit(t, h, d, u, parent, r, leaf); !st || !r.st) return st;
  } else {
    if (!is_rev_path(u.revs)) {  // another node's push may carry anything
      r.st = {errc::bad_request, "Invalid rev format"};
      return {};
    }
    bool purged = false;
    if (u.honor_purges)
      if (auto st = was_purged(t, h, u.id, u.revs.front(), purged); !st) return st;
    if (purged) {
      r.rev = u.revs.front();
      r.added = false;
      return {};
    }
    if (!found || d.tree.find(u.revs.front()) < 0) {  // a revision this copy has is not read again
      int base = -1;  // the newest ancestor this copy has: stubs refer to its attachments
      for (size_t i = 1; found && i < u.revs.size() && base < 0; ++i) base = d.tree.find(u.revs[i]);
      if (auto st = settle_attachments(t, d, u, base, false, u.revs.front().pos, keys, r); !st || !r.st) return st;
    }
    bool added = false;
    leaf = d.tree.merge_path(u.revs, u.deleted, added);
    if (!added) {
      r.rev = u.revs.front();  // already known: nothing to do (idempotent replication)
      r.added = false;
      return {};
    }
  }
  r.rev = d.tree.rev(leaf);
  indexed_as was{was_winner, {}};  // taken while the previous winner's body is surely stored
  if (was_winner != live_winner(d.tree))
    if (auto st = indexed_by(t, u.id, was_winner, nullptr, working_list(), was); !st) return st;
  if (auto st = store_leaf(t, h, d, u, r.rev, keys); !st) return st;

  // One by_seq entry per document: move it to the new seq.
  if (found) {
    if (auto st = del_change(t, d.seq); !st) return st;
  }
  d.seq = ++h.update_seq;
  if (auto st = put_change(t, d, now_s); !st) return st;
  if (auto st = put(t, docs_, key, encode_doc(u.id, d.seq, d.tree)); !st) return st;
  count(h, before, -1);
  doc_state after = state_of(d.tree);
  count(h, after, +1);
  if ((before == doc_state::live) != (after == doc_state::live)) {
    if (auto st = doc_rank::add(t, rank_, docs_, live_record, key, after == doc_state::live ? +1 : -1); !st) return st;
  }
  const std::string* winner_body = d.tree.winner() == leaf ? &u.body : nullptr;
  if (auto st = reindex_all(t, d, winner_body, was); !st) return st;
  if (db_events_ && u.id.rfind("_design/", 0) != 0) {
    uint32_t index = 0;
    return record_db_events(t, d, winner_body, now_s, index);
  }
  return {};
}

status shard_store::store_leaf(MDB_txn* t, shard_header& h, doc_info& d, const doc_update& u, const rev_id& rev,
                               const std::vector<std::string>& blob_keys) {
  // The new leaf first: a blob it shares with a body dropped below keeps its bytes.
  if (auto st = put(t, bodies_, body_key(u.id, rev), u.body); !st) return st;
  h.external_size += u.body.size();
  if (auto st = reference_blobs(t, h, blob_keys, &u, +1); !st) return st;
  // Older revisions keep their bodies until compaction (GET ?rev=, open_revs); those stemmed away
  // by revs_limit lose them now, as compaction would never find them again.
  std::vector<rev_id> stemmed;
  d.tree.stem(h.revs_limit, &stemmed);  // never removes a leaf
  for (const rev_id& gone : stemmed) {
    if (auto st = drop_body(t, h, u.id, gone); !st) return st;
  }
  return {};
}

status shard_store::apply_purge(MDB_txn* t, shard_header& h, purge_info& p, std::vector<rev_id>& purged,
                                int64_t now_s) {
  purged.clear();
  bool applied = false;
  if (auto st = purge_log::known(t, purges_, p.uuid, applied); !st || applied) return st;
  p.seq = ++h.purge_seq;
  if (auto st = purge_log::add(t, purges_, p); !st) return st;
  const std::string key = doc_key::of(p.id);
  doc_info d;
  bool found = false;
  if (auto st = load_doc(t, docs_, key, d, found); !st || !found) return st;
  const doc_info old = d;
  std::vector<rev_id> dropped;
  purged = d.tree.remove_leafs(p.revs, &dropped);
  if (purged.empty()) return {};
  if (auto st = record_implied_purge(t, h, p, dropped); !st) return st;
  if (d.tree.empty()) return forget_doc(t, h, key, old);  // CouchDB: it leaves the id and seq trees
  indexed_as was;                                         // before the purged winner's body goes
  if (auto st = indexed_by(t, p.id, live_winner(old.tree), nullptr, working_list(), was); !st) return st;
  for (const rev_id& gone : dropped) {
    if (auto st = drop_body(t, h, p.id, gone); !st) return st;
  }
  // What is left moves to a new seq, as couch_db_updater's purge: feeds and indexes see it again.
  if (auto st = del_change(t, d.seq); !st) return st;
  d.seq = ++h.update_seq;
  if (auto st = put_change(t, d, now_s); !st) return st;
  if (auto st = put(t, docs_, key, encode_doc(p.id, d.seq, d.tree)); !st) return st;
  const doc_state before = state_of(old.tree), after = state_of(d.tree);
  count(h, before, -1);
  count(h, after, +1);
  if ((before == doc_state::live) != (after == doc_state::live)) {
    if (auto st = doc_rank::add(t, rank_, docs_, live_record, key, after == doc_state::live ? +1 : -1); !st) return st;
  }
  return reindex_all(t, d, nullptr, was);
}

status shard_store::add_edit(MDB_txn* t, const shard_header& h, doc_info& d, const doc_update& u, int parent,
                             doc_result& r, int& leaf) {
  const rev_id parent_rev = parent >= 0 ? d.tree.rev(parent) : rev_id{};
  const rev_id next{parent >= 0 ? parent_rev.pos + 1 : 1,
                    make_rev_hash(u.deleted, parent >= 0 ? &parent_rev : nullptr, u.body, u.hash)};
  // Revisions are a hash of their content: an edit this copy receives after it purged the
  // revision the edit makes (a coordinator's write that was still on its way, or the same content
  // written again) would bring the purged revision back here alone, and no other copy would take
  // it from this one. Every copy that recorded the purge refuses it alike.
  bool purged = false;
  if (auto st = was_purged(t, h, u.id, next, purged); !st) return st;
  if (purged) {
    r.st = {errc::conflict, "Document update conflict: revision " + next.str() +
                                " of this document was purged (write other content to make a new one)"};
    return {};
  }
  leaf = d.tree.add_child(parent, next.hash, u.deleted);
  return {};
}

status shard_store::was_purged(MDB_txn* t, const shard_header& h, const std::string& id, const rev_id& rev,
                               bool& purged) {
  purged = false;
  if (h.purge_seq == 0) return {};  // a copy that never purged has nothing to look up
  std::vector<rev_id> revs;
  if (auto st = purge_log::revs_of(t, purges_, id, revs); !st) return st;
  purged = std::find(revs.begin(), revs.end(), rev) != revs.end();
  return {};
}

status shard_store::record_implied_purge(MDB_txn* t, shard_header& h, const purge_info& p,
                                         const std::vector<rev_id>& dropped) {
  std::vector<rev_id> ancestors;
  for (const rev_id& r : dropped)
    if (std::find(p.revs.begin(), p.revs.end(), r) == p.revs.end()) ancestors.push_back(r);
  if (ancestors.empty()) return {};
  std::sort(ancestors.begin(), ancestors.end());
  std::string names;
  for (const rev_id& r : ancestors) names += r.str() + ",";
  purge_info implied;
  implied.uuid = p.uuid + std::string(purge_log::implied_marker) + crypto::md5_hex(names).substr(0, 16);
  implied.id = p.id;
  implied.revs = std::move(ancestors);
  bool known = false;
  if (auto st = purge_log::known(t, purges_, implied.uuid, known); !st || known) return st;
  implied.seq = ++h.purge_seq;
  return purge_log::add(t, purges_, implied);
}

status shard_store::prune_purges(MDB_txn* t, const shard_header& h) {
  if (h.purge_seq <= h.purged_infos_limit) return {};
  uint64_t upto = h.purge_seq - h.purged_infos_limit;
  // Not past what a copy this one syncs to still lacks: a copy that was down learns them later.
  MDB_cursor* c = nullptr;
  if (int rc = mdb_cursor_open(t, local_, &c); rc != 0) return lmdb::to_status(rc, "mdb_cursor_open");
  std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)> closer(c, mdb_cursor_close);
  MDB_val k = lmdb::val(sync_checkpoint_prefix), v;
  for (int rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    if (lmdb::view(k).substr(0, sync_checkpoint_prefix.size()) != sync_checkpoint_prefix) break;
    codec::reader r(lmdb::view(v));
    uint64_t rev = 0;
    std::string body;
    if (!r.varint(rev) || !r.str(body)) continue;
    auto j = parse_json(body);
    uint64_t pushed = 0;
    if (j && j->is_object() && j->contains("purge_seq") && (*j)["purge_seq"].is_number_unsigned()) {
      pushed = (*j)["purge_seq"].get<uint64_t>();
    }
    upto = std::min(upto, pushed);
  }
  // The newest purged_infos_limit requests always stay (a client's _purged_infos, late copies).
  SETTEE_CHECK(upto + h.purged_infos_limit <= h.purge_seq);
  return upto > 0 ? purge_log::prune(t, purges_, upto) : status{};
}

status shard_store::open_indexes(MDB_txn* t, uint64_t update_seq) {
  if (index_keys_) keys_version_ = index_keys_->version();
  std::vector<json_index_def> defs;
  if (auto st = json_index::load_defs(t, jx_, defs); !st) return st;
  // The JSON indexes are current only if every commit since they were last marked kept them (a
  // release without them may have written the file since) with keys made the same way:
  // otherwise their rows go and they are built again.
  std::string_view marked;
  bool has_mark = false;
  if (auto st = get(t, meta_, indexes_key, marked, has_mark); !st) return st;
  const std::string mark = mark_of(update_seq);
  if (!defs.empty() && index_keys_ && (!has_mark || marked != mark)) {
    for (json_index_def& d : defs) {
      if (auto st = json_index::clear(t, jx_, d.number); !st) return st;
      d.built = false;
      d.build_from.clear();
      if (auto st = json_index::put_def(t, jx_, d); !st) return st;
    }
    if (auto st = put(t, meta_, indexes_key, mark); !st) return st;
  }
  // Release 0.4's tables (its indexes also kept each row's position, in `jx_ids`): gone, so that
  // 0.4, opening this file after a downgrade, finds no index of ours to trust, and this release
  // none of 0.4's. A query defines what its design documents name again.
  for (const char* old : {"jx_defs", "jx_rows", "jx_ids"}) {
    if (auto st = lmdb::drop_table(t, old); !st) return st;
  }
  indexes_ = std::make_shared<const std::vector<json_index_def>>(std::move(defs));
  return {};
}

std::string shard_store::mark_of(uint64_t seq) const {
  return index_keys_ ? codec::seq_key(seq) + keys_version_ : std::string();
}

bool shard_store::keyed(const std::string& id) const {
  return index_keys_ && id.rfind("_design/", 0) != 0;
}

bool shard_store::indexed(const std::string& id) const {
  return !working_->empty() && keyed(id);
}

status shard_store::indexed_by(MDB_txn* t, const std::string& id, const std::optional<rev_id>& winner,
                               const std::string* body, const std::vector<const json_index_def*>& defs,
                               indexed_as& out) {
  out.winner = winner;
  out.keys.assign(defs.size(), std::nullopt);
  if (!winner || defs.empty() || !keyed(id)) return {};
  std::string_view text;
  bool has = body != nullptr;
  if (has) {
    text = *body;
  } else if (auto st = get(t, bodies_, body_key(id, *winner), text, has); !st) {
    return st;
  }
  // A winner without a stored body (none is known to happen) is in no index, as a body keys_of
  // cannot read.
  if (has) index_keys_->keys_of(defs, id, winner->str(), text, out.keys);
  return {};
}

status shard_store::unindex_all(MDB_txn* t, const doc_info& d) {
  if (!indexed(d.id)) return {};
  indexed_as was;
  if (auto st = indexed_by(t, d.id, live_winner(d.tree), nullptr, working_list(), was); !st) return st;
  for (size_t i = 0; i < was.keys.size(); ++i) {
    if (auto st = json_index::set_row(t, jx_, (*working_)[i].number, d.id, was.keys[i], std::nullopt); !st) return st;
  }
  return {};
}

status shard_store::reindex_all(MDB_txn* t, const doc_info& d, const std::string* winner_body,
                                const indexed_as& before) {
  if (!indexed(d.id)) return {};
  indexed_as now;
  now.winner = live_winner(d.tree);
  if (now.winner == before.winner) return {};  // the same revision: the same rows
  if (auto st = indexed_by(t, d.id, now.winner, winner_body, working_list(), now); !st) return st;
  for (size_t i = 0; i < now.keys.size(); ++i) {
    const std::optional<std::string> none;
    const auto& was = i < before.keys.size() ? before.keys[i] : none;
    if (auto st = json_index::set_row(t, jx_, (*working_)[i].number, d.id, was, now.keys[i]); !st) return st;
  }
  return {};
}

std::vector<const json_index_def*> shard_store::working_list() const {
  std::vector<const json_index_def*> all;
  all.reserve(working_->size());
  for (const json_index_def& x : *working_) all.push_back(&x);
  return all;
}

status shard_store::index_op(MDB_txn* t, write_op& op, index_list& defs) {
  auto at = std::find_if(defs->begin(), defs->end(),
                         [&](const json_index_def& d) { return d.signature == op.index.signature; });
  if (op.what == write_op::kind::index_define) {
    if (at != defs->end()) {
      op.index = *at;
      return {};
    }
    json_index_def d;
    d.signature = op.index.signature;
    d.definition = op.index.definition;
    for (const json_index_def& x : *defs) d.number = std::max(d.number, x.number + 1);
    if (auto st = json_index::put_def(t, jx_, d); !st) return st;
    auto next = std::make_shared<std::vector<json_index_def>>(*defs);
    next->push_back(d);
    defs = std::move(next);
    op.index = d;
    return {};
  }
  if (at == defs->end()) {
    if (op.what == write_op::kind::index_build) op.st = {errc::not_found, "the index was dropped"};
    return {};
  }
  auto next = std::make_shared<std::vector<json_index_def>>(*defs);
  auto mine = next->begin() + (at - defs->begin());
  if (op.what == write_op::kind::index_drop) {
    if (auto st = json_index::drop(t, jx_, *mine); !st) return st;
    next->erase(mine);
  } else {
    if (mine->built) {
      op.index = *mine;
      return {};
    }
    if (auto st = build_step(t, op, *mine); !st) return st;
    if (auto st = json_index::put_def(t, jx_, *mine); !st) return st;
    op.index = *mine;
  }
  defs = std::move(next);
  return {};
}

status shard_store::build_step(MDB_txn* t, write_op& op, json_index_def& d) {
  MDB_cursor* c = nullptr;
  if (int rc = mdb_cursor_open(t, docs_, &c); rc != 0) return lmdb::to_status(rc, "mdb_cursor_open");
  std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)> closer(c, mdb_cursor_close);
  MDB_val k = lmdb::val(d.build_from), v;
  int rc = mdb_cursor_get(c, &k, &v, d.build_from.empty() ? MDB_FIRST : MDB_SET_RANGE);
  const std::vector<const json_index_def*> one{&d};
  for (size_t n = 0; rc == 0 && n < std::max<size_t>(1, op.index_limit); ++n) {
    doc_info info;
    if (!decode_doc(lmdb::view(k), lmdb::view(v), info)) return {errc::internal, "corrupt document record"};
    indexed_as now;  // a document written since the build began has its row already: adding it is harmless
    if (auto st = indexed_by(t, info.id, live_winner(info.tree), nullptr, one, now); !st) return st;
    if (auto st = json_index::set_row(t, jx_, d.number, info.id, std::nullopt, now.keys[0]); !st) return st;
    rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
  }
  if (rc != 0 && rc != MDB_NOTFOUND) return lmdb::to_status(rc, "JSON index build");
  d.built = rc == MDB_NOTFOUND;
  d.build_from = d.built ? "" : std::string(lmdb::view(k));
  return {};
}

status shard_store::record_db_events(MDB_txn* t, const doc_info& d, const std::string* winner_body, int64_t now_s,
                                     uint32_t& index) {
  std::string_view raw;
  bool found = false;
  if (auto st = get(t, events_, state_key(d.id), raw, found); !st) return st;
  std::optional<db_state> before;
  if (found) {
    before.emplace();
    if (!decode_state(raw, *before)) return {errc::internal, "corrupt database state record: " + d.id};
  }
  db_state after;
  after.alive = !d.tree.winner_deleted();
  if (winner_body) {
    after.instance = instance_of_entry(*winner_body);
  } else {
    std::string_view body;
    bool has = false;
    if (auto st = get(t, bodies_, body_key(d.id, d.tree.rev(d.tree.winner())), body, has); !st) return st;
    if (has) after.instance = instance_of_entry(body);
  }
  for (const db_step& step : lifecycle_steps(before, after)) {
    db_event e{d.seq, index, step.type, d.id, step.instance, now_s};
    if (auto st = put(t, events_, event_key(d.seq, index++), encode_event(e)); !st) return st;
  }
  db_state resolved = resolve_state(before, after);
  if (before && *before == resolved) return {};
  return put(t, events_, state_key(d.id), encode_state(resolved));
}

status shard_store::reconcile_db_events(MDB_txn* t, uint64_t update_seq, int64_t now_s) {
  std::string_view raw;
  bool found = false;
  if (auto st = get(t, events_, "m", raw, found); !st) return st;
  uint64_t marked = 0;
  if (found && codec::parse_seq_key(raw, marked) && marked == update_seq) return {};
  // Compare every name's recorded state with its document; the differences become events at the
  // current seq (the changes themselves were made by a release that did not record them).
  std::vector<doc_info> docs;
  MDB_cursor* c = nullptr;
  if (int rc = mdb_cursor_open(t, docs_, &c); rc != 0) return lmdb::to_status(rc, "mdb_cursor_open");
  MDB_val k, v;
  int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
  for (; rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    doc_info d;
    if (!decode_doc(lmdb::view(k), lmdb::view(v), d)) {
      mdb_cursor_close(c);
      return {errc::internal, "corrupt document record: " + std::string(lmdb::view(k))};
    }
    if (d.id.rfind("_design/", 0) != 0) docs.push_back(std::move(d));
  }
  mdb_cursor_close(c);
  if (rc != MDB_NOTFOUND) return lmdb::to_status(rc, "mdb_cursor_get");
  // Events of this pass share the seq (none was recorded at it: "m" would equal it).
  uint32_t index = 0;
  for (doc_info& d : docs) {
    d.seq = update_seq;
    if (auto st = record_db_events(t, d, nullptr, now_s, index); !st) return st;
  }
  return put(t, events_, "m", codec::seq_key(update_seq));
}

status shard_store::settle_attachments(MDB_txn* t, const doc_info& d, doc_update& u, int base, bool conflicted,
                                       uint64_t new_pos, std::vector<std::string>& keys, doc_result& r) {
  keys.clear();
  if (!u.managed_attachments || u.body.find("\"_attachments\"") == std::string::npos) return {};
  auto body = parse_json(u.body);
  if (!body || !body->is_object()) return {errc::internal, "unreadable document body for " + u.id};
  auto atts = body->find("_attachments");
  if (atts == body->end()) return {};
  if (attachments::has_stubs(*atts)) {
    if (conflicted) {
      r.st = {errc::conflict, "Document update conflict."};
      return {};
    }
    std::optional<json> parent;  // the `_attachments` of the revision the edit extends
    if (base >= 0) {
      std::string_view raw;
      bool had = false;
      if (auto st = get(t, bodies_, body_key(u.id, d.tree.rev(base)), raw, had); !st) return st;
      auto parsed = had ? parse_json(raw) : std::nullopt;
      if (parsed && parsed->is_object())
        parent = parsed->contains("_attachments") ? (*parsed)["_attachments"] : json::object();
    }
    if (status st = attachments::merge_stubs(*atts, parent ? &*parent : nullptr, u.id); !st) {
      r.st = st;
      return {};
    }
  }
  for (auto& [name, e] : atts->items()) {
    const std::string* key = attachments::key_of(e);
    if (!key) {
      r.st = {errc::bad_request, "Attachment '" + name + "' has neither data nor a stub"};
      return {};
    }
    if (!e.contains("revpos") || !e["revpos"].is_number_unsigned() || e["revpos"].get<uint64_t>() == 0) {
      e["revpos"] = new_pos;  // new in this edit
    }
    const std::string& k = *key;
    bool here = std::any_of(u.blobs.begin(), u.blobs.end(), [&](const attachments::blob& b) { return b.key == k; });
    if (!here) {
      if (auto st = blob_store::has(t, blobs_, k, attachments::stored_length(e), here); !st) return st;
    }
    if (!here) {
      r.st = {errc::missing_stub, "Invalid attachment stub in " + u.id + " for " + name};
      return {};
    }
    keys.push_back(k);
  }
  u.body = body->dump();
  return {};
}

status shard_store::reference_blobs(MDB_txn* t, shard_header& h, const std::vector<std::string>& keys,
                                    const doc_update* u, int delta) {
  for (const std::string& k : keys) {
    uint64_t bytes = 0;
    if (delta > 0) {
      const std::string* given = nullptr;
      for (auto& b : u->blobs)
        if (b.key == k) given = &b.bytes;
      if (auto st = blob_store::add_ref(t, blobs_, k, given, bytes); !st) return st;
      h.external_size += bytes;
    } else {
      if (auto st = blob_store::drop_ref(t, blobs_, k, bytes); !st) return st;
      h.external_size -= std::min<uint64_t>(h.external_size, bytes);
    }
  }
  return {};
}

status shard_store::drop_body(MDB_txn* t, shard_header& h, const std::string& id, const rev_id& rev) {
  std::string key = body_key(id, rev);
  std::string_view body;
  bool had = false;
  if (auto st = get(t, bodies_, key, body, had); !st || !had) return st;
  h.external_size -= std::min<uint64_t>(h.external_size, body.size());
  std::vector<std::string> keys;
  if (body.find("\"_attachments\"") != std::string_view::npos) {
    auto parsed = parse_json(body);
    if (!parsed) return {errc::internal, "unreadable document body for " + id};
    keys = attachments::keys_of(*parsed);
  }
  if (auto st = del(t, bodies_, key); !st) return st;
  return reference_blobs(t, h, keys, nullptr, -1);
}

status shard_store::stage_blob(MDB_txn* t, shard_header& h, write_op& op) {
  uint64_t bytes = 0;
  if (op.what == write_op::kind::drop_staged) {
    if (auto st = blob_store::drop_staged(t, blobs_, op.blob_key, bytes); !st) return st;
    h.external_size -= std::min(h.external_size, bytes);
    return {};
  }
  status st = blob_store::stage(t, blobs_, op.blob_key, op.blob_offset, op.blob_piece, op.blob_whole, bytes);
  if (!st && st.code == errc::bad_request) {
    op.st = st;
    return {};
  }
  h.external_size += bytes;
  return st;
}

status shard_store::forget_doc(MDB_txn* t, shard_header& h, const std::string& key, const doc_info& d) {
  if (auto st = unindex_all(t, d); !st) return st;
  for (size_t i = 0; i < d.tree.nodes().size(); ++i) {
    if (auto st = drop_body(t, h, d.id, d.tree.rev(static_cast<int>(i))); !st) return st;
  }
  if (auto st = del_change(t, d.seq); !st) return st;
  count(h, state_of(d.tree), -1);
  if (state_of(d.tree) == doc_state::live) {
    if (auto st = doc_rank::add(t, rank_, docs_, live_record, key, -1); !st) return st;
  }
  return del(t, docs_, key);
}

status shard_store::import_purges(MDB_txn* t, shard_header& h, const import_request& req) {
  const import_source& src = *req.from;
  std::vector<purge_info> infos;
  src.scan_purges(0, [&](const purge_info& p) {
    if (!req.keep || req.keep(p.id)) infos.push_back(p);
    return true;
  });
  if (!src.fault()) return src.fault();
  for (const purge_info& p : infos) {
    bool known = false;
    if (auto st = purge_log::known(t, purges_, p.uuid, known); !st || known) {
      if (!st) return st;
      continue;
    }
    if (auto st = purge_log::add(t, purges_, p); !st) return st;
    h.purge_seq = std::max(h.purge_seq, p.seq);
    if (src.holds(p.id)) continue;
    if (!src.fault()) return src.fault();
    const std::string key = doc_key::of(p.id);
    doc_info d;
    bool found = false;
    if (auto st = load_doc(t, docs_, key, d, found); !st) return st;
    if (!found) continue;
    if (auto st = forget_doc(t, h, key, d); !st) return st;
  }
  return {};
}

status shard_store::import_step(MDB_txn* t, shard_header& h, import_request& req) {
  const import_source& src = *req.from;
  req.last = req.since;
  req.copied = 0;
  req.done = true;
  size_t visited = 0;
  status st;
  src.scan_changes(req.since, [&](const change_entry& c) {
    if (visited == req.limit) {
      req.done = false;
      return false;
    }
    ++visited;
    req.last = c.seq;
    if (req.keep && !req.keep(c.id)) return true;
    doc_info d;
    if (!src.doc(c.id, d)) {
      st = src.fault() ? status{errc::internal, "split: " + c.id + " is in the parent's by_seq but not its docs"}
                       : src.fault();
      return false;
    }
    const std::string key = doc_key::of(c.id);
    doc_info old;
    bool found = false;
    if (st = load_doc(t, docs_, key, old, found); !st) return false;
    if (found) {  // copied by an earlier pass: replaced by its state now
      if (st = forget_doc(t, h, key, old); !st) return false;
    }
    for (size_t i = 0; i < d.tree.nodes().size(); ++i) {
      std::string body;
      const rev_id rev = d.tree.rev(static_cast<int>(i));
      if (!src.body(c.id, rev, body)) continue;  // compacted away, or never stored (0.2 files)
      std::vector<std::string> keys;
      doc_update u;  // the blobs the body names that this shard does not hold yet
      if (body.find("\"_attachments\"") != std::string::npos) {
        auto parsed = parse_json(body);
        if (!parsed) {
          st = {errc::internal, "unreadable document body for " + c.id};
          return false;
        }
        keys = attachments::keys_of(*parsed);
        for (const std::string& k : keys) {
          bool here = false;
          if (st = blob_store::has(t, blobs_, k, 0, here); !st) return false;
          if (here) continue;
          attachments::blob b;
          b.key = k;
          if (!src.blob(k, b.bytes)) {
            st = src.fault() ? status{errc::internal, "split: blob " + k + " of " + c.id + " is missing"} : src.fault();
            return false;
          }
          u.blobs.push_back(std::move(b));
        }
      }
      if (st = put(t, bodies_, body_key(c.id, rev), body); !st) return false;
      h.external_size += body.size();
      if (st = reference_blobs(t, h, keys, &u, +1); !st) return false;
    }
    if (st = put_change(t, d, c.time_s); !st) return false;
    if (st = put(t, docs_, key, encode_doc(c.id, c.seq, d.tree)); !st) return false;
    if (st = reindex_all(t, d, nullptr, indexed_as{}); !st) return false;  // forget_doc took its rows
    count(h, state_of(d.tree), +1);
    if (state_of(d.tree) == doc_state::live) {
      if (st = doc_rank::add(t, rank_, docs_, live_record, key, +1); !st) return false;
    }
    ++req.copied;
    return true;
  });
  if (!st) return st;
  if (!src.fault()) return src.fault();
  if (auto purged = import_purges(t, h, req); !purged) return purged;
  req.done = req.done && src.complete();
  if (req.done) {  // the parent's last changes may be the other child's: the numbering still reaches its end
    shard_header at;
    if (!src.header(at)) return src.fault();
    req.last = std::max(req.last, at.update_seq);
  }
  h.update_seq = std::max(h.update_seq, req.last);
  if (!req.uuid.empty()) h.shard_uuid = req.uuid;
  if (req.header) {
    h.security = req.header->security;
    h.revs_limit = req.header->revs_limit;
    h.purged_infos_limit = req.header->purged_infos_limit;
    if (!req.owner.empty()) h.purge_seq = std::max(h.purge_seq, req.header->purge_seq);
    h.time_seq = req.header->time_seq;
    if (!req.owner.empty()) {
      h.shard_uuid = req.header->shard_uuid;
      h.epochs = req.header->epochs;
      if (h.epochs.empty() || h.epochs.back().first != req.owner) h.epochs.emplace_back(req.owner, h.update_seq);
    }
  }
  return req.local_docs ? import_locals(t, src, req) : status{};
}

status shard_store::import_locals(MDB_txn* t, const import_source& src, const import_request& req) {
  std::vector<local_doc> locals;
  src.scan_local([&](const local_doc& l) {
    locals.push_back(l);
    if (auto extra = req.also_local ? req.also_local(l) : std::nullopt) locals.push_back(std::move(*extra));
    return true;
  });
  if (!src.fault()) return src.fault();
  if (int rc = mdb_drop(t, local_, 0); rc != 0) return lmdb::to_status(rc, "mdb_drop");
  for (const local_doc& l : locals) {
    if (auto st = put(t, local_, l.id, encode_local(l.rev, l.body)); !st) return st;
  }
  return {};
}

status shard_store::compact_step(MDB_txn* t, shard_header& h, write_op& op) {
  std::vector<doc_info> docs;  // read first: dropping bodies does not touch docs_, but keep it simple
  MDB_cursor* c = nullptr;
  if (int rc = mdb_cursor_open(t, docs_, &c); rc != 0) return lmdb::to_status(rc, "mdb_cursor_open");
  MDB_val k{op.compact_from.size(), const_cast<char*>(op.compact_from.data())}, v;
  int rc = mdb_cursor_get(c, &k, &v, op.compact_from.empty() ? MDB_FIRST : MDB_SET_RANGE);
  op.compact_next.clear();
  for (; rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    if (docs.size() == std::max<size_t>(1, op.compact_limit)) {
      op.compact_next.assign(lmdb::view(k));
      break;
    }
    doc_info d;
    if (!decode_doc(lmdb::view(k), lmdb::view(v), d)) {
      mdb_cursor_close(c);
      return {errc::internal, "corrupt document record: " + std::string(lmdb::view(k))};
    }
    docs.push_back(std::move(d));
  }
  mdb_cursor_close(c);
  if (rc != 0 && rc != MDB_NOTFOUND) return lmdb::to_status(rc, "mdb_cursor_get");
  for (const doc_info& d : docs) {
    for (size_t i = 0; i < d.tree.nodes().size(); ++i) {
      if (d.tree.is_leaf(static_cast<int>(i))) continue;
      if (auto st = drop_body(t, h, d.id, d.tree.rev(static_cast<int>(i))); !st) return st;
    }
  }
  op.compact_visited = docs.size();
  return {};
}

status shard_store::apply_local(MDB_txn* t, write_op& op) {
  // As CouchDB's couch_db_updater:increment_local_doc_revs: a local document's revision is never
  // checked; a write stores the revision it names plus one (0-1 without one), a deletion removes it.
  const local_update& u = op.local;
  if (u.deleted) {
    op.local_rev = 0;
    return del(t, local_, u.id);
  }
  op.local_rev = u.rev + 1;
  return put(t, local_, u.id, encode_local(op.local_rev, u.body));
}

result<shard_store::snapshot> shard_store::read() const {
  snapshot s;
  s.store_ = shared_from_this();
  if (int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &s.txn_); rc != 0) {
    s.txn_ = nullptr;
    return lmdb::to_status(rc, "mdb_txn_begin");
  }
  return s;
}

shard_store::snapshot& shard_store::snapshot::operator=(snapshot&& o) noexcept {
  if (this != &o) {
    if (txn_) mdb_txn_abort(txn_);
    store_ = std::move(o.store_);
    txn_ = o.txn_;
    o.txn_ = nullptr;
  }
  return *this;
}

shard_store::snapshot::~snapshot() {
  if (txn_) mdb_txn_abort(txn_);
}

void shard_store::snapshot::reset() {
  if (txn_) mdb_txn_reset(txn_);
}

bool shard_store::snapshot::renew() {
  return txn_ && mdb_txn_renew(txn_) == 0;
}

bool shard_store::snapshot::fail(const status& st) const {
  if (fault_) {
    log::error("shard " + store_->path() + ": " + st.reason);
    fault_ = st;
  }
  return false;
}

bool shard_store::snapshot::corrupt(std::string_view what, std::string_view key) const {
  return fail({errc::internal,
               "corrupt " + std::string(what) + " record '" + std::string(key) + "' in shard " + store_->path()});
}

bool shard_store::snapshot::doc(std::string_view id, doc_info& out) const {
  std::string_view raw;
  bool found = false;
  const std::string key = doc_key::of(id);
  if (auto st = get(txn_, store_->docs_, key, raw, found); !st) return fail(st);
  if (!found) return false;
  return decode_doc(key, raw, out) || corrupt("document", id);
}

bool shard_store::snapshot::body(std::string_view id, const rev_id& rev, std::string& out) const {
  std::string_view raw;
  bool found = false;
  if (auto st = get(txn_, store_->bodies_, body_key(id, rev), raw, found); !st) return fail(st);
  if (!found) return false;
  out.assign(raw);
  return true;
}

bool shard_store::snapshot::blob(std::string_view key, std::string& out) const {
  bool found = false;
  if (auto st = blob_store::read(txn_, store_->blobs_, key, out, found); !st) return fail(st);
  return found;
}

bool shard_store::snapshot::blob_range(std::string_view key, uint64_t offset, uint64_t length, std::string& out) const {
  bool found = false;
  if (auto st = blob_store::read_range(txn_, store_->blobs_, key, offset, length, out, found, true); !st)
    return fail(st);
  return found;
}

std::vector<json_index_def> shard_store::snapshot::json_indexes() const {
  std::vector<json_index_def> out;
  if (auto st = json_index::load_defs(txn_, store_->jx_, out); !st) fail(st);
  return out;
}

void shard_store::snapshot::scan_json_index(
    uint32_t number, std::string_view low, std::string_view high, bool descending,
    const std::function<bool(std::string_view pos, std::string_view id)>& visit) const {
  if (auto st = json_index::scan(txn_, store_->jx_, number, low, high, descending, visit); !st) fail(st);
}

uint64_t shard_store::snapshot::count_json_index(uint32_t number, std::string_view low, std::string_view high,
                                                 uint64_t cap) const {
  uint64_t n = 0;
  if (auto st = json_index::count(txn_, store_->jx_, number, low, high, cap, n); !st) fail(st);
  return n;
}

bool shard_store::snapshot::winner_body(const doc_info& d, std::string& out) const {
  return !d.tree.empty() && !d.tree.winner_deleted() && body(d.id, d.tree.rev(d.tree.winner()), out);
}

bool shard_store::snapshot::local(std::string_view id, local_doc& out) const {
  std::string_view raw;
  bool found = false;
  if (auto st = get(txn_, store_->local_, id, raw, found); !st) return fail(st);
  if (!found) return false;
  codec::reader r(raw);
  out.id.assign(id);
  return (r.varint(out.rev) && r.str(out.body)) || corrupt("local document", id);
}

void shard_store::snapshot::scan_docs(std::string_view start, bool descending,
                                      const std::function<bool(const doc_info&)>& visit) const {
  MDB_cursor* c = nullptr;
  if (int rc = mdb_cursor_open(txn_, store_->docs_, &c); rc != 0) {
    fail(lmdb::to_status(rc, "mdb_cursor_open"));
    return;
  }
  // Keys sort as ids but within a group of long ids (storage/doc_key.hpp): seek to where `start`'s
  // group begins (ascending) or ends (descending), and compare the ids themselves from there.
  std::string seek(start.size() > doc_key::max_plain ? start.substr(0, doc_key::max_plain) : start);
  if (descending && start.size() > doc_key::max_plain) seek.append(33, '\xff');  // past the whole group
  const MDB_cursor_op step = descending ? MDB_PREV : MDB_NEXT;
  MDB_val k = lmdb::val(seek), v;
  int rc;
  if (start.empty()) {
    rc = mdb_cursor_get(c, &k, &v, descending ? MDB_LAST : MDB_FIRST);
  } else {
    rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    if (descending) {
      if (rc == MDB_NOTFOUND) {
        rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
      } else if (rc == 0 && lmdb::view(k) != seek) {
        rc = mdb_cursor_get(c, &k, &v, MDB_PREV);  // first key <= seek
      }
    }
  }
  // Whether `id` is on the requested side of `start`.
  auto wanted = [&](const std::string& id) {
    return start.empty() || (descending ? std::string_view(id) <= start : std::string_view(id) >= start);
  };
  std::vector<doc_info> group;
  bool go = true;
  while (rc == 0 && go) {
    std::string_view key = lmdb::view(k);
    if (!doc_key::is_long(key)) {
      doc_info d;
      if (!decode_doc(key, lmdb::view(v), d)) {
        corrupt("document", key);
        break;
      }
      if (wanted(d.id)) go = visit(d);
      rc = mdb_cursor_get(c, &k, &v, step);
      continue;
    }
    // A group of long ids sharing their first max_plain bytes: read it whole, in id order.
    const std::string prefix(doc_key::group(key));
    group.clear();
    while (rc == 0 && doc_key::is_long(lmdb::view(k)) && doc_key::group(lmdb::view(k)) == prefix) {
      group.emplace_back();
      if (!decode_doc(lmdb::view(k), lmdb::view(v), group.back())) {
        corrupt("document", lmdb::view(k));
        rc = MDB_NOTFOUND;
        go = false;
        group.pop_back();
        break;
      }
      rc = mdb_cursor_get(c, &k, &v, step);
    }
    std::sort(group.begin(), group.end(), [&](const doc_info& a, const doc_info& b) {
      return descending ? std::string_view(b.id) < a.id : std::string_view(a.id) < b.id;
    });
    for (size_t i = 0; i < group.size() && go; ++i) {
      if (wanted(group[i].id)) go = visit(group[i]);
    }
  }
  if (rc != 0 && rc != MDB_NOTFOUND) fail(lmdb::to_status(rc, "mdb_cursor_get"));
  mdb_cursor_close(c);
}

replication_batch shard_store::snapshot::read_for_replication(uint64_t since, size_t max_docs) const {
  replication_batch b;
  b.last_seq = since;
  size_t bytes = 0;
  scan_changes(since, [&](const change_entry& e) {
    doc_info d;
    bool found = doc(e.id, d);
    if (!fault_) return false;  // stop before what cannot be read: last_seq does not pass it
    if (found) {
      for (int leaf : d.tree.leaves()) {
        doc_update u;
        u.id = d.id;
        u.new_edits = false;
        u.honor_purges = true;  // another copy of the range: what it purged stays purged
        u.deleted = d.tree.nodes()[leaf].deleted;
        for (int i : d.tree.path_to(leaf)) u.revs.push_back(d.tree.rev(i));
        if (!body(d.id, d.tree.rev(leaf), u.body)) u.body = "{}";
        // Attachments travel with the body: its blobs' bytes, so the target references what it holds.
        if (u.body.find("\"_attachments\"") != std::string::npos) {
          auto parsed = parse_json(u.body);
          auto keys = parsed ? attachments::keys_of(*parsed) : std::vector<std::string>{};
          u.managed_attachments = !keys.empty();
          for (const std::string& k : keys) {
            const json* e = nullptr;
            for (auto& [name, entry] : (*parsed)["_attachments"].items())
              if (const std::string* key = attachments::key_of(entry); key && *key == k) e = &entry;
            if (e && attachments::stored_length(*e) > replication_piece_bytes) {
              b.large_blobs.emplace_back(k, attachments::stored_length(*e));
              continue;
            }
            std::string bytes;
            // A body naming a blob its shard lacks is corrupt: stop here, with the error (last_seq
            // does not pass it), rather than give the target a reference without bytes.
            if (!blob(k, bytes)) return fault_ ? corrupt("attachment blob", k) : false;
            u.blobs.push_back({k, std::move(bytes)});
          }
        }
        bytes += u.body.size();
        for (auto& blob : u.blobs) bytes += blob.bytes.size();
        b.updates.push_back(std::move(u));
      }
    }
    b.last_seq = e.seq;
    return ++b.docs < max_docs && bytes < replication_batch_bytes;
  });
  return b;
}

void shard_store::snapshot::scan_local(const std::function<bool(const local_doc&)>& visit) const {
  MDB_cursor* c = nullptr;
  if (int rc = mdb_cursor_open(txn_, store_->local_, &c); rc != 0) {
    fail(lmdb::to_status(rc, "mdb_cursor_open"));
    return;
  }
  MDB_val k, v;
  local_doc d;
  for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    codec::reader r(lmdb::view(v));
    d.id.assign(lmdb::view(k));
    if (!r.varint(d.rev) || !r.str(d.body)) {
      corrupt("local document", d.id);
      break;
    }
    if (!visit(d)) break;
  }
  mdb_cursor_close(c);
}

void shard_store::snapshot::scan_purges(uint64_t since, const std::function<bool(const purge_info&)>& visit) const {
  if (auto st = purge_log::scan(txn_, store_->purges_, since, visit); !st) fail(st);
}

uint64_t shard_store::snapshot::oldest_purge_seq() const {
  uint64_t seq = 0;
  if (auto st = purge_log::oldest(txn_, store_->purges_, seq); !st) fail(st);
  return seq;
}

void shard_store::snapshot::scan_changes(uint64_t since, const std::function<bool(const change_entry&)>& visit) const {
  MDB_cursor* c = nullptr;
  if (int rc = mdb_cursor_open(txn_, store_->by_seq_, &c); rc != 0) {
    fail(lmdb::to_status(rc, "mdb_cursor_open"));
    return;
  }
  std::string from = codec::seq_key(since + 1);
  MDB_val k = lmdb::val(from), v;
  int rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
  change_entry e;
  while (rc == 0) {
    uint64_t seq = 0;
    if (!codec::parse_seq_key(lmdb::view(k), seq) || !decode_change(seq, lmdb::view(v), e)) {
      corrupt("change", std::to_string(seq));
      break;
    }
    if (!visit(e)) break;
    rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
  }
  if (rc != 0 && rc != MDB_NOTFOUND) fail(lmdb::to_status(rc, "mdb_cursor_get"));
  mdb_cursor_close(c);
}

void shard_store::snapshot::scan_db_events(uint64_t seq, uint32_t index,
                                           const std::function<bool(const db_event&)>& visit) const {
  scan_events(seq, index, /*backward=*/false, visit);
}

void shard_store::snapshot::scan_db_events_before(uint64_t seq,
                                                  const std::function<bool(const db_event&)>& visit) const {
  scan_events(seq, 0, /*backward=*/true, visit);
}

void shard_store::snapshot::scan_events(uint64_t seq, uint32_t index, bool backward,
                                        const std::function<bool(const db_event&)>& visit) const {
  if (!store_->db_events_) return;
  MDB_cursor* c = nullptr;
  if (int rc = mdb_cursor_open(txn_, store_->events_, &c); rc != 0) {
    fail(lmdb::to_status(rc, "mdb_cursor_open"));
    return;
  }
  std::string from = event_key(seq, index);
  MDB_val k = lmdb::val(from), v;
  int rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
  if (backward) {
    // The key before the first one at or after `from` ("m" and "s" keys sort after every event).
    rc = rc == 0 ? mdb_cursor_get(c, &k, &v, MDB_PREV) : rc == MDB_NOTFOUND ? mdb_cursor_get(c, &k, &v, MDB_LAST) : rc;
  }
  db_event e;
  while (rc == 0) {
    std::string_view key = lmdb::view(k);
    if (key.empty() || key[0] != 'e') break;  // past the events: the "m" and "s" keys
    if (!decode_event(key, lmdb::view(v), e)) {
      corrupt("database event", std::to_string(e.seq));
      break;
    }
    if (!visit(e)) break;
    rc = mdb_cursor_get(c, &k, &v, backward ? MDB_PREV : MDB_NEXT);
  }
  if (rc != 0 && rc != MDB_NOTFOUND) fail(lmdb::to_status(rc, "mdb_cursor_get"));
  mdb_cursor_close(c);
}

uint64_t shard_store::snapshot::skip_before_time(uint64_t since, int64_t time) const {
  MDB_cursor* c = nullptr;
  if (int rc = mdb_cursor_open(txn_, store_->by_seq_, &c); rc != 0) {
    fail(lmdb::to_status(rc, "mdb_cursor_open"));
    return since;
  }
  std::string from = codec::seq_key(since + 1);
  MDB_val k = lmdb::val(from), v;
  uint64_t last = since;
  for (int rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    uint64_t seq = 0;
    int64_t t = 0;
    // An entry that does not decode is not skipped: the full read reports it as it would anyway.
    if (!codec::parse_seq_key(lmdb::view(k), seq) || !decode_change_time(lmdb::view(v), t) || t >= time) break;
    last = seq;
  }
  mdb_cursor_close(c);
  return last;
}

void shard_store::snapshot::scan_changes_descending(uint64_t before,
                                                    const std::function<bool(const change_entry&)>& visit) const {
  MDB_cursor* c = nullptr;
  if (int rc = mdb_cursor_open(txn_, store_->by_seq_, &c); rc != 0) {
    fail(lmdb::to_status(rc, "mdb_cursor_open"));
    return;
  }
  MDB_val k, v;
  int rc;
  std::string from;
  if (before == 0) {
    rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
  } else {
    from = codec::seq_key(before);
    k = lmdb::val(from);
    rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);  // first key >= before, then step back
    rc = rc == MDB_NOTFOUND ? mdb_cursor_get(c, &k, &v, MDB_LAST) : mdb_cursor_get(c, &k, &v, MDB_PREV);
  }
  change_entry e;
  while (rc == 0) {
    uint64_t seq = 0;
    if (!codec::parse_seq_key(lmdb::view(k), seq) || !decode_change(seq, lmdb::view(v), e)) {
      corrupt("change", std::to_string(seq));
      break;
    }
    if (!visit(e)) break;
    rc = mdb_cursor_get(c, &k, &v, MDB_PREV);
  }
  if (rc != 0 && rc != MDB_NOTFOUND) fail(lmdb::to_status(rc, "mdb_cursor_get"));
  mdb_cursor_close(c);
}

uint64_t shard_store::snapshot::live_before(std::string_view id) const {
  uint64_t n = 0;
  if (id.size() <= doc_key::max_plain) {
    if (auto st = doc_rank::before(txn_, store_->rank_, store_->docs_, live_record, id, n); !st) fail(st);
    return n;
  }
  // A long id: every key up to its group's, then the live members of the group before it by id.
  std::string probe(id.substr(0, doc_key::max_plain));
  probe.push_back('\0');
  if (auto st = doc_rank::before(txn_, store_->rank_, store_->docs_, live_record, probe, n); !st) {
    fail(st);
    return n;
  }
  MDB_cursor* c = nullptr;
  if (int rc = mdb_cursor_open(txn_, store_->docs_, &c); rc != 0) {
    fail(lmdb::to_status(rc, "mdb_cursor_open"));
    return n;
  }
  MDB_val k = lmdb::val(probe), v;
  int rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
  for (; rc == 0 && doc_key::is_long(lmdb::view(k)) && doc_key::group(lmdb::view(k)) == doc_key::group(id);
       rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    doc_info d;
    if (decode_doc(lmdb::view(k), lmdb::view(v), d) && !d.tree.winner_deleted() && std::string_view(d.id) < id) ++n;
  }
  if (rc != 0 && rc != MDB_NOTFOUND) fail(lmdb::to_status(rc, "mdb_cursor_get"));
  mdb_cursor_close(c);
  return n;
}

uint64_t shard_store::snapshot::live_total() const {
  uint64_t n = 0;
  if (auto st = doc_rank::total(txn_, store_->rank_, n); !st) fail(st);
  return n;
}

bool shard_store::snapshot::header(shard_header& out) const {
  std::string_view raw;
  bool found = false;
  if (auto st = get(txn_, store_->meta_, header_key, raw, found); !st) return fail(st);
  return (found && shard_header::decode(std::string(raw), out)) || corrupt("header", header_key);
}

status shard_store::put_change(MDB_txn* t, const doc_info& d, int64_t time_s) {
  seq_deltas_.emplace_back(d.seq, +1);
  return put(t, by_seq_, codec::seq_key(d.seq), encode_change(d, time_s), MDB_APPEND);
}

status shard_store::del_change(MDB_txn* t, uint64_t seq) {
  seq_deltas_.emplace_back(seq, -1);
  return del(t, by_seq_, codec::seq_key(seq));
}

void shard_store::reset_working() {
  working_ = indexes_;
  seq_deltas_.clear();
}

status shard_store::commit_txn(lmdb::txn& t) {
  const uint64_t txn_id = mdb_txn_id(t.get());
  status st = t.commit();
  if (!st) return st;
  publish_counts(txn_id);
  ahead_.after_commit(env_);
  return st;
}

void shard_store::publish_counts(uint64_t txn_id) {
  std::lock_guard<std::mutex> lock(counts_mu_);
  // Derived from the version of the transaction before: a commit's id is the previous one's + 1.
  if (counts_.empty() || counts_.back().first + 1 != txn_id) return;  // none yet: built when asked
  auto next = std::make_shared<seq_counts>(*counts_.back().second);
  for (auto& [seq, delta] : seq_deltas_) next->add(seq, delta);
  counts_.emplace_back(txn_id, std::move(next));
  if (counts_.size() > kept_counts) counts_.erase(counts_.begin());
}

std::shared_ptr<const seq_counts> shard_store::counts_at(uint64_t txn_id) const {
  std::lock_guard<std::mutex> lock(counts_mu_);
  for (auto& [id, c] : counts_)
    if (id == txn_id) return c;
  return nullptr;
}

void shard_store::offer_counts(uint64_t txn_id, std::shared_ptr<const seq_counts> c) const {
  std::lock_guard<std::mutex> lock(counts_mu_);
  if (!counts_.empty() && counts_.back().first >= txn_id) return;  // newer ones are kept
  counts_.emplace_back(txn_id, std::move(c));
  if (counts_.size() > kept_counts) counts_.erase(counts_.begin());
}

uint64_t shard_store::snapshot::count_changes_after(uint64_t since) const {
  MDB_cursor* c = nullptr;
  if (int rc = mdb_cursor_open(txn_, store_->by_seq_, &c); rc != 0) {
    fail(lmdb::to_status(rc, "mdb_cursor_open"));
    return 0;
  }
  std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)> closer(c, mdb_cursor_close);
  const uint64_t txn_id = mdb_txn_id(txn_);
  auto counts = store_->counts_at(txn_id);
  MDB_val k, v;
  if (!counts) {  // one scan of the seqs in this snapshot; commits keep it from then on
    auto built = std::make_shared<seq_counts>();
    uint64_t seq = 0;
    for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
      if (codec::parse_seq_key(lmdb::view(k), seq)) built->add(seq, +1);
    }
    store_->offer_counts(txn_id, built);
    counts = std::move(built);
  }
  // The rest of since's run, entry by entry; the runs above it by their counts.
  std::string from = codec::seq_key(since + 1);
  const uint64_t run_end = seq_counts::run_end(since);
  k = lmdb::val(from);
  uint64_t n = 0, seq = 0;
  for (int rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    if (codec::parse_seq_key(lmdb::view(k), seq) && seq > run_end) break;
    ++n;
  }
  return n + counts->after_run_of(since);
}

uint64_t shard_store::snapshot::count_changes_before(uint64_t before) const {
  MDB_stat st;
  if (int rc = mdb_stat(txn_, store_->by_seq_, &st); rc != 0) {
    fail(lmdb::to_status(rc, "mdb_stat"));
    return 0;
  }
  uint64_t all = st.ms_entries;  // one entry per document
  if (before == 0) return all;
  uint64_t at_or_above = count_changes_after(before - 1);
  return all > at_or_above ? all - at_or_above : 0;
}

bool parse_local_rev(std::string_view text, uint64_t& out) {
  if (text.substr(0, 2) != "0-" || text.size() < 3 || text.size() > 22) return false;
  std::string digits(text.substr(2));
  char* end = nullptr;
  out = std::strtoull(digits.c_str(), &end, 10);
  return *end == '\0';
}

}  // namespace settee
