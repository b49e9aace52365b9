#include "cluster/cluster_members.hpp"

#include <algorithm>

#include "cluster/shard_sync.hpp"

namespace settee {

namespace {

// Another node as a member: each call is one typed RPC.
class remote_member final : public cluster_member {
 public:
  remote_member(std::string name, rpc_node& rpc, std::chrono::milliseconds timeout)
      : name_(std::move(name)), rpc_(rpc), timeout_(timeout) {}
  const std::string& name() const override { return name_; }
  result<reshard_state> get_reshard_state() override { return rpc_.reshard_state_of(name_, std::nullopt, timeout_); }
  status set_reshard_state(const reshard_state& s) override {
    auto r = rpc_.reshard_state_of(name_, s, timeout_);
    return r ? status{} : r.error();
  }
  result<node_status> figures() override { return rpc_.status_of_node(name_, timeout_); }
  result<std::vector<std::string>> active_tasks() override {
    if (!rpc_.runs_tasks(name_)) return std::vector<std::string>{};
    return rpc_.active_tasks(name_, timeout_);
  }
  status compact(const std::string& db) override {
    if (!rpc_.runs_tasks(name_))
      return {errc::not_implemented, name_ + " runs a release that cannot compact on request"};
    return rpc_.compact_db(name_, db, timeout_);
  }
  bool stores_attachments() const override { return rpc_.stores_attachments(name_); }

 private:
  std::string name_;
  rpc_node& rpc_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

std::shared_ptr<cluster_member> rpc_cluster_members::get(const std::string& name) {
  if (name == self_->name()) return self_;
  if (!rpc_) return nullptr;
  auto all = members_.cluster_nodes();
  if (std::find(all.begin(), all.end(), name) == all.end()) return nullptr;
  return std::make_shared<remote_member>(name, *rpc_, timeout_);
}

namespace {

status not_clustered() {
  return {errc::bad_request, "this node is not clustered: set [cluster] rpc_port"};
}

}  // namespace

status rpc_cluster_members::add_member(const std::string& name, const std::string& host, uint16_t rpc_port) {
  if (!clustered()) return not_clustered();
  return nodes_->add({name, host, rpc_port});
}

status rpc_cluster_members::remove_member(const std::string& name) {
  if (!clustered()) return not_clustered();
  return nodes_->remove(name);
}

std::vector<copy_sync> rpc_cluster_members::sync(const db_meta& db, std::chrono::milliseconds timeout) {
  if (!rpc_) return {};
  return sync_database(coord_, *rpc_, members_, db, timeout, tasks_);
}

}  // namespace settee
