// compactor: database compaction in the background (POST /db/_compact). A shard copy keeps the
// bodies of older revisions (GET ?rev=, open_revs) until it is compacted; compaction drops them and
// the attachment references they held (blobs go with their last reference). One copy at a time,
// on the compactor's own thread, in steps of `docs_per_step` documents: each step is a write op
// that the copy's replica commits between client writes, so writers wait for one step at most.
// Progress shows in the task list as CouchDB's `database_compaction` tasks.
#pragma once
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "actors/coordinator.hpp"
#include "actors/local_copy.hpp"
#include "actors/task_list.hpp"
#include "node/clock.hpp"

namespace settee {

class compactor {
 public:
  compactor(task_list& tasks, const clock& clk, std::string node_name, size_t docs_per_step);
  ~compactor();

  // Queues `copy` (this node's copy of shard `shard`, "shards/<range>/<db>.<suffix>", of database
  // `db`). A shard already queued or running is not queued twice.
  void enqueue(const std::string& db, const std::string& shard, std::shared_ptr<local_copy> copy);
  // Queues every copy of database `db` that this node holds.
  void enqueue_db(coordinator& coord, const db_meta& db);
  // Whether a copy of database `db` is queued or being compacted.
  bool running(const std::string& db) const;
  // Finishes the current step and stops; queued work is dropped (nothing is half done: each step
  // commits whole).
  void stop();

 private:
  struct job {
    std::string db, shard;
    std::shared_ptr<local_copy> copy;
  };
  void run();
  void compact(const job& j);

  task_list& tasks_;
  const clock& clk_;
  std::string node_;
  size_t docs_per_step_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<job> queue_;
  std::multiset<std::string> dbs_;  // queued or running, by database
  std::set<std::string> shards_;    // queued or running, by shard
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace settee
