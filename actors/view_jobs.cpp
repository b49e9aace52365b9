#include "actors/view_jobs.hpp"

#include <algorithm>
#include <list>
#include <map>
#include <set>

#include "node/log.hpp"

namespace settee {

bool view_build::add(view_build_part part) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return false;
  pending_.push_back(std::move(part));
  changed_.notify_all();  // a step under way starts it at once when its index is not updating
  return true;
}

job_next view_build::step(job_context& ctx) {
  // This step's parts (stable: the updates refer to them), the indexes it updates, and how many
  // of those updates run. Each index is updated once, for all of its waiters, to the seq its copy
  // had when the update started; a part that arrives while the step runs starts at once when its
  // index is not being updated (a query's copies are asked one after another: none waits for
  // another copy's whole build), else it waits for the next step (a newer snapshot).
  std::list<view_build_part> taken;
  std::set<std::string> started;
  size_t left = 0;
  const std::function<bool()> stop = [&ctx] { return ctx.cancelled(); };
  std::unique_lock<std::mutex> lock(mu_);
  if (pending_.empty()) {
    closed_ = true;
    return job_next::done();
  }
  auto startable = [&] {
    return std::any_of(pending_.begin(), pending_.end(),
                       [&](const view_build_part& p) { return !started.count(p.index); });
  };
  for (;;) {
    std::map<std::string, std::vector<view_build_part*>> fresh;
    std::vector<view_build_part> later;
    for (view_build_part& p : pending_) {
      if (started.count(p.index)) {
        later.push_back(std::move(p));
        continue;
      }
      taken.push_back(std::move(p));
      fresh[taken.back().index].push_back(&taken.back());
    }
    pending_ = std::move(later);
    // Every index's seq first, then the updates: the indexes started together share one snapshot.
    std::map<std::string, uint64_t> targets;
    for (auto& [index, waiting] : fresh) targets[index] = waiting.front()->seq();
    for (auto& [index, waiting] : fresh) {
      started.insert(index);
      const uint64_t target = targets[index];
      ++left;
      const bool queued = pool_.submit([this, &left, &stop, target, waiting = waiting] {
        const status st = waiting.front()->update(target, stop);
        for (view_build_part* p : waiting)
          if (p->done) p->done(st);
        std::lock_guard<std::mutex> l(mu_);
        --left;
        changed_.notify_all();
      });
      if (!queued) {  // the pool stopped (the node is stopping): nobody will update it
        --left;
        lock.unlock();
        for (view_build_part* p : waiting)
          if (p->done) p->done(status{errc::unavailable, "the node is stopping"});
        lock.lock();
      }
    }
    changed_.wait(lock, [&] { return left == 0 || startable(); });
    if (left == 0 && !startable()) break;
  }
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

void build_jobs::join(const std::string& key, view_build_part part) {
  std::shared_ptr<view_build> job;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = builds_.find(key);
    if (it != builds_.end() && it->second->add(part)) return;
    const std::string id = kind_ + "/" + key + "/" + std::to_string(++ids_);
    job = std::make_shared<view_build>(id, pool_, [this, key, id] {
      std::lock_guard<std::mutex> l(mu_);
      auto b = builds_.find(key);
      if (b != builds_.end() && b->second->id() == id) builds_.erase(b);
    });
    job->add(std::move(part));
    builds_[key] = job;
  }
  if (!jobs_.submit(job->id(), view_build::lane, job)) job->ended(job_next::kind::cancelled, "");
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
