// bridge: the one way work reaches a shard replica actor and comes back. submit_write hands a write
// to the replica and calls back once, after the commit, from the replica's thread; the waiting
// forms below (for plain threads: HTTP workers, the pool) wait for those callbacks through a
// gather (gather.hpp), as the coordinator waits for copies. The RPC loop never waits: it turns the
// callback into a promise (cluster/rpc_node.cpp).
#pragma once
#include <caf/fwd.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "actors/shard_replica.hpp"
#include "node/error.hpp"
#include "storage/shard_store.hpp"

namespace settee {

// Hands `op` to `replica`; `done` runs exactly once: after the commit (op->st and results final),
// or, with op->st set, when the replica stopped without committing. `keep` lives until then (e.g.
// the shard handle that keeps the file open). Never blocks, but under a commit_here (below) when
// the replica is idle: then it commits on this thread and `done` has run when it returns.
void submit_write(const shard_writer& replica, std::shared_ptr<write_op> op, std::function<void()> done,
                  std::shared_ptr<void> keep = nullptr);

// While one lives, the next submit_write on this thread may commit in place (shard_replica.hpp):
// for a thread that waits for that commit next anyway (an HTTP worker's write to a copy of this
// node), which then spares the hand-over to the replica's thread and back (~2 thread wake-ups of
// a request's ~0.4 ms at c=1). Only the last write a request dispatches: it must not hold up
// the others (a commit in place is a few hundred microseconds).
class commit_here {
 public:
  commit_here();
  ~commit_here();
  commit_here(const commit_here&) = delete;
  commit_here& operator=(const commit_here&) = delete;
};

using write_request = std::pair<shard_writer, std::shared_ptr<write_op>>;

// Sends every op to its shard replica concurrently and waits for all of them. On return each op's
// `st` and results are final, unless the deadline passed (errc::timeout) or an actor was gone.
status write_all(const std::vector<write_request>& requests, std::chrono::milliseconds timeout);

// Sends one op and waits for it. Ok only if the transport, the transaction and every document
// result are ok; otherwise the first failure (for callers that do not report per-document results).
status write_one(const shard_writer& replica, const std::shared_ptr<write_op>& op, std::chrono::milliseconds timeout);

}  // namespace settee
