// task_list: the node's background work as GET /_active_tasks shows it (CouchDB's shape: one
// JSON object per task with `type`, `node`, `pid`, `started_on`, `updated_on` and the task's own
// progress fields). Thread-safe; tasks add themselves, update their fields and leave when done.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>

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

}  // namespace settee
