#include "actors/shard_registry.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "actors/change_notifier.hpp"
#include "actors/messages.hpp"
#include "node/check.hpp"
#include "node/clock.hpp"
#include "node/log.hpp"
#include "node/settings.hpp"
#include "storage/lmdb_env.hpp"

namespace settee {

shard_registry::shard_registry(caf::actor_system& sys, const clock& clk, store_options store_opts,
                               replica_limits limits, size_t max_open, change_notifier* notifier)
    : sys_(sys),
      clk_(clk),
      store_opts_(std::move(store_opts)),
      limits_(limits),
      max_open_(max_open ? max_open : 1),
      max_mapped_(std::max<size_t>(max_open_,
                                   settings::shard_address_budget / std::max<uint64_t>(1, store_opts_.map_size_bytes))),
      notifier_(notifier) {}

shard_registry::~shard_registry() {
  close_all();
}

bool shard_registry::wait_closed(const std::shared_ptr<close_signal>& c) {
  // The actor drops its reference when it quits; readers hold theirs for one request only.
  if (!c) return true;
  std::unique_lock<std::mutex> lock(c->mu);
  if (mono::wait_until(c->cv, lock, mono::now() + std::chrono::seconds(60), [&] { return c->closed; })) return true;
  log::error("a shard store is still referenced after 60 s; continuing");
  return false;
}

void shard_registry::forget_closed_locked() {
  for (auto it = closing_.begin(); it != closing_.end();) {
    std::lock_guard<std::mutex> lock(it->second->mu);
    it = it->second->closed ? closing_.erase(it) : std::next(it);
  }
}

void shard_registry::wait_for_address_space() {
  const auto deadline = mono::now() + std::chrono::seconds(60);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (open_.size() >= max_open_) evict_idle_locked(max_open_ - 1);  // room for the one being opened
    forget_closed_locked();
    if (open_.size() + admitted_ + closing_.size() < max_mapped_) break;
    if (!closing_.empty()) {
      auto pending = closing_.begin()->second;
      lock.unlock();
      const bool closed = wait_closed(pending);
      lock.lock();
      if (!closed) break;  // logged; the open may still fit
    } else {
      // Every open shard is busy: wait for an admitted open to end (its request may let go).
      const size_t admitted = admitted_;
      if (!admitted || !mono::wait_until(opened_, lock, deadline, [&] { return admitted_ != admitted; })) break;
    }
  }
  ++admitted_;
}

void shard_registry::close_entry(entry& e) {
  caf::anon_send(e.handle.writer.actor, shutdown_atom_v);
  e.handle.writer = {};
}

void shard_registry::set_role(const std::string& path, file_role role) {
  std::lock_guard<std::mutex> lock(mu_);
  roles_[path] = role;
}

result<shard_handle> shard_registry::acquire(const std::string& path, int64_t created_at,
                                             const std::string& notify_key) {
  // Opening a file may wait (I/O, a commit): never on a thread that must not wait.
  SETTEE_DEBUG_CHECK(!on_event_loop_thread());
  std::shared_ptr<close_signal> closing;
  {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (removed_locked(path)) return status{errc::db_not_found, "Database does not exist."};
      auto it = open_.find(path);
      if (it != open_.end()) {
        it->second.last_used = ++tick_;
        it->second.used_at_ms = clk_.now_ms();
        it->second.mapped = true;
        last_acquired_ms_.store(it->second.used_at_ms, std::memory_order_relaxed);
        return it->second.handle;
      }
      if (!opening_.count(path)) break;
      opened_.wait(lock);  // another thread is opening this file: take what it opens
    }
    opening_.insert(path);
    auto c = closing_.find(path);
    if (c != closing_.end()) {
      closing = c->second;
      closing_.erase(c);
    }
  }
  // The file is opened without the registry's lock: other shards are found and opened meanwhile.
  wait_closed(closing);  // never two environments on one file
  wait_for_address_space();
  store_options opts = store_opts_;
  opts.created_at = created_at;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto r = roles_.find(path);
    opts.role = r == roles_.end() ? file_role::shard : r->second;
  }
  auto store = shard_store::open(path, opts);
  entry e;
  if (store) {
    e.closed = std::make_shared<close_signal>();
    (*store)->set_on_closed([closed = e.closed] {
      std::lock_guard<std::mutex> lock(closed->mu);
      closed->closed = true;
      closed->cv.notify_all();
    });
    e.handle.store = *store;
    e.handle.writer = spawn_shard_replica(sys_, *store, clk_, limits_, notifier_, notify_key);
  }
  std::lock_guard<std::mutex> lock(mu_);
  opening_.erase(path);
  --admitted_;
  opened_.notify_all();
  if (!store) return store.error();
  if (removed_locked(path)) {  // deleted while it was being opened: remove() takes it from closing_
    closing_[path] = e.closed;
    close_entry(e);
    return status{errc::db_not_found, "Database does not exist."};
  }
  if (sealed_.count(path)) e.handle.store->seal();
  e.last_used = ++tick_;
  e.used_at_ms = clk_.now_ms();
  last_acquired_ms_.store(e.used_at_ms, std::memory_order_relaxed);
  auto handle = e.handle;
  open_.emplace(path, std::move(e));
  if (log::enabled(log::level::debug))
    log::debug("shard opened: " + path + " (" + std::to_string(open_.size()) + " open)");
  evict_idle_locked(max_open_);
  return handle;
}

void shard_registry::evict_idle_locked(size_t keep) {
  while (open_.size() > keep) {
    auto victim = open_.end();
    for (auto it = open_.begin(); it != open_.end(); ++it) {
      // Held by the registry and the actor only: no request in flight.
      if (it->second.handle.store.use_count() <= 2 &&
          (victim == open_.end() || it->second.last_used < victim->second.last_used)) {
        victim = it;
      }
    }
    if (victim == open_.end()) return;  // everything is busy; try again on the next open
    if (log::enabled(log::level::debug)) log::debug("shard closed (least recently used): " + victim->first);
    closing_[victim->first] = victim->second.closed;
    close_entry(victim->second);
    open_.erase(victim);
  }
}

void shard_registry::release_idle_maps(int64_t idle_ms) {
  std::vector<std::string> idle;
  {
    const int64_t before = clk_.now_ms() - idle_ms;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [path, e] : open_) {
      // Not held by a request (a feed) now: the registry and the actor only.
      if (e.mapped && e.used_at_ms <= before && e.handle.store.use_count() <= 2) {
        e.mapped = false;
        idle.push_back(path);
      }
    }
  }
  lmdb::release_maps(idle);
}

void shard_registry::remove(const std::string& path) {
  std::shared_ptr<close_signal> w;
  {
    std::unique_lock<std::mutex> lock(mu_);
    mark_removed_locked(path);
    sealed_.erase(path);                                        // never opened again
    opened_.wait(lock, [&] { return !opening_.count(path); });  // its file must not appear after the delete
    auto it = open_.find(path);
    if (it != open_.end()) {
      w = it->second.closed;
      close_entry(it->second);
      open_.erase(it);
    }
    auto c = closing_.find(path);
    if (c != closing_.end()) {
      if (!w) w = c->second;
      closing_.erase(c);
    }
  }
  wait_closed(w);
  shard_store::remove_files(path);
  if (on_removed_) on_removed_(path);
}

void shard_registry::remove_all(const std::vector<std::string>& paths, const std::string& notify_key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& p : paths) mark_removed_locked(p);  // before the wake-up: a woken feed must see it
  }
  if (notifier_) notifier_->retire(notify_key);
  for (auto& p : paths) remove(p);
}

void shard_registry::mark_removed_locked(const std::string& path) {
  int64_t now = clk_.now_s();
  while (!removed_order_.empty() && removed_order_.front().first + remembered_removal_s < now) {
    auto it = std::lower_bound(removed_.begin(), removed_.end(), removed_order_.front().second);
    if (it != removed_.end() && *it == removed_order_.front().second) removed_.erase(it);
    removed_order_.pop_front();
  }
  uint64_t h = std::hash<std::string>{}(path);
  auto it = std::lower_bound(removed_.begin(), removed_.end(), h);
  if (it != removed_.end() && *it == h) return;
  removed_.insert(it, h);
  removed_order_.emplace_back(now, h);
}

bool shard_registry::held(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_.find(path);
  return it != open_.end() && it->second.handle.store.use_count() > 2;
}

void shard_registry::seal(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  sealed_.insert(path);
  auto it = open_.find(path);
  if (it != open_.end()) it->second.handle.store->seal();
}

size_t shard_registry::open_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_.size();
}

void shard_registry::for_each_open(
    const std::function<void(const std::string& path, const shard_store& store)>& visit) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [path, e] : open_) visit(path, *e.handle.store);
}

void shard_registry::unseal(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  sealed_.erase(path);
  auto it = open_.find(path);
  if (it != open_.end()) it->second.handle.store->unseal();
}

bool shard_registry::removed_locked(const std::string& path) const {
  return std::binary_search(removed_.begin(), removed_.end(), std::hash<std::string>{}(path));
}

void shard_registry::revive(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t h = std::hash<std::string>{}(path);
  auto it = std::lower_bound(removed_.begin(), removed_.end(), h);
  if (it == removed_.end() || *it != h) return;
  removed_.erase(it);
  removed_order_.erase(std::remove_if(removed_order_.begin(), removed_order_.end(),
                                      [h](const std::pair<int64_t, uint64_t>& e) { return e.second == h; }),
                       removed_order_.end());
}

bool shard_registry::removed(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  return removed_locked(path);
}

void shard_registry::close_all() {
  std::vector<std::shared_ptr<close_signal>> ws;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [path, e] : open_) {
      ws.push_back(e.closed);
      close_entry(e);
    }
    open_.clear();
    for (auto& [path, w] : closing_) ws.push_back(w);
    closing_.clear();
  }
  for (auto& w : ws) wait_closed(w);
}

void shard_registry::notify(const std::string& notify_key) {
  if (notifier_) notifier_->notify(notify_key);
}

}  // namespace settee
