// view_jobs: the work on view indexes that runs as jobs of the node's runner (actors/jobs.hpp).
//
// view_build: the update of one design document's indexes over a database's copies on this node,
// as seed 003's "Indexers" asks for: one job (of the node's runner, lane "indexer") whose tasks,
// one per shard copy, run at once and start from one snapshot. Each step takes the parts asked for
// so far, reads every copy's seq first (the snapshot), then updates each index up to its copy's
// seq on the pool, answering a part's waiter as soon as its index got there. A part asked for
// meanwhile starts at once when its index is not updating in this step (a query asks its copies
// one after another), else it makes another step (a newer snapshot); with none left the job
// ends, and the next request starts a new one. A cancel (node stopping) ends the updates after their current batch;
// their waiters get `unavailable`.
// Thread-safety: add() from any thread; the runner calls step() and ended().
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/jobs.hpp"
#include "node/work_pool.hpp"

namespace settee {

// One index to bring up to date, and who waits for it.
struct view_build_part {
  std::string index;              // the index's identity (its file): one update of it per step
  std::function<uint64_t()> seq;  // its copy's seq now
  // Updates the index to at least `target`, stopping early (an error) when `stop()` says so.
  std::function<status(uint64_t target, const std::function<bool()>& stop)> update;
  std::function<void(status)> done;  // after the update (null: nobody waits, update=lazy)
};

class view_build final : public job {
 public:
  // `on_end` runs when it has left the runner.
  view_build(std::string id, work_pool& pool, std::function<void()> on_end)
      : id_(std::move(id)), pool_(pool), on_end_(std::move(on_end)) {}
  const std::string& id() const { return id_; }

  // Adds a part for the next step; false when the job has ended (start another).
  bool add(view_build_part part);
  job_next step(job_context& ctx) override;
  void ended(job_next::kind how, const std::string& reason) override;

  static constexpr const char* lane = "indexer";

 private:
  const std::string id_;
  work_pool& pool_;
  std::function<void()> on_end_;
  std::mutex mu_;
  std::condition_variable changed_;  // a part added, or an update ended (mu_)
  std::vector<view_build_part> pending_;
  bool closed_ = false;
};

// The build jobs of a reader (view_reader, search_reader): one per database and index at a time,
// joined while it runs, else a new one submitted to the runner's indexer lane.
class build_jobs {
 public:
  // `kind` names the jobs ("view_build", "search_build"); their updates run on `pool`.
  build_jobs(job_runner& jobs, work_pool& pool, std::string kind) : jobs_(jobs), pool_(pool), kind_(std::move(kind)) {}
  // Hands `part` to the job of `key` (a database's key and an index signature).
  void join(const std::string& key, view_build_part part);

 private:
  job_runner& jobs_;
  work_pool& pool_;
  const std::string kind_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<view_build>> builds_;
  uint64_t ids_ = 0;
};

// view_compaction: one index file of one copy compacted (POST /db/_compact/ddoc), in the runner's
// compaction lane beside database compactions; CouchDB's `view_compaction` row in _active_tasks.
class view_compaction final : public job {
 public:
  view_compaction(std::string copy, std::string ddoc_id, std::function<status()> compact, std::function<void()> on_end)
      : copy_(std::move(copy)),
        ddoc_id_(std::move(ddoc_id)),
        compact_(std::move(compact)),
        on_end_(std::move(on_end)) {}
  job_next step(job_context& ctx) override;
  json task() const override;
  void ended(job_next::kind how, const std::string& reason) override;

 private:
  std::string copy_, ddoc_id_;
  std::function<status()> compact_;
  std::function<void()> on_end_;
};

}  // namespace settee
