// members: the node-level operations of the cluster's members, asked by name whether the member
// is this node or another. http/ asks a cluster_members for a member and calls it; this node's
// member runs the operation here (local_member), another node's asks it over the typed RPC
// (cluster/cluster_members.hpp). The operation is declared once, here; nothing above asks which
// node is which. Operations move here from the handlers' "this node or another" branches one by
// one (docs/architecture.md section 36).
// Thread-safety: a member may be called from any thread except the RPC loop's (calls block up to
// the call timeout).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "node/error.hpp"

namespace settee {

class resharder;

// The node-wide resharding state (PUT /_reshard/state).
struct reshard_state {
  bool running = true;
  std::string reason;  // "" when none
};

class cluster_member {
 public:
  virtual ~cluster_member() = default;
  virtual const std::string& name() const = 0;
  // This member's resharding state; setting it stops (or resumes) its jobs.
  virtual result<reshard_state> get_reshard_state() = 0;
  virtual status set_reshard_state(const reshard_state& s) = 0;
};

class cluster_members {
 public:
  virtual ~cluster_members() = default;
  // Every member of the cluster connected now, this node first (on a single node: this node).
  virtual std::vector<std::string> live() const = 0;
  // The member `name` (this node's own services, or another node's over RPC); null when it is not
  // a member.
  virtual std::shared_ptr<cluster_member> get(const std::string& name) = 0;
};

// This node as a member: the operations run here.
class local_member final : public cluster_member {
 public:
  local_member(std::string name, resharder* reshard) : name_(std::move(name)), reshard_(reshard) {}
  const std::string& name() const override { return name_; }
  result<reshard_state> get_reshard_state() override;
  status set_reshard_state(const reshard_state& s) override;

 private:
  std::string name_;
  resharder* reshard_;  // null: this node does not reshard
};

}  // namespace settee
