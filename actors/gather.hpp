// gather: the answers of calls made to several shard copies at once, collected as they arrive on
// whatever thread answers (a replica actor, the RPC loop, the caller itself), while one caller
// waits for enough of them. This is how the coordinator hands work to other threads and gets it
// back: start every call with a slot's callback, then wait().
// Thread-safety: slots may be called from any thread, exactly once each (a slot called twice
// keeps the first answer); a slot may outlive the gather's waiter (late answers are dropped).
#pragma once
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "node/check.hpp"
#include "node/clock.hpp"
#include "node/error.hpp"

namespace settee {

template <class T>
class gather {
 public:
  // Up to `groups[g]` calls in group g (e.g. the copies of one range).
  explicit gather(const std::vector<size_t>& groups) : s_(std::make_shared<state>()) {
    for (size_t n : groups) s_->answers.emplace_back(n);
    s_->started.assign(groups.size(), 0);
  }

  // The callback that delivers call k of group g. Taking it starts the call: wait() waits only for
  // calls started.
  std::function<void(result<T>)> slot(size_t g, size_t k) {
    {
      std::lock_guard<std::mutex> lock(s_->mu);
      ++s_->started[g];
    }
    SETTEE_CHECK(g < s_->answers.size() && k < s_->answers[g].size());  // a slot of a call it expects
    return [s = s_, g, k](result<T> r) {
      {
        std::lock_guard<std::mutex> lock(s->mu);
        if (s->taken) return;  // late: the waiter took the answers and left
        auto& a = s->answers[g][k];
        if (a) return;
        a.emplace(std::move(r));
      }
      s->cv.notify_all();
    };
  }

  // Waits until every group has `want` successful answers (capped at its size) or no started
  // call left to wait for, or until `deadline`. Returns (a copy of) the answers so far (nullopt:
  // not answered yet); wait again for more.
  std::vector<std::vector<std::optional<result<T>>>> wait(size_t want, std::chrono::steady_clock::time_point deadline) {
    auto lock = wait_locked(want, deadline);
    return s_->answers;
  }
  // wait(), once and for all: the answers are moved out (no copy of large pages), and answers
  // arriving later are dropped.
  std::vector<std::vector<std::optional<result<T>>>> take(size_t want, std::chrono::steady_clock::time_point deadline) {
    auto lock = wait_locked(want, deadline);
    s_->taken = true;
    return std::move(s_->answers);
  }

 private:
  struct state {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::vector<std::optional<result<T>>>> answers;
    std::vector<size_t> started;
    bool taken = false;
  };
  std::unique_lock<std::mutex> wait_locked(size_t want, std::chrono::steady_clock::time_point deadline) {
    SETTEE_DEBUG_CHECK(!on_event_loop_thread());
    std::unique_lock<std::mutex> lock(s_->mu);
    mono::wait_until(s_->cv, lock, deadline, [&] { return enough(want); });
    SETTEE_DEBUG_CHECK(!s_->taken);
    return lock;
  }
  bool enough(size_t want) const {
    for (size_t g = 0; g < s_->answers.size(); ++g) {
      size_t ok = 0, done = 0;
      for (auto& a : s_->answers[g]) {
        done += a.has_value();
        ok += a.has_value() && a->ok();
      }
      if (ok < std::min(want, s_->answers[g].size()) && done < s_->started[g]) return false;
    }
    return true;
  }
  std::shared_ptr<state> s_;
};

// One call started with `start(done)` and waited for until `deadline`; errc::timeout, naming
// `who`, when it did not answer by then.
template <class T, class Start>
result<T> wait_one(Start start, std::chrono::steady_clock::time_point deadline, const std::string& who) {
  gather<T> g({1});
  start(g.slot(0, 0));
  auto a = g.take(1, deadline);
  if (!a[0][0]) return status{errc::timeout, who + " did not answer in time"};
  return std::move(*a[0][0]);
}

}  // namespace settee
