// shard_registry: the node's cache of open shard replicas (store + writer actor), keyed by file path.
//
// Guarantees one LMDB environment per file per process (LMDB's rule): a path is open at most once,
// and a store being closed must be fully released before the path can be opened again.
// Idle shards are closed least-recently-used first once more than `max_open` are open; a shard is
// idle when nobody but the registry and its actor holds it (no request in flight). A file is opened
// without the registry's lock (others wait only for the same path), so one slow open does not
// stall every lookup.
// Thread-safety: all methods may be called from any thread.
#pragma once
#include <atomic>
#include <caf/actor.hpp>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "actors/shard_replica.hpp"
#include "node/error.hpp"

namespace settee {

struct shard_handle {
  std::shared_ptr<shard_store> store;  // for reads (snapshots) from the calling thread
  shard_writer writer;                 // the shard replica: every write goes through it
};

class shard_registry {
 public:
  shard_registry(caf::actor_system& sys, const clock& clk, store_options store_opts, replica_limits limits,
                 size_t max_open, change_notifier* notifier = nullptr);
  ~shard_registry();

  // Opens (or finds) the shard at `path`. `created_at` is used when the file is new; commits are
  // announced to the notifier under `notify_key`.
  result<shard_handle> acquire(const std::string& path, int64_t created_at, const std::string& notify_key = "");
  // The file at `path` is of kind `role` whenever it is opened (its owner says so before it opens
  // it: the catalog, the update log); other files are database shards.
  void set_role(const std::string& path, file_role role);
  // Closes the shard (after its queued writes) and deletes its files. The path is not opened again
  // (paths name one database incarnation), so a request that still holds the old shard map cannot
  // re-create the file: acquire() answers db_not_found. Removed paths are remembered for
  // remembered_removal_s, far longer than any request holds a shard map, then forgotten (a node
  // that creates and deletes databases all day must not grow).
  void remove(const std::string& path);
  // Removes every shard of one database incarnation: marks them removed, wakes the feeds reading
  // them (notify_key) so they see it and let go, then closes and deletes each.
  void remove_all(const std::vector<std::string>& paths, const std::string& notify_key);
  // Seals the shard at `path` (shard_store::seal), now and whenever it is opened again.
  void seal(const std::string& path);
  // Undoes seal() (a move that did not switch the map).
  void unseal(const std::string& path);
  // Whether anyone but the registry and the shard's actor holds the shard at `path` (a request,
  // a feed).
  bool held(const std::string& path) const;
  // True once remove(path) has begun.
  bool removed(const std::string& path) const;
  // Lets `path` be opened again after remove(): a copy moving back to a node it left (the move
  // makes the file anew under the same shard's path).
  void revive(const std::string& path);
  // Closes every shard (queued writes finish first).
  void close_all();
  // Called with a shard's path once remove() deleted its files (what lives beside a copy, its view
  // indexes, goes with it). Set once, before the registry is used.
  void set_on_removed(std::function<void(const std::string& path)> removed) { on_removed_ = std::move(removed); }
  // Wakes the live feeds of `notify_key` (e.g. their database was deleted).
  void notify(const std::string& notify_key);
  // Lets the kernel take back the mapped pages of every open shard nobody has acquired for
  // `idle_ms` and nobody holds (lmdb::release_maps), once per idle spell: an idle node does not keep
  // every page it ever read. Cheap when no shard became idle since the last call.
  void release_idle_maps(int64_t idle_ms);
  // Shards open now (metrics).
  size_t open_count() const;
  // Visits every open shard, under the registry's lock (metrics: keep `visit` short).
  void for_each_open(const std::function<void(const std::string& path, const shard_store& store)>& visit) const;
  // When a shard was last acquired (clock ms): any request, a peer's call or internal replication.
  int64_t last_acquired_ms() const { return last_acquired_ms_.load(std::memory_order_relaxed); }

 private:
  // Set when a store's environment has closed (shard_store::set_on_closed): its file may be
  // opened again. Shared with the store's callback, so it outlives the registry if it must.
  struct close_signal {
    std::mutex mu;
    std::condition_variable cv;
    bool closed = false;
  };
  struct entry {
    shard_handle handle;
    std::shared_ptr<close_signal> closed;
    uint64_t last_used = 0;  // tick_ when last acquired (least recently used first)
    int64_t used_at_ms = 0;  // clock time when last acquired
    bool mapped = true;      // its pages may be resident (not released since it was last acquired)
  };
  void close_entry(entry& e);
  // Waits until the store behind `c` has closed (null: nothing to wait for); false after 60 s.
  static bool wait_closed(const std::shared_ptr<close_signal>& c);
  // Closes idle shards, least recently used first, until at most `keep` are open.
  void evict_idle_locked(size_t keep);
  // Before a file is opened: waits while the maps of the open, admitted and still-closing shards
  // would pass what the address space holds (max_mapped_), then admits the open.
  void wait_for_address_space();
  // Forgets the closing shards whose environment has closed.
  void forget_closed_locked();
  void mark_removed_locked(const std::string& path);
  std::map<std::string, file_role> roles_;  // set_role
  bool removed_locked(const std::string& path) const;
  static constexpr int64_t remembered_removal_s = 600;

  caf::actor_system& sys_;
  const clock& clk_;
  store_options store_opts_;
  replica_limits limits_;
  size_t max_open_;
  // Shard maps the address space holds (settings::shard_address_budget / the map size), at least
  // max_open_: a close is asynchronous (the actor finishes its queued writes first), so under load
  // evicted shards may still be mapped when the next one opens.
  size_t max_mapped_;
  change_notifier* notifier_;
  std::function<void(const std::string& path)> on_removed_;
  mutable std::mutex mu_;
  std::condition_variable opened_;  // an open finished (opening_ shrank)
  std::set<std::string> opening_;   // paths being opened right now, without mu_ held
  size_t admitted_ = 0;             // opens of opening_ past wait_for_address_space
  std::map<std::string, entry> open_;
  std::map<std::string, std::shared_ptr<close_signal>> closing_;  // closed, not yet released
  // Removed paths by hash (sorted; a collision could only refuse a new path for 10 minutes, with
  // odds of 1 in 2^64 per path): flat arrays, not a node per path, so that deleting databases does
  // not leave small allocations scattered over the heap (they keep freed pages from going back).
  std::vector<uint64_t> removed_;
  std::set<std::string> sealed_;                            // split parents (a handful at a time; gone with remove())
  std::deque<std::pair<int64_t, uint64_t>> removed_order_;  // (when, hash), oldest first
  uint64_t tick_ = 0;
  std::atomic<int64_t> last_acquired_ms_{0};
};

}  // namespace settee
