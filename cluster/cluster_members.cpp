#include "cluster/cluster_members.hpp"

#include <algorithm>

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

 private:
  std::string name_;
  rpc_node& rpc_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

std::vector<std::string> rpc_cluster_members::live() const {
  std::vector<std::string> out{self_->name()};
  if (!rpc_) return out;
  for (const std::string& n : members_.all_nodes())
    if (n != self_->name()) out.push_back(n);
  return out;
}

std::shared_ptr<cluster_member> rpc_cluster_members::get(const std::string& name) {
  if (name == self_->name()) return self_;
  if (!rpc_) return nullptr;
  auto all = members_.cluster_nodes();
  if (std::find(all.begin(), all.end(), name) == all.end()) return nullptr;
  return std::make_shared<remote_member>(name, *rpc_, timeout_);
}

}  // namespace settee
