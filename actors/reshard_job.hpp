// reshard_job: one shard split or move job as data (CouchDB's mem3_reshard job record): what it
// is, where it stands, its history; how `/_reshard/jobs` shows it and how it is saved. The
// resharder (resharder.hpp) runs jobs; members (members.hpp) list and create them on any node.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "node/json.hpp"

namespace settee {

// The node-wide resharding state (PUT /_reshard/state).
struct reshard_state {
  bool running = true;
  std::string reason;  // "" when none
};

// A job asked of a member by another node (POST /_reshard/jobs reached that node): a split of its
// copy of open shard `shard` of `db` (following `leader`, with the children's `suffix`; no leader:
// it leads), or a move of the copy on `source` to it.
struct new_job {
  std::string type = "split";
  std::string db, shard;  // shard: "<range>.<suffix>"
  int64_t suffix = 0;
  std::string leader;
  std::string source;
};

// The split_states in order (CouchDB's).
const std::vector<std::string>& split_state_names();

struct split_job {
  struct event {
    int64_t time = 0;
    std::string type;    // a job_state or split_state, or "restart"
    std::string detail;  // empty: null
  };
  std::string id;
  std::string db;
  int64_t created = 0;         // the database incarnation
  std::string type = "split";  // split, or move (spec 11.6)
  std::string source;          // the shard id "<range>.<suffix>" (a split's parent)
  std::string from_node;       // a move: the node whose copy moves here
  uint64_t end_seq = 0;        // a move: the source copy's seq when the map switched
  // A split of a range with copies on several nodes: the node that switches the map for all of them
  // (empty: a range whose copies are all on this node) and, on that node, every copy's node.
  std::string leader;
  std::vector<std::string> copies;
  int64_t child_suffix = 0;         // the children's id suffix
  std::string job_state = "new";    // new running stopped failed completed
  std::string split_state = "new";  // see above
  std::string reason;               // state_info.reason
  bool stopped_by_user = false;     // PUT .../state stopped (the node-wide state is separate)
  int64_t start_time = 0, update_time = 0;
  std::vector<event> history;
  uint64_t copied_to = 0;  // parent seq the children hold (progress)
  uint64_t total = 0;      // the parent's update_seq when the copy began (progress)

  // The child shard ids (a move: the shard's own).
  std::vector<std::string> targets() const;
  bool move() const { return type == "move"; }
  // As `GET /_reshard/jobs/<id>` shows it (`node` names the node that has it), and back (what a
  // release 0.3 node answers about its jobs; fields the view lacks stay empty): to_api of the job
  // read back is the view it was read from.
  json to_api(const std::string& node) const;
  static std::optional<split_job> from_api(const json& j);
  // As the job is saved (a `_local` document of `_dbs`).
  json to_doc() const;
  static std::optional<split_job> from_doc(const json& j);
};

}  // namespace settee
