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

#include "node/error.hpp"
#include "storage/shard_store.hpp"

namespace settee {

// Sends `op` to `replica`; `done` runs exactly once: after the commit (op->st and results final),
// or, with op->st set, when the replica stopped without committing. `keep` lives until then (e.g.
// the shard handle that keeps the file open). Never blocks.
void submit_write(const caf::actor& replica, std::shared_ptr<write_op> op, std::function<void()> done,
                  std::shared_ptr<void> keep = nullptr);

using write_request = std::pair<caf::actor, std::shared_ptr<write_op>>;

// Sends every op to its shard replica concurrently and waits for all of them. On return each op's
// `st` and results are final, unless the deadline passed (errc::timeout) or an actor was gone.
status write_all(const std::vector<write_request>& requests, std::chrono::milliseconds timeout);

// Sends one op and waits for it. Ok only if the transport, the transaction and every document
// result are ok; otherwise the first failure (for callers that do not report per-document results).
status write_one(const caf::actor& replica, const std::shared_ptr<write_op>& op, std::chrono::milliseconds timeout);

}  // namespace settee
