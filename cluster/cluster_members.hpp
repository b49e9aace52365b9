// cluster_members over RPC: this node's member is its own services (local_member), another
// connected member's calls travel as the typed node protocol (rpc_node). On a single node (no
// RPC) the only member is this node.
// Thread-safety: as members.hpp.
#pragma once
#include <chrono>
#include <memory>

#include "actors/members.hpp"
#include "cluster/membership.hpp"
#include "cluster/nodes_db.hpp"
#include "cluster/rpc_node.hpp"

namespace settee {

class rpc_cluster_members final : public cluster_members {
 public:
  // `rpc` and `nodes` null: a single node. `tasks`: where long pushes show (may be null).
  rpc_cluster_members(std::shared_ptr<cluster_member> self, coordinator& coord, const membership& members,
                      rpc_node* rpc, nodes_db* nodes, task_list* tasks, std::chrono::milliseconds timeout)
      : self_(std::move(self)),
        coord_(coord),
        members_(members),
        rpc_(rpc),
        nodes_(nodes),
        tasks_(tasks),
        timeout_(timeout) {}
  std::vector<std::string> live() const override { return members_.all_nodes(); }
  std::vector<std::string> all() const override { return members_.cluster_nodes(); }
  bool connected(const std::string& name) const override { return members_.is_connected(name); }
  std::shared_ptr<cluster_member> get(const std::string& name) override;
  bool clustered() const override { return rpc_ && nodes_; }
  status add_member(const std::string& name, const std::string& host, uint16_t rpc_port) override;
  status remove_member(const std::string& name) override;
  std::vector<copy_sync> sync(const db_meta& db, std::chrono::milliseconds timeout) override;

 private:
  std::shared_ptr<cluster_member> self_;
  coordinator& coord_;
  const membership& members_;
  rpc_node* rpc_;
  nodes_db* nodes_;
  task_list* tasks_;
  std::chrono::milliseconds timeout_;
};

}  // namespace settee
