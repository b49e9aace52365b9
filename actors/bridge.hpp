// bridge: the one way a plain thread (an HTTP worker) talks to actors: send the work, wait for
// every completion up to a deadline, get a status back. Thread-safety: call from any thread that
// is not an actor's (it blocks).
#pragma once
#include <caf/fwd.hpp>

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "node/error.hpp"
#include "storage/shard_store.hpp"

namespace settee {

using write_request = std::pair<caf::actor, std::shared_ptr<write_op>>;

// Sends every op to its shard replica concurrently and waits for all of them. On return each op's
// `st` and results are final, unless the deadline passed (errc::timeout) or an actor was gone.
status write_all(const std::vector<write_request>& requests, std::chrono::milliseconds timeout);

// Sends one op and waits for it. Ok only if the transport, the transaction and every document
// result are ok; otherwise the first failure (for callers that do not report per-document results).
status write_one(const caf::actor& replica, const std::shared_ptr<write_op>& op, std::chrono::milliseconds timeout);

}  // namespace settee
