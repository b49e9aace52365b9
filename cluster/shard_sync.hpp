// shard_sync: internal replication of databases to the other nodes' copies (CouchDB's mem3_sync).
// sync_database pushes every range of one database to every connected node that has a copy;
// shard_syncer does that for every database on a timer, as a job of the node's runner.
// Thread-safety: sync_database blocks (call it from a plain thread or a job's step).
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "actors/coordinator.hpp"
#include "actors/jobs.hpp"
#include "actors/members.hpp"
#include "actors/task_list.hpp"
#include "cluster/membership.hpp"
#include "cluster/rpc_node.hpp"

namespace settee {

using sync_row = copy_sync;

// Records each copy's lag per peer in metrics::node().replication. A push of at least
// sync_task_min_changes changes shows in `tasks` (GET /_active_tasks) while it runs.
std::vector<sync_row> sync_database(coordinator& coord, rpc_node& rpc, const membership& members, const db_meta& db,
                                    std::chrono::milliseconds timeout, task_list* tasks = nullptr);
constexpr uint64_t sync_task_min_changes = 500;

// The periodic sweep: a job of the node's runner (lane "sync"): each step reloads `_dbs` (and
// `_nodes`) and pushes every database, then pauses `interval`; a stop ends it between databases.
class shard_syncer final : public job {
 public:
  // `nodes` (may be null): the `_nodes` database, reloaded and pushed on every sweep like `_dbs`.
  // Each push waits up to `push_timeout` for a copy.
  shard_syncer(coordinator& coord, rpc_node& rpc, const membership& members, std::chrono::milliseconds interval,
               std::chrono::milliseconds push_timeout, class nodes_db* nodes = nullptr, task_list* tasks = nullptr);
  job_next step(job_context& ctx) override;

  static constexpr const char* lane = "sync";

 private:
  void sweep(job_context& ctx);

  coordinator& coord_;
  rpc_node& rpc_;
  const membership& members_;
  std::chrono::milliseconds interval_;
  std::chrono::milliseconds push_timeout_;
  class nodes_db* nodes_;
  task_list* tasks_;
  bool first_ = true;  // the first sweep comes one interval after the start
};

}  // namespace settee
