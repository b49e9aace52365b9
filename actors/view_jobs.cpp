#include "actors/view_jobs.hpp"

#include <condition_variable>
#include <map>

#include "node/log.hpp"

namespace settee {

bool view_build::add(view_build_part part) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return false;
  pending_.push_back(std::move(part));
  return true;
}

job_next view_build::step(job_context& ctx) {
  std::vector<view_build_part> parts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.empty()) {
      closed_ = true;
      return job_next::done();
    }
    parts.swap(pending_);
  }
  // One update per index, for all of its waiters; the snapshot (every copy's seq) read before any
  // update starts, so that all of them end on it.
  std::map<std::string, std::vector<size_t>> by_index;
  for (size_t i = 0; i < parts.size(); ++i) by_index[parts[i].index].push_back(i);
  std::vector<std::pair<uint64_t, const std::vector<size_t>*>> tasks;
  for (const auto& [index, waiting] : by_index) tasks.emplace_back(parts[waiting.front()].seq(), &waiting);
  std::mutex mu;
  std::condition_variable cv;
  size_t left = tasks.size();
  const std::function<bool()> stop = [&ctx] { return ctx.cancelled(); };
  for (const auto& [target, waiting] : tasks) {
    pool_.submit([&, target = target, waiting = waiting] {
      const status st = parts[waiting->front()].update(target, stop);
      for (size_t i : *waiting)
        if (parts[i].done) parts[i].done(st);
      std::lock_guard<std::mutex> lock(mu);
      if (--left == 0) cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return left == 0; });
  lock.unlock();
  std::lock_guard<std::mutex> own(mu_);
  if (!pending_.empty()) return job_next::more();  // asked for meanwhile: a newer snapshot
  closed_ = true;
  return job_next::done();
}

void view_build::ended(job_next::kind how, const std::string& reason) {
  std::vector<view_build_part> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    left.swap(pending_);
  }
  // Cancelled (the node stops) or refused before a step took them.
  const status st{errc::unavailable, how == job_next::kind::cancelled ? "the node is stopping" : reason};
  for (auto& p : left)
    if (p.done) p.done(st);
  if (on_end_) on_end_();
}

job_next view_compaction::step(job_context& ctx) {
  (void)ctx;
  if (status st = compact_(); !st) {
    log::warning("compaction of the index of " + ddoc_id_ + " on " + copy_ + " failed: " + st.reason);
    return job_next::fail(st.reason);
  }
  return job_next::done();
}

json view_compaction::task() const {
  return json{{"type", "view_compaction"}, {"database", copy_}, {"design_document", ddoc_id_}};
}

void view_compaction::ended(job_next::kind how, const std::string& reason) {
  (void)how;
  (void)reason;
  if (on_end_) on_end_();
}

}  // namespace settee
