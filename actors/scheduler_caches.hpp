// scheduler_caches: empties the malloc caches of the actor system's scheduler threads, which run
// every shard's commits and so hold most of the cached chunks an idle node keeps (node/heap.hpp).
// Thread-safety: call from a thread outside the scheduler, when the node is idle.
#pragma once
#include <caf/fwd.hpp>

#include <chrono>
#include <cstddef>

namespace settee {

// Runs release_thread_cache() on up to `threads` scheduler threads (the scheduler's size): one job
// each, every job waiting up to `wait` for the others to start so that they hold distinct threads
// (a thread busy with a commit is missed). Returns when the jobs are done, or after 2 * `wait`.
void release_scheduler_caches(caf::actor_system& sys, size_t threads, std::chrono::milliseconds wait);

}  // namespace settee
