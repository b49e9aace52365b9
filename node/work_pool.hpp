// work_pool: a fixed set of threads running submitted jobs in order of submission. The cluster RPC
// loop hands it every call that may block (a write that waits for its commit, a shard to open), so
// that the loop itself never waits on I/O; results come back through KJ cross-thread fulfillers.
// Thread-safety: submit() may be called from any thread; stop() from one.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace settee {

class work_pool {
 public:
  explicit work_pool(size_t threads);
  ~work_pool();  // stop()
  work_pool(const work_pool&) = delete;
  work_pool& operator=(const work_pool&) = delete;

  // False when the pool stopped (the job is dropped).
  bool submit(std::function<void()> job);
  size_t threads() const { return count_; }
  // Runs the jobs already queued, then joins the threads. Later submits are dropped.
  void stop();

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
  size_t count_ = 0;
};

}  // namespace settee
