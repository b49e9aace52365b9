// resharder: this node's shard split and move jobs (CouchDB's `/_reshard`, spec sections 8 and
// 11.6; docs/architecture.md section 31).
//
// A split job splits this node's copy of one shard into two children (the halves of its range).
// When the shard has copies on other nodes, each has its own job following the leader's (the node
// the request reached): the leader seals every copy, has each run its last pass (split_seal) and
// switches them all in one `_dbs` edit; the followers wait for that switch. A move job (settee's, spec 11.6) runs on
// the node a copy moves to and pulls it from the node it leaves, keeping its uuid, seqs and time-seq. Their split_state
// goes through CouchDB's states:
//   initial_copy     every document of the parent goes to the child whose range holds its hash,
//                    keeping its seq (shard_store import): the children continue the parent's
//                    numbering; writes keep flowing to the parent;
//   topoff1/topoff2  the parent's changes since the last pass, again; build_indices: nothing (no views);
//   copy_local_docs  a pass that also copies _local documents, security, revs_limit, time-seq bins;
//   update_shardmap  the parent is sealed (writes answer shard_moved and the coordinator retries them
//                    on the new map), a last pass copies what was committed before the seal, and one
//                    `_dbs` write closes the parent (end_seq) and opens the children (start_seq);
//   wait_source_close, topoff3 (nothing can be left: checked), source_delete, completed.
// Jobs and the node-wide running/stopped state are `_local` documents of `_dbs` (never replicated).
// After a restart a job that had not switched the map copies on from initial_copy (the parent stayed
// the authority; each copy made here continues from the last seq it holds, so the child suffix never
// changes); one that had goes forward. A move's source seal is recorded in its header, so the source
// never takes writes the switch would leave behind; the job lifts it when it resumes.
// SETTEE_FAILPOINT=<state> makes the process exit as a job enters that state (kill tests), and
// "update_shardmap:sealed" once a move sealed its source, before the map switch.
// The jobs run in the node's job runner (actors/jobs.hpp), lane "reshard", one at a time: a step is
// one split_state; a transient failure of the other node (a move's source, a split's leader or
// follower) is retried with the runner's backoff for up to a minute. The job records and the
// node-wide state are kept by reshard_store; this class is the API (CouchDB's mem3_reshard) and its
// states (reshard_steps.cpp, CouchDB's mem3_reshard_job).
// Thread-safety: all methods may be called from any thread.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/coordinator.hpp"
#include "actors/jobs.hpp"
#include "actors/members.hpp"
#include "actors/reshard_job.hpp"
#include "actors/reshard_store.hpp"
#include "node/clock.hpp"
#include "node/json.hpp"

namespace settee {

class resharder {
 public:
  resharder(coordinator& coord, shard_registry& shards, job_runner& runner, job_store& store, const clock& clk,
            std::string node, std::string data_dir);
  ~resharder();

  // Run after a split switched the shard map in `_dbs` (pushes it to the other nodes). Set before start().
  void set_after_switch(std::function<void()> f) { after_switch_ = std::move(f); }
  // The cluster's members, whose copies moves and splits of several copies ask (null: a single
  // node: moves and such splits are not possible). Set before start().
  void set_members(cluster_members* members) { members_ = members; }
  // Reads the saved jobs and state, resumes what was running. Call once after the catalog loaded.
  status start();
  void stop();

  // {"state":"running"|"stopped","reason":...}
  json state() const;
  reshard_state run_state() const;
  status set_state(bool running, const std::string& reason);
  // Creates a split job for open shard `index` of `db`; errors as values (400/404/409).
  // `leader` empty: this node leads (a range with copies elsewhere gets one job per copy, the
  // others made by the caller with create(..., suffix, this node)); else a job following `leader`.
  result<split_job> create(const db_meta& db, size_t index, int64_t suffix = 0, const std::string& leader = "");
  // Creates a job moving the copy of open shard `index` on node `from` to this node.
  result<split_job> create_move(const db_meta& db, size_t index, const std::string& from);
  // create() or create_move() of the open shard a request resolved on another node names.
  result<split_job> create_requested(const new_job& j);

  // A move's source side (this node holds the copy that moves; called by the target's job).
  result<std::string> export_copy(const std::string& db, const std::string& range, uint64_t since, bool with_local);
  result<uint64_t> seal_copy(const std::string& db, const std::string& range, bool seal);
  status retire_copy(const std::string& db, const std::string& shard, uint64_t end_seq, bool remove);
  // A split of several copies (the leader asks each node): see reshard_peers::split_seal.
  result<std::pair<uint64_t, std::string>> split_seal(const std::string& db, const std::string& shard);
  std::vector<split_job> jobs() const;
  result<split_job> job(const std::string& id) const;
  status set_job_state(const std::string& id, bool running, const std::string& reason);
  status remove(const std::string& id);

  // One of the split_state names, in order.
  static const std::vector<std::string>& split_states();

  static constexpr const char* lane = "reshard";

 private:
  class reshard_task;
  // Job `id`'s next state, as a step of its task in the runner.
  // What a job's steps remember between them (not saved: a restart starts it afresh).
  struct step_memory {
    std::optional<mono::time_point> transient_since;  // the first of the transient failures in a row
    std::optional<mono::time_point> waiting_since;    // a follower began to wait for its leader's switch
    mono::time_point reloaded{};                      // a follower last reloaded the catalog
    std::optional<mono::time_point> later_since;      // a state began to wait for others (later_status)
    mono::time_point nudged{};                        // those others were last woken or told again
    job_context* ctx = nullptr;                       // the running step's (its task row shows the state entered)
  };
  job_next step(const std::string& id, job_context& ctx, step_memory& mem);
  // Submits every runnable job that is not in the runner; a job that may not run any more leaves it.
  void submit_runnable();
  void settle();
  json task_row(const split_job& j) const;
  status advance(split_job& j, step_memory& mem);  // one state
  status copy_pass(split_job& j, const db_meta& db, size_t index, bool with_local);
  status switch_map(split_job& j);
  // The leader's switch of a split of several copies; a follower's wait for it.
  status switch_copies(split_job& j);
  // A follower's look at whether its leader switched: not_yet (the job pauses and looks again).
  status await_switch(split_job& j, step_memory& mem);
  // Lifts the seal of every copy of a split of several copies (the leader, when it did not switch).
  void unseal_copies(const split_job& j);
  // A move's passes and switch: the source copy is on another node.
  status move_pass(split_job& j, const db_meta& db, size_t index, bool with_local);
  status switch_move(split_job& j, const db_meta& db, size_t index);
  status advance_move(split_job& j, const db_meta& db, std::optional<size_t> index, const std::string& state,
                      step_memory& mem);
  // The open shard `range` of `db` this node holds, as (meta, index).
  result<std::pair<db_meta, size_t>> own_copy(const std::string& db, const std::string& range) const;
  bool runnable_locked(const split_job& j) const;
  // Records a new job (history, state, saved) and submits it; a conflict (`conflict` + the
  // shard's name) when another job of that shard is not done.
  result<split_job> add_job(split_job j, const std::string& conflict);
  status save_locked(const split_job& j);
  void enter(split_job& j, const std::string& split_state);
  // SETTEE_FAILPOINT=<name>: saves the job and exits (70) here (kill tests).
  void failpoint(split_job& j, const std::string& name);
  void note(split_job& j, const std::string& type, const std::string& detail = "");
  // The children's paths and ranges for `j` on database `db` (its parent an open shard of it).
  std::vector<std::pair<shard_range, std::string>> children_of(const split_job& j) const;
  std::string path_of(const std::string& db, const std::string& shard_id) const;
  void drop_children(const split_job& j);
  // Wakes the feeds of `notify_key` and waits (at most 10 s) until nobody holds the shard at `path`.
  void wait_for_readers(const std::string& path, const std::string& notify_key);
  // A waiting state's clock (later_status): true once it has waited `limit`; `nudge` runs at the
  // first look and every second (wake the readers, push the map again).
  static bool waited_enough(step_memory& mem, std::chrono::milliseconds limit, const std::function<void()>& nudge);
  // Whether `_dbs` has closed `j`'s parent (the shard map switched).
  bool switched(const split_job& j) const;

  coordinator& coord_;
  shard_registry& shards_;
  job_runner& runner_;
  reshard_store store_;
  const clock& clk_;
  std::string node_;
  std::string data_dir_;
  mutable std::mutex mu_;
  std::condition_variable wake_;  // a follower's wait for its leader's switch
  std::map<std::string, split_job> jobs_;
  bool running_ = true;
  std::string reason_;
  bool stopping_ = false;
  std::function<void()> after_switch_;
  cluster_members* members_ = nullptr;
  // The member `node` (null when it is not one, or on a single node).
  std::shared_ptr<cluster_member> peer(const std::string& node) const;
};

}  // namespace settee
