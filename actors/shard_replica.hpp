// shard_replica: the actor that owns one shard replica's file and is its only writer, and the lane
// its writes wait in.
//
// Writes queue in the replica's write_lane; one transaction and one fsync serve every write queued
// when a commit begins (a group commit), bounded by docs and bytes (limits below). A write's
// callback is called only after its transaction committed with fsync. Commits are made by the
// replica actor (a commit_atom it is sent when writes wait and nobody commits), or in place by the
// thread that queued a write when nobody else was committing, no crowd of writes waited at the end
// of the last commit, and it may wait for the commit anyway (bridge::commit_here: an HTTP worker
// whose request waits for this copy): that thread commits one batch and hands what queued
// meanwhile to the actor. At most one commit runs at a time. The
// actor runs on CAF's scheduler (whose threads are sized for commits that wait on fsync:
// app/main.cpp), not on a thread of its own.
// Protocol of the actor: (write_atom, pending_write) queues a write (what a writer without the lane
// sends); (commit_atom) commits a batch; (shutdown_atom) waits for a commit in place to end,
// commits what is queued, and quits.
#pragma once
#include <caf/actor.hpp>

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/change_notifier.hpp"
#include "node/clock.hpp"
#include "storage/shard_store.hpp"

namespace settee {

struct pending_write;  // actors/messages.hpp

struct replica_limits {
  size_t batch_max_docs = 5000;
  size_t batch_max_bytes = 32u << 20;
};

// Thread-safe.
class write_lane {
 public:
  write_lane(std::shared_ptr<shard_store> store, const clock& clk, replica_limits limits, change_notifier* notifier,
             std::string notify_key);
  ~write_lane();
  write_lane(const write_lane&) = delete;
  write_lane& operator=(const write_lane&) = delete;

  // Queues `w`. `here`: when nobody is committing, this thread commits now (the batch holds `w`)
  // before returning. Otherwise the commit under way, or the actor after it, takes `w`. After
  // close(), `w` is dropped (its callback's owner reports the stop).
  void submit(pending_write w, bool here);
  // The actor's turn: commits a batch unless a commit in place is under way (it hands over).
  void commit_from_actor();
  // Stops taking writes, waits for a commit under way, commits what is queued, lets the store go.
  void close();
  void set_actor(caf::actor a);

 private:
  // Takes the next batch and commits it on this thread; `lock` is held on entry and on return,
  // leading_ set by the caller and cleared here.
  void lead(std::unique_lock<std::mutex>& lock);
  // Sends the actor a commit_atom (scheduled_ set); `lock` is held on entry, released on return.
  void hand_to_actor(std::unique_lock<std::mutex>& lock);
  std::vector<pending_write> take_batch_locked();
  void commit(std::vector<pending_write>& batch, shard_store& store);

  const clock& clk_;
  const replica_limits limits_;
  change_notifier* const notifier_;
  const std::string notify_key_;
  std::mutex mu_;
  std::condition_variable idle_;  // leading_ went false
  std::shared_ptr<shard_store> store_;
  caf::actor actor_;
  std::vector<pending_write> queue_;
  bool leading_ = false;    // a batch is being committed (by the actor or in place)
  bool scheduled_ = false;  // a commit_atom is on its way to the actor
  // Writes queued while the last batch was committed: under a crowd, commits stay the actor's,
  // whose wake-up lets more writes join each batch (in place, at c=32: PUT 0.94x, p99 3.7 -> 5.4 ms).
  bool crowded_ = false;
  bool closed_ = false;
};

// A replica: its actor, and its lane (null when writes reach the actor only as messages).
struct shard_writer {
  caf::actor actor;
  std::shared_ptr<write_lane> lane;
};

// After each commit the replica calls notifier->notify(notify_key) (when a notifier is given).
shard_writer spawn_shard_replica(caf::actor_system& sys, std::shared_ptr<shard_store> store, const clock& clk,
                                 replica_limits limits, change_notifier* notifier, std::string notify_key);

}  // namespace settee
