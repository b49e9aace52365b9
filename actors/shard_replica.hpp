// shard_replica: the actor that owns one shard replica's file and is its only writer.
//
// Protocol: (write_atom, pending_write): the op's results are filled in and its callback called only
// after the op's transaction committed with fsync. (shutdown_atom) makes it finish what is queued
// and quit.
//
// Group commit: writes are queued, and a commit_atom the actor sends itself marks the end of
// the current burst. Every write already in the mailbox is ahead of it, so one transaction and one
// fsync serve them all. A batch is bounded by docs and bytes (limits below).
// A transaction begins and commits inside one handler, so the actor runs on CAF's scheduler (whose
// threads are sized for commits that wait on fsync: app/main.cpp), not on a thread of its own.
#pragma once
#include <caf/fwd.hpp>

#include <cstddef>
#include <memory>

#include "actors/change_notifier.hpp"
#include "node/clock.hpp"
#include "storage/shard_store.hpp"

namespace settee {

struct replica_limits {
  size_t batch_max_docs = 5000;
  size_t batch_max_bytes = 32u << 20;
};

// After each commit the replica calls notifier->notify(notify_key) (when a notifier is given).
caf::actor spawn_shard_replica(caf::actor_system& sys, std::shared_ptr<shard_store> store, const clock& clk,
                               replica_limits limits, change_notifier* notifier, std::string notify_key);

}  // namespace settee
