// What the resharder's API (resharder.cpp) and its job states (reshard_steps.cpp) share.
#pragma once
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "actors/bridge.hpp"
#include "actors/resharder.hpp"

namespace settee {

namespace reshard_internal {

// Changes per copy step (one commit on the target, one batch of a move). 2,000 made the writer's
// p99 2.3-2.9x its value before the job; 500 keeps it under 2x for a job ~1.5x longer
// (docs/BENCHMARKS.md "Shard split under writes").
constexpr size_t changes_per_step = 500;
// A move or a split of several copies waits this long for the other node to answer.
constexpr std::chrono::seconds max_transient{60};

// A job step that needs member `node`, which is not one (or this node runs alone).
inline status no_member(const std::string& node) {
  return {errc::unavailable, node + " is not a member this node can reach"};
}

// The job's waits, named once. A local write (a seal's drain) and one copy step's commit on a
// child or target (up to changes_per_step changes, or a whole move batch).
constexpr std::chrono::seconds local_write_timeout{60};
constexpr std::chrono::seconds copy_step_timeout{600};
// A follower looks for its leader's switch this often, and reloads the catalog at most this often.
constexpr std::chrono::milliseconds follower_look{100};
constexpr std::chrono::seconds catalog_reload_every{1};
// A state that waits for others (readers of a closed parent to let go, a move's source to learn
// the new map) returns later_status: its job pauses for later_look and runs the state again.
inline const status later_status{errc::unavailable, "waiting for others to let go of the shard"};
constexpr std::chrono::milliseconds later_look{20};
// Readers of a closed parent get this long to let go (woken again every second).
constexpr std::chrono::seconds readers_wait{10};
// A move's source refuses to retire its copy until it has the new map: asked for this long,
// the map pushed to it again every second.
constexpr std::chrono::seconds retire_wait{10};

// A follower whose leader has not switched the map yet: its job pauses and looks again.
inline const status not_yet_status{errc::unavailable, "waiting for the leader to switch the shard map"};
// How long a follower waits for its leader's switch before its job fails (a leader gone for good).
constexpr std::chrono::minutes max_leader_wait{10};

// A stop asked for while a job runs: not a failure, the job resumes from where it was.
inline const status halted_status{errc::unavailable, "stopped"};

inline bool terminal(const split_job& j) {
  return j.job_state == "completed" || j.job_state == "failed";
}

// Lets every write queued on `h` before a seal commit: one op through its writer. `record_seal`
// also records the seal in the header (a move's source), or its end.
inline status drain(const shard_handle& h, std::optional<bool> record_seal = std::nullopt) {
  auto op = std::make_shared<write_op>();
  op->what = write_op::kind::format;
  op->format_version = 0;
  op->seal = record_seal;
  return write_one(h.writer, op, local_write_timeout);
}

inline size_t state_index(const std::string& s) {
  auto& all = resharder::split_states();
  return static_cast<size_t>(std::find(all.begin(), all.end(), s) - all.begin());
}

}  // namespace reshard_internal

}  // namespace settee
