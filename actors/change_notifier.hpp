// change_notifier: tells live _changes feeds that a database has new commits. Shard replicas call
// notify(key) after every commit; a feed reads version(key) before it scans, and if it found
// nothing new it watches for the version to move past what it saw, so no commit is missed between
// the scan and the watch. Keys are "<db>.<suffix>" (one per database incarnation).
// Thread-safety: all methods may be called from any thread.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

namespace settee {

class change_notifier {
 public:
  void notify(const std::string& key);
  uint64_t version(const std::string& key);
  // Calls `wake` once, from the notifying thread (or right here when the version already moved
  // past `seen`). Returns a watch id for unwatch(), 0 when `wake` already ran. `wake` must be quick
  // and must not call back into the notifier.
  uint64_t watch(const std::string& key, uint64_t seen, std::function<void()> wake);
  // Forgets a watch that has not fired (a no-op after it fired).
  void unwatch(const std::string& key, uint64_t id);
  // Wakes every watch of `key` and forgets the key (its database incarnation was deleted; a feed
  // that watches it later sees a new version at once and finds the database gone).
  void retire(const std::string& key);
  size_t watchers() const;
  // Also calls `observe(key)` on every notify, before the watches (set once, before any commit;
  // it must be quick: the update log marks the database dirty).
  void set_observer(std::function<void(const std::string&)> observe) { observe_ = std::move(observe); }
  // A commit on this node wrote a design document (of any database): caches of design documents
  // (actors/doc_validator) compare design_version() with what they loaded at.
  void design_changed() { design_.fetch_add(1, std::memory_order_release); }
  uint64_t design_version() const { return design_.load(std::memory_order_acquire); }

 private:
  struct slot {
    uint64_t version = 0;
    std::unordered_map<uint64_t, std::function<void()>> watches;
  };

  std::function<void(const std::string&)> observe_;
  std::atomic<uint64_t> design_{0};
  mutable std::mutex mu_;
  std::unordered_map<std::string, slot> slots_;
  uint64_t next_id_ = 1;
  size_t watchers_ = 0;
};

}  // namespace settee
