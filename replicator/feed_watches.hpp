// feed_watches: how a caught-up continuous replication waits for its source's next change. Each
// watch is one longpoll read of the source's `_changes` (the replication's own query, from where it
// is) on a thread and connection of its own; when the read answers (a change, the longpoll's
// timeout, or an error, then no sooner than a second after it began) the replication is woken and
// its next step reads the feed. A waiting replication holds no worker of the `replication` lane, so
// any number of them wait at once (one thread each, at most [replicator] max_jobs).
// Thread-safety: every method may be called from any thread.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "replicator/rep_client.hpp"

namespace settee {

class feed_watches {
 public:
  // `wake(id)` is called on a watch's thread once its read answered (never after stop_all()).
  explicit feed_watches(std::function<void(const std::string&)> wake);
  ~feed_watches();  // stop_all()
  feed_watches(const feed_watches&) = delete;
  feed_watches& operator=(const feed_watches&) = delete;

  // Reads `rest` (GET, or POST with `body` unless it is null) from `source`, then wakes `id`.
  // Nothing when a watch for `id` is still reading.
  void watch(const std::string& id, const rep_endpoint& source, std::chrono::milliseconds timeout,
             const std::string& rest, json body);
  // Ends the watch of `id`, if any (its connection closed; it wakes nobody).
  void end(const std::string& id);
  // Ends every watch and joins their threads.
  void stop_all();

 private:
  struct entry {
    std::thread thread;
    std::unique_ptr<rep_client> client;
    std::atomic<bool> ended{false}, finished{false};
  };
  void run(const std::string& id, entry& e, std::string rest, json body);
  // Joins the threads of finished watches (under mu_).
  void reap_locked();

  std::function<void(const std::string&)> wake_;
  std::mutex mu_;
  std::condition_variable ended_cv_;  // a watch whose read failed waits on it for its floor
  bool stopped_ = false;
  std::map<std::string, std::unique_ptr<entry>> live_;
  std::vector<std::unique_ptr<entry>> done_;  // ended or replaced, their threads to join
};

}  // namespace settee
