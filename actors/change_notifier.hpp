// change_notifier: wakes the threads waiting for new commits of a database (live _changes feeds).
// Shard replicas call notify(key) after every commit; a feed reads version(key) before it scans,
// and if it found nothing new it waits for the version to move, so no commit is missed between the
// scan and the wait. Keys are "<db>.<suffix>" (one per database incarnation).
// Thread-safety: all methods may be called from any thread.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace settee {

class change_notifier {
 public:
  void notify(const std::string& key);
  uint64_t version(const std::string& key);
  // Returns the version once it differs from `seen`, or at the deadline (whichever comes first).
  uint64_t wait(const std::string& key, uint64_t seen, std::chrono::steady_clock::time_point deadline);

 private:
  struct slot {
    uint64_t version = 0;
    std::condition_variable cv;
  };
  slot& get(const std::string& key);  // mu_ held

  std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<slot>> slots_;
};

}  // namespace settee
