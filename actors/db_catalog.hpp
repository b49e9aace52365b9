// db_catalog: which databases exist on this node and how each is sharded.
//
// The catalog is itself a shard file, `<data>/_dbs.lmdb` (CouchDB's `_dbs` model): one document per
// database, holding q, the creation suffix and the shard ranges. Creating or deleting a database
// is one durable write to it; the in-memory index is rebuilt from it at start-up. Shard files live at
// `<data>/shards/<range>/<db>.<suffix>`; the suffix (creation time in seconds, strictly increasing
// per node) means a deleted and re-created database never reuses a file.
// Thread-safety: all methods may be called from any thread.
#pragma once
#include <caf/fwd.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "actors/catalog_entry.hpp"
#include "actors/shard_map.hpp"
#include "actors/shard_registry.hpp"
#include "node/clock.hpp"
#include "node/json.hpp"

namespace settee {

// "shards/<range>/<db>.<suffix>" for "<range>.<suffix>" (a peer may send an id without a dot).
inline std::string shard_name(const std::string& db, const std::string& shard_id) {
  size_t dot = std::min(shard_id.find('.'), shard_id.size());
  return "shards/" + shard_id.substr(0, dot) + "/" + db + shard_id.substr(dot);
}

// A database name CouchDB accepts (400 illegal_database_name, or database_name_too_long past 238
// bytes): lowercase letters, digits and _$()+-/, a letter first, or one of the system databases.
status validate_db_name(const std::string& name);

struct db_meta {
  std::string name;
  uint32_t q = 1;
  uint32_t n = 1;       // copies of each range
  int64_t created = 0;  // the first shards' suffix and instance_start_time
  // The open shards, ordered by range (they cover the ring); routing reads these.
  std::vector<shard_range> ranges;
  std::vector<int64_t> suffixes;                // each open shard's id suffix
  std::vector<std::string> shard_paths;         // where this node keeps its copy of each range
  std::vector<std::vector<std::string>> nodes;  // the nodes holding each range's copies
  std::vector<bool> local;                      // whether this node holds a copy of each range
  bool partitioned = false;                     // props.partitioned (catalog_entry)
  // The _security object (kept in `_dbs`: every node has it), parsed once: every request reads it.
  std::shared_ptr<const json> security = std::make_shared<const json>(json::object());
  // The `_dbs` entry it was made from: every shard there has been, with lineage (shared, immutable).
  std::shared_ptr<const catalog_entry> entry;

  // System databases (`_dbs`, `_nodes`) list no nodes: every node holds every range.
  bool everywhere() const { return nodes.empty(); }
  bool hosts(size_t range) const { return everywhere() || local[range]; }

  // Names this incarnation of the database (for change notifications).
  std::string key() const { return name + "." + std::to_string(created); }
  // The id of the open shard holding range `index` (spec 11.3): "<range>.<suffix>", never reused
  // (the first shards' suffix is the database's creation time).
  std::string shard_id(size_t index) const { return ranges[index].name() + "." + std::to_string(suffixes[index]); }
  // The index of the range named `range` ("00000000-7fffffff"), if the database has it.
  std::optional<size_t> range_named(const std::string& range) const {
    for (size_t i = 0; i < ranges.size(); ++i)
      if (ranges[i].name() == range) return i;
    return std::nullopt;
  }

  // A one-range system database whose copy lives at `path` on this node (`_dbs`, `_nodes`).
  static db_meta local_system(std::string name, std::string path) {
    db_meta m;
    m.name = std::move(name);
    m.ranges = make_ranges(1);
    m.suffixes = {0};
    m.entry = std::make_shared<const catalog_entry>(catalog_entry::initial(0, {}));
    m.shard_paths = {std::move(path)};
    m.local = {true};
    return m;
  }
};

class db_catalog {
 public:
  using entry = catalog_entry;

  db_catalog(shard_registry& shards, const clock& clk, std::string data_dir, std::string node_name,
             std::chrono::milliseconds timeout);

  // The key `_dbs` commits are announced under (dbs_meta().key()); the update log's commits use it
  // too, so one watch wakes a `_db_updates` feed for either.
  static std::string notify_key() { return "_dbs.0"; }
  // Where shard `shard_id` ("<range>.<suffix>") of database `db` lives: shards/<range>/<db>.<suffix>.
  static std::string shard_file(const std::string& data_dir, const std::string& db, const std::string& shard_id) {
    size_t dot = shard_id.find('.');
    return data_dir + "/shards/" + shard_id.substr(0, dot) + "/" + db + shard_id.substr(dot);
  }
  // Where `_dbs` lives under a data directory (file_role::catalog).
  static std::string file_in(const std::string& data_dir) { return data_dir + "/_dbs.lmdb"; }

  // Opens `_dbs` and loads every database. Call once before anything else.
  status load();
  // Brings the in-memory catalog in line with `_dbs` after it changed underneath (internal
  // replication from another node): creates the shard files of new databases, removes those of
  // deleted ones. Cheap when `_dbs` did not change since the last call.
  status reload();
  // `_dbs` itself as a one-range database, so internal replication can push it like any other.
  db_meta dbs_meta() const;
  // This node's `_dbs` file.
  result<shard_handle> catalog_file() { return dbs(); }

  result<db_meta> find(const std::string& name) const;
  // find(), but a name not known yet makes the catalog look at `_dbs` again first: a database
  // created on another node a moment ago is usable here as soon as its entry has arrived.
  result<db_meta> lookup(const std::string& name);
  // What a call from another node names (a push or a read of a copy): `_dbs` itself, a node-wide
  // database registered by its owner (`_nodes`), or any database (lookup()).
  result<db_meta> lookup_internal(const std::string& name);
  // Registers `name` as a node-wide database whose meta `meta` gives (before calls can name it).
  void add_internal(const std::string& name, std::function<db_meta()> meta);
  // `_dbs` changed underneath (a peer pushed to it): the next lookup() reloads first.
  void mark_stale();
  // Shard maps this node has seen change (an update_entry() here, a mark_stale()): a count, and a
  // wait until it passes `seen` or `until` comes. A writer refused by a sealed split parent waits
  // here for the new map (coordinator::update_docs).
  uint64_t map_changes() const { return map_changes_.load(); }
  void wait_map_change(uint64_t seen, mono::time_point until);
  // Reloads when `_dbs` changed underneath, so a listing (names()) sees it as lookup() would.
  status refresh() { return stale_gen_.load() != loaded_gen_.load() ? reload() : status{}; }
  std::vector<std::string> names() const;
  // At most `max` names in order (reverse order when `descending`), from the first at or past `from`
  // (at or before, descending; nullopt: from either end): O(log n + max), for a page of _all_dbs.
  std::vector<std::string> names(const std::optional<std::string>& from, bool descending, size_t max) const;
  // False once this incarnation of the database is deleted, or while its deletion is under way
  // (long-lived readers such as feeds poll this and let go of the shards).
  bool alive(const db_meta& m) const;
  // errc::file_exists when it exists. The n copies of each of the q ranges are placed over
  // `members` (sorted, this node included); this node creates the files of its own copies.
  // `security` is the new database's _security object, written in the same `_dbs` entry (so there is
  // no moment when the database exists without it).
  // `partitioned`: documents placed by their partition (shard_map.hpp's placement_hash).
  result<db_meta> create(const std::string& name, uint32_t q, uint32_t n, const std::vector<std::string>& members,
                         const std::string& security = "{}", bool partitioned = false);
  // A system database (`_users`, `_replicator`): one range, a copy on every node, and the same
  // incarnation everywhere, so nodes that create it independently agree. No-op when it exists.
  status create_system(const std::string& name);
  // Replaces the database's _security object (JSON text) in `_dbs`.
  status set_security(const std::string& name, const std::string& security_json);
  // Rewrites the entry of incarnation `created` of database `name` through `edit` (a split changes
  // its shards). The first entry with lineage raises `_dbs`' file format first (shard_header:
  // releases before 0.3 then refuse the data directory rather than route by `q`). Opens this
  // node's copies of new open shards; answers the database as it is now.
  result<db_meta> update_entry(const std::string& name, int64_t created, const std::function<status(entry&)>& edit);
  // errc::db_not_found when it does not exist. Deletes the shard files.
  status remove(const std::string& name);

 private:
  // One `_dbs` entry's body; nullopt (logged) when it cannot be read.
  static std::optional<entry> parse_entry(const std::string& name, const std::string& body);
  // The entry document `d` holds: its winner, merged with any other live leaf.
  static std::optional<entry> read_entry(const shard_store::snapshot& snap, const doc_info& d);
  // Every live entry, or (since > 0) the entries changed after seq `since`: nullopt for a name
  // deleted since. `top` becomes the last seq read.
  static status read_entries(const shard_store::snapshot& snap, uint64_t since,
                             std::map<std::string, std::optional<entry>>& out, uint64_t& top);
  db_meta make_meta(const std::string& name, const entry& e) const;
  // Writes the `_dbs` entry and opens this node's copies; write_mu_ held.
  result<db_meta> create_locked(const std::string& name, const entry& e);
  // Opens (creating if new) this node's copies of `m`.
  status open_local_copies(const db_meta& m);
  // `seen`: the document the body was merged from (its winner is the base, its other leaves end).
  status write_entry(const std::string& name, const std::string& body, bool deleted,
                     const std::optional<doc_info>& seen = std::nullopt);
  // The entry of `m`'s database as `_dbs` holds it now, merged with `m`'s (write_mu_ held);
  // `seen` is the document read, for write_entry.
  entry current_entry(const std::string& name, const db_meta& m, std::optional<doc_info>& seen);
  // Raises `_dbs`' header to file format `format` (catalog_entry::format_needed) unless it is there.
  status mark_format(uint32_t format);
  result<shard_handle> dbs() { return shards_.acquire(dbs_path_, clk_.now_s(), notify_key()); }

  shard_registry& shards_;
  const clock& clk_;
  std::string data_dir_;
  std::string node_name_;
  std::chrono::milliseconds timeout_;
  std::string dbs_path_;  // the `_dbs` shard, acquired per use like any other
  mutable std::shared_mutex mu_;
  std::mutex write_mu_;  // one create/delete at a time
  std::map<std::string, db_meta> dbs_by_name_;
  int64_t last_suffix_ = 0;
  uint64_t loaded_seq_ = 0;
  // `_dbs` changed behind the catalog's back (mark_stale) stale_gen_ times; a reload that started
  // after the last of them has run once loaded_gen_ equals it. A lookup that sees them differ
  // reloads (or waits for the reload in progress): a flag consumed by another thread's reload let
  // a lookup read the old _security before that reload finished.
  std::atomic<uint64_t> stale_gen_{0};
  std::map<std::string, std::function<db_meta()>> internal_;  // add_internal (under mu_)
  std::atomic<uint64_t> loaded_gen_{0};
  std::atomic<uint64_t> map_changes_{0};
  std::mutex change_mu_;
  std::condition_variable changed_;  // map_changes_ moved
  void note_map_change();
};

}  // namespace settee
