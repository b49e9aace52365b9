// cluster_members over RPC: this node's member is its own services (local_member), another
// connected member's calls travel as the typed node protocol (rpc_node). On a single node (no
// RPC) the only member is this node.
// Thread-safety: as members.hpp.
#pragma once
#include <chrono>
#include <memory>

#include "actors/members.hpp"
#include "cluster/membership.hpp"
#include "cluster/rpc_node.hpp"

namespace settee {

class rpc_cluster_members final : public cluster_members {
 public:
  // `rpc` null: a single node.
  rpc_cluster_members(std::shared_ptr<cluster_member> self, const membership& members, rpc_node* rpc,
                      std::chrono::milliseconds timeout)
      : self_(std::move(self)), members_(members), rpc_(rpc), timeout_(timeout) {}
  std::vector<std::string> live() const override;
  std::shared_ptr<cluster_member> get(const std::string& name) override;

 private:
  std::shared_ptr<cluster_member> self_;
  const membership& members_;
  rpc_node* rpc_;
  std::chrono::milliseconds timeout_;
};

}  // namespace settee
