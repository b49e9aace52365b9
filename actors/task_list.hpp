// task_list: the node's background work as GET /_active_tasks shows it (CouchDB's shape: one
// JSON object per task with `type`, `node`, `pid`, `started_on`, `updated_on` and the task's own
// progress fields). Thread-safe; tasks add themselves, update their fields and leave when done.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>

#include <string>

#include "node/clock.hpp"
#include "node/json.hpp"

namespace settee {

class task_list {
 public:
  // Registers `task` (its `pid` is set here) and returns its id.
  uint64_t add(json task);
  // Merges `fields` into task `id`'s object.
  void update(uint64_t id, const json& fields);
  void remove(uint64_t id);
  // Every task, oldest first.
  json all() const;

 private:
  mutable std::mutex mu_;
  uint64_t next_ = 1;
  std::map<uint64_t, json> tasks_;
};

// Where a reader lists its index updates: the node's task list, its clock and its name. Unset
// (null list or clock): updates are not listed.
struct task_place {
  task_list* list = nullptr;
  const clock* clk = nullptr;
  std::string node;
};

// One index update's row while it runs (CouchDB's `indexer`, `search_indexer`): `row` (its type
// and what it names) with changes_done, total_changes (from `from` to `to`), progress and
// started_on/updated_on added here; progress() moves it on with an estimate of the time left
// (eta_s). Removed when it goes.
class index_task {
 public:
  index_task(const task_place& place, json row, uint64_t from, uint64_t to);
  ~index_task();
  index_task(const index_task&) = delete;
  index_task& operator=(const index_task&) = delete;
  // The copy's seq indexed so far.
  void progress(uint64_t seq);

 private:
  const task_place& place_;
  uint64_t id_ = 0, from_, to_;
  int64_t started_ms_ = 0;
};

}  // namespace settee
