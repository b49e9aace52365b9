#include "actors/db_catalog.hpp"

#include "node/json.hpp"

#include <malloc.h>

#include <algorithm>
#include <cstring>

#include "actors/bridge.hpp"
#include "node/log.hpp"

namespace settee {

status validate_db_name(const std::string& name) {
  // Plain linear checks (a name is a path segment any anonymous client sends): never a regex.
  static const char* system[] = {"_users", "_replicator", "_global_changes"};
  auto allowed = [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || (ch != '\0' && std::strchr("_$()+-/", ch));
  };
  bool ok = std::find(std::begin(system), std::end(system), name) != std::end(system) ||
            (!name.empty() && name[0] >= 'a' && name[0] <= 'z' && std::all_of(name.begin(), name.end(), allowed));
  if (!ok) {
    return {errc::illegal_database_name,
            "Name: '" + name +
                "'. Only lowercase characters (a-z), digits (0-9), and any of the characters _, $, (, ), +, -, "
                "and / are allowed. Must begin with a letter."};
  }
  if (name.size() > 238) {
    return {errc::database_name_too_long, "At least one path segment of `" + name + "` is too long."};
  }
  return {};
}

db_catalog::db_catalog(shard_registry& shards, const clock& clk, std::string data_dir, std::string node_name,
                       std::chrono::milliseconds timeout)
    : shards_(shards),
      clk_(clk),
      data_dir_(std::move(data_dir)),
      node_name_(std::move(node_name)),
      timeout_(timeout),
      dbs_path_(file_in(data_dir_)) {
  shards_.set_role(dbs_path_, file_role::catalog);
}

namespace {

std::shared_ptr<const json> parse_security(const std::string& text) {
  auto j = parse_json(text);
  return std::make_shared<const json>(j && j->is_object() ? std::move(*j) : json::object());
}

}  // namespace

db_meta db_catalog::make_meta(const std::string& name, const entry& e) const {
  db_meta m;
  m.name = name;
  m.created = e.created;
  m.security = parse_security(e.security);
  m.partitioned = e.partitioned;
  m.entry = std::make_shared<const entry>(e);
  for (size_t i : e.open_shards()) {
    const shard_info& s = e.shards[i];
    m.ranges.push_back(s.range);
    m.suffixes.push_back(s.suffix);
    m.shard_paths.push_back(shard_file(data_dir_, name, s.id()));
    if (!e.everywhere) m.nodes.push_back(s.nodes);
    m.local.push_back(e.everywhere || std::find(s.nodes.begin(), s.nodes.end(), node_name_) != s.nodes.end());
  }
  m.q = static_cast<uint32_t>(m.ranges.size());
  m.n = m.nodes.empty() || m.nodes[0].empty() ? 1 : static_cast<uint32_t>(m.nodes[0].size());
  return m;
}

status db_catalog::open_local_copies(const db_meta& m) {
  for (size_t i = 0; i < m.q; ++i) {
    if (!m.hosts(i)) continue;
    if (auto h = shards_.acquire(m.shard_paths[i], m.created, m.key()); !h) return h.error();
  }
  return {};
}

std::optional<db_catalog::entry> db_catalog::parse_entry(const std::string& name, const std::string& body) {
  std::string why;
  auto e = parse_catalog_entry(body, why);
  if (!e) log::error("ignoring unreadable _dbs entry for " + name + ": " + why);
  return e;
}

std::optional<db_catalog::entry> db_catalog::read_entry(const shard_store::snapshot& snap, const doc_info& d) {
  std::string body;
  if (!snap.winner_body(d, body)) return std::nullopt;
  auto e = parse_entry(d.id, body);
  // Other live leaves: the entry was written on two nodes at once (splits on each); merged.
  for (int leaf : d.tree.sorted_leaves()) {
    if (!e || leaf == d.tree.winner() || d.tree.nodes()[leaf].deleted) continue;
    if (!snap.body(d.id, d.tree.rev(leaf), body)) continue;
    if (auto other = parse_entry(d.id, body)) e = merge_catalog_entries(*e, *other);
  }
  return e;
}

status db_catalog::read_entries(const shard_store::snapshot& snap, uint64_t since,
                                std::map<std::string, std::optional<entry>>& out, uint64_t& top) {
  auto read_one = [&](const std::string& id) {
    doc_info d;
    std::optional<entry> e;
    if (snap.doc(id, d)) e = read_entry(snap, d);
    out[id] = std::move(e);
  };
  if (since == 0) {
    snap.scan_docs("", false, [&](const doc_info& d) {
      if (auto e = read_entry(snap, d)) out[d.id] = std::move(e);
      return true;
    });
  } else {
    // By seq: a creation or deletion costs the catalog what it changed, not every database again.
    snap.scan_changes(since, [&](const change_entry& c) {
      top = std::max(top, c.seq);
      if (c.deleted)
        out[c.id] = std::nullopt;
      else
        read_one(c.id);
      return true;
    });
  }
  return snap.fault();
}

status db_catalog::load() {
  auto h = dbs();
  if (!h) return h.error();
  uint64_t seq = h->store->header().update_seq;
  auto snap = h->store->read();
  if (!snap) return snap.error();
  std::map<std::string, std::optional<entry>> entries;
  if (auto st = read_entries(*snap, 0, entries, seq); !st) return st;
  for (auto& [name, e] : entries)
    if (e)
      if (auto st = mark_format(e->format_needed()); !st) return st;
  std::unique_lock lock(mu_);
  for (auto& [name, e] : entries) {
    if (!e) continue;
    auto m = make_meta(name, *e);
    last_suffix_ = std::max(last_suffix_, m.created);
    dbs_by_name_.emplace(name, std::move(m));
  }
  loaded_seq_ = seq;
  return {};
}

status db_catalog::reload() {
  std::lock_guard<std::mutex> wlock(write_mu_);
  uint64_t gen = stale_gen_.load();  // every change marked before this is in what is read below
  auto h = dbs();
  if (!h) return h.error();
  uint64_t seq = h->store->header().update_seq;
  if (seq == loaded_seq_) {
    loaded_gen_.store(gen);
    return {};
  }
  auto snap = h->store->read();
  if (!snap) return snap.error();
  // Only what changed since the last look; everything when `_dbs` went back (a file put back).
  std::map<std::string, std::optional<entry>> changed;
  const bool everything = seq < loaded_seq_;
  uint64_t top = everything || loaded_seq_ == 0 ? seq : loaded_seq_;
  if (everything) {
    std::shared_lock lock(mu_);
    for (auto& [name, m] : dbs_by_name_) changed[name] = std::nullopt;
  }
  if (auto st = read_entries(*snap, everything ? 0 : loaded_seq_, changed, top); !st) return st;
  for (auto& [name, e] : changed)  // a split made on another node, arrived by internal replication
    if (e)
      if (auto st = mark_format(e->format_needed()); !st) return st;
  std::vector<db_meta> gone, added;
  {
    std::shared_lock lock(mu_);
    for (auto& [name, e] : changed) {
      auto it = dbs_by_name_.find(name);
      // Deleted, or re-created elsewhere as a new incarnation.
      if (it != dbs_by_name_.end() && (!e || e->created != it->second.created)) gone.push_back(it->second);
    }
  }
  // Files first, then the name: once a database is gone from the catalog its files are gone too.
  for (auto& m : gone) shards_.remove_all(m.shard_paths, m.key());
  {
    std::unique_lock lock(mu_);
    for (auto& m : gone) dbs_by_name_.erase(m.name);
    for (auto& [name, e] : changed) {
      if (!e) continue;
      auto it = dbs_by_name_.find(name);
      if (it != dbs_by_name_.end()) {  // the same database, with a new _security or shard map
        db_meta now = make_meta(name, *e);
        if (now.shard_paths != it->second.shard_paths) added.push_back(now);  // split: open the new copies
        it->second = std::move(now);
        continue;
      }
      auto m = make_meta(name, *e);
      last_suffix_ = std::max(last_suffix_, m.created);
      added.push_back(m);
      dbs_by_name_.emplace(name, std::move(m));
    }
    loaded_seq_ = top;
    loaded_gen_.store(gen);
  }
  for (auto& m : added) {
    if (auto st = open_local_copies(m); !st) return st;
  }
  return {};
}

db_meta db_catalog::dbs_meta() const {
  return db_meta::local_system("_dbs", dbs_path_);
}

result<db_meta> db_catalog::find(const std::string& name) const {
  std::shared_lock lock(mu_);
  auto it = dbs_by_name_.find(name);
  if (it == dbs_by_name_.end()) return status{errc::db_not_found, "Database does not exist."};
  return it->second;
}

bool db_catalog::alive(const db_meta& m) const {
  auto now = find(m.name);
  if (!now || now->created != m.created) return false;
  // This node's copies of the shards open now: a split's parent, or a copy moved to another node,
  // goes away while the database lives on.
  for (size_t i = 0; i < now->shard_paths.size(); ++i) {
    if (now->hosts(i) && shards_.removed(now->shard_paths[i])) return false;
  }
  return true;
}

result<db_meta> db_catalog::lookup_internal(const std::string& name) {
  if (name == "_dbs") return dbs_meta();
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = internal_.find(name);
    if (it != internal_.end()) return it->second();
  }
  return lookup(name);
}

void db_catalog::add_internal(const std::string& name, std::function<db_meta()> meta) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  internal_[name] = std::move(meta);
}

result<db_meta> db_catalog::lookup(const std::string& name) {
  if (stale_gen_.load() != loaded_gen_.load()) {
    if (auto st = reload(); !st) return st;
  }
  auto m = find(name);
  if (m || m.error().code != errc::db_not_found) return m;
  if (auto st = reload(); !st) return st;
  return find(name);
}

std::vector<std::string> db_catalog::names() const {
  return names(std::nullopt, false, SIZE_MAX);
}

std::vector<std::string> db_catalog::names(const std::optional<std::string>& from, bool descending, size_t max) const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  auto take = [&](auto it, auto end) {
    for (; it != end && out.size() < max; ++it) out.push_back(it->first);
  };
  if (!descending) {
    take(from ? dbs_by_name_.lower_bound(*from) : dbs_by_name_.begin(), dbs_by_name_.end());
  } else {
    auto first = from ? std::make_reverse_iterator(dbs_by_name_.upper_bound(*from)) : dbs_by_name_.rbegin();
    take(first, dbs_by_name_.rend());
  }
  return out;
}

status db_catalog::write_entry(const std::string& name, const std::string& body, bool deleted,
                               const std::optional<doc_info>& seen) {
  auto h = dbs();
  if (!h) return h.error();
  // The revisions the new body builds on: those the caller merged it from (`seen`), or the
  // document as it is now.
  std::optional<doc_info> base = seen;
  if (!base) {
    if (auto snap = h->store->read()) {
      doc_info d;
      if (snap->doc(name, d)) base = std::move(d);
    }
  }
  auto op = std::make_shared<write_op>();
  doc_update u;
  u.id = name;
  u.body = body;
  u.deleted = deleted;
  if (base) {
    const rev_tree& t = base->tree;
    u.revs.push_back(t.rev(t.winner()));
    // Conflicting versions (written on two nodes at once) that were merged into this body end
    // here, or a deletion of the winner would bring one of them back. A version that arrived
    // after `base` was read stays, to be merged by the next read.
    for (int leaf : t.sorted_leaves()) {
      if (leaf == t.winner() || t.nodes()[leaf].deleted) continue;
      doc_update end;
      end.id = name;
      end.body = "{}";
      end.deleted = true;
      end.revs.push_back(t.rev(leaf));
      op->docs.push_back(std::move(end));
    }
  }
  op->docs.insert(op->docs.begin(), std::move(u));
  return write_one(h->writer, op, timeout_);
}

result<db_meta> db_catalog::create(const std::string& name, uint32_t q, uint32_t n,
                                   const std::vector<std::string>& members, const std::string& security,
                                   bool partitioned) {
  std::lock_guard<std::mutex> wlock(write_mu_);
  if (find(name)) {
    return status{errc::file_exists, "The database could not be created, the file already exists."};
  }
  entry e = entry::initial(std::max(clk_.now_s(), last_suffix_ + 1), place_copies(members, q, n, hash_doc_id(name)));
  e.security = security;
  e.partitioned = partitioned;
  if (auto st = mark_format(e.format_needed()); !st) return st;
  return create_locked(name, e);
}

status db_catalog::set_security(const std::string& name, const std::string& security_json) {
  std::lock_guard<std::mutex> wlock(write_mu_);
  auto m = find(name);
  if (!m) return m.error();
  std::optional<doc_info> seen;
  entry e = current_entry(name, *m, seen);
  e.security = security_json;
  if (auto st = write_entry(name, encode_catalog_entry(e), false, seen); !st) return st;
  std::unique_lock lock(mu_);
  auto it = dbs_by_name_.find(name);
  if (it != dbs_by_name_.end() && it->second.created == m->created) {
    it->second.security = parse_security(security_json);
    it->second.entry = std::make_shared<const entry>(std::move(e));
  }
  return {};
}

status db_catalog::create_system(const std::string& name) {
  std::lock_guard<std::mutex> wlock(write_mu_);
  if (find(name)) return {};
  entry e = entry::initial(1, {});  // the same incarnation on every node
  auto m = create_locked(name, e);
  return m ? status{} : m.error();
}

result<db_meta> db_catalog::create_locked(const std::string& name, const entry& e) {
  db_meta m = make_meta(name, e);
  // This node's shard files first, then the `_dbs` entry that makes the database exist: a creation
  // that fails (a full disk) leaves no database behind, and a 201 means the files are there.
  auto undo_files = [&]() {
    for (size_t i = 0; i < m.q; ++i)
      if (m.hosts(i)) shards_.remove(m.shard_paths[i]);
    last_suffix_ = std::max(last_suffix_, e.created);  // a retry gets new file names
  };
  if (auto st = open_local_copies(m); !st) {
    undo_files();
    return st;
  }
  if (auto st = write_entry(name, encode_catalog_entry(e), false); !st) {
    undo_files();
    return st;
  }
  last_suffix_ = std::max(last_suffix_, e.created);
  std::unique_lock lock(mu_);
  dbs_by_name_[name] = m;
  return m;
}

db_catalog::entry db_catalog::current_entry(const std::string& name, const db_meta& m, std::optional<doc_info>& seen) {
  // What `_dbs` holds now may be newer than the catalog's view (a peer's push not yet reloaded):
  // an edit builds on both, or it would drop a split made on another node.
  entry e = *m.entry;
  seen.reset();
  auto h = dbs();
  if (!h) return e;
  auto snap = h->store->read();
  doc_info d;
  if (!snap || !snap->doc(name, d)) return e;
  auto stored = read_entry(*snap, d);
  seen = std::move(d);
  return stored && stored->created == e.created ? merge_catalog_entries(*stored, e) : e;
}

status db_catalog::mark_format(uint32_t format) {
  if (format <= 1) return {};
  auto h = dbs();
  if (!h) return h.error();
  if (h->store->header().format_version >= format) return {};
  auto op = std::make_shared<write_op>();
  op->what = write_op::kind::format;
  op->format_version = format;
  log::info("_dbs holds a " +
            std::string(format >= shard_header::partitioned_catalog_format ? "partitioned" : "split") +
            " database: raising its file format to " + std::to_string(format) + " (releases before " +
            (format >= shard_header::partitioned_catalog_format ? "0.4" : "0.3") + " will refuse this data directory)");
  return write_one(h->writer, op, timeout_);
}

result<db_meta> db_catalog::update_entry(const std::string& name, int64_t created,
                                         const std::function<status(entry&)>& edit) {
  std::lock_guard<std::mutex> wlock(write_mu_);
  auto m = find(name);
  if (!m || m->created != created) return status{errc::db_not_found, "Database does not exist."};
  // A peer's push may land between the read and the write (a conflict): read and edit again.
  for (int attempt = 0;; ++attempt) {
    std::optional<doc_info> seen;
    entry e = current_entry(name, *m, seen);
    if (auto st = edit(e); !st) return st;
    if (auto st = mark_format(e.format_needed()); !st) return st;
    db_meta now = make_meta(name, e);
    if (auto st = open_local_copies(now); !st) return st;
    status st = write_entry(name, encode_catalog_entry(e), false, seen);
    if (!st && st.code == errc::conflict && attempt < 10) continue;
    if (!st) return st;
    {
      std::unique_lock lock(mu_);
      dbs_by_name_[name] = now;
    }
    note_map_change();
    return now;
  }
}

status db_catalog::remove(const std::string& name) {
  std::lock_guard<std::mutex> wlock(write_mu_);
  auto m = find(name);
  if (!m) return m.error();
  // The tombstone names the incarnation it ends (storage/db_events.hpp; 0.2 wrote "{}").
  if (auto st = write_entry(name, json{{"created", m->created}}.dump(), true); !st) return st;
  shards_.remove_all(m->shard_paths, m->key());  // open feeds notice and end, releasing the shards
  // The shards' memory (their writer threads' arenas, LMDB's buffers) went back to malloc; give it
  // back to the system too, or a node that dropped many databases keeps their peak footprint.
  ::malloc_trim(0);
  std::unique_lock lock(mu_);
  dbs_by_name_.erase(name);  // after the files: a 200 means they are gone
  return {};
}

void db_catalog::mark_stale() {
  stale_gen_.fetch_add(1);
  note_map_change();
}

void db_catalog::note_map_change() {
  std::lock_guard<std::mutex> lock(change_mu_);
  map_changes_.fetch_add(1);
  changed_.notify_all();
}

void db_catalog::wait_map_change(uint64_t seen, mono::time_point until) {
  std::unique_lock<std::mutex> lock(change_mu_);
  mono::wait_until(changed_, lock, until, [&] { return map_changes_.load() != seen; });
}

}  // namespace settee
