#include "node/clock.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace settee {

int64_t system_clock::now_ms() const {
  return wall_ms();
}

int64_t wall_ms() {
  // The only read of the system clock in settee.
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

std::atomic<mono::manual*> installed_manual{nullptr};

}  // namespace

mono::manual* mono::installed() {
  return installed_manual.load();
}

mono::time_point mono::now() {
  if (manual* m = installed()) return m->now();
  // The only read of the monotonic clock in settee.
  return std::chrono::steady_clock::now();
}

mono::manual::manual() : now_(std::chrono::steady_clock::time_point{} + std::chrono::hours(1)) {}

mono::manual::~manual() {
  manual* self = this;
  installed_manual.compare_exchange_strong(self, nullptr);
}

void mono::manual::install() {
  installed_manual.store(this);
}

mono::time_point mono::manual::now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return now_;
}

size_t mono::manual::waiters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_.size();
}

void mono::manual::advance(duration d) {
  std::vector<waiter> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += d;
    wake = waiting_;
    ++notifying_;
  }
  // Each waiter's own mutex is taken without this clock's (a waiter holds its own while it asks
  // the time or registers: the other order would deadlock). A waiter leaves only once no advance
  // is notifying, so each one here is alive: waiting, or about to look at the time again.
  for (const waiter& w : wake) {
    std::lock_guard<std::mutex> their(*w.mu);
    w.cv->notify_all();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (--notifying_ == 0) quiet_.notify_all();
}

bool mono::manual::wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, time_point at,
                              const std::function<bool()>& pred) {
  {
    std::lock_guard<std::mutex> own(mu_);
    waiting_.push_back({&cv, lock.mutex()});
  }
  bool ok = pred();
  while (!ok && now() < at) {
    cv.wait(lock);
    ok = pred();
  }
  // Leaving waits for any advance() to finish notifying (it may be about to take our mutex: let
  // ours go first).
  lock.unlock();
  {
    std::unique_lock<std::mutex> own(mu_);
    quiet_.wait(own, [this] { return notifying_ == 0; });
    auto it = std::find_if(waiting_.begin(), waiting_.end(), [&](const waiter& w) { return w.cv == &cv; });
    if (it != waiting_.end()) waiting_.erase(it);
  }
  lock.lock();
  return ok;
}

int64_t file_clock::now_ms() const {
  if (std::FILE* f = std::fopen(path_.c_str(), "r")) {
    long long seconds = 0;
    int n = std::fscanf(f, "%lld", &seconds);
    std::fclose(f);
    if (n == 1) return seconds * 1000;
  }
  return fallback_.now_ms();
}

}  // namespace settee
