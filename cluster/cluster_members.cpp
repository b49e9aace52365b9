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
  result<config_reply> configure(const config_call& call) override {
    if (!rpc_.has_feature(name_, config_feature))
      return status{errc::not_implemented,
                    name_ + " runs a release whose configuration is read and changed on it only"};
    return rpc_.configure(name_, call, timeout_);
  }
  result<std::vector<std::string>> active_tasks() override {
    if (!rpc_.runs_tasks(name_)) return std::vector<std::string>{};
    return rpc_.active_tasks(name_, timeout_);
  }
  status compact(const std::string& db) override {
    if (!rpc_.runs_tasks(name_))
      return {errc::not_implemented, name_ + " runs a release that cannot compact on request"};
    return rpc_.compact_db(name_, db, timeout_);
  }
  status view_cleanup(const std::string& db, const std::vector<std::string>& keep) override {
    if (!rpc_.has_feature(name_, views_feature))
      return {errc::not_implemented, name_ + " runs a release without views"};
    return rpc_.view_cleanup(name_, db, keep, timeout_);
  }
  status view_compact(const std::string& db, const std::string& ddoc_id, const std::string& rev,
                      const std::string& ddoc) override {
    if (!rpc_.has_feature(name_, views_feature))
      return {errc::not_implemented, name_ + " runs a release without views"};
    return rpc_.view_compact(name_, db, ddoc_id, rev, ddoc, timeout_);
  }
  bool stores_attachments() const override { return rpc_.stores_attachments(name_); }
  bool runs_javascript() const override { return rpc_.has_feature(name_, javascript_feature); }
  bool places_partitions() const override { return rpc_.has_feature(name_, partitions_feature); }
  bool purges() const override { return rpc_.has_feature(name_, purges_feature); }
  bool reshards() const override { return rpc_.has_feature(name_, reshard_feature); }
  result<std::vector<split_job>> reshard_jobs() override;
  status set_reshard_job_state(const std::string& id, const reshard_state& s) override;
  status remove_reshard_job(const std::string& id) override;
  result<split_job> create_reshard_job(const new_job& j) override;
  result<std::string> export_copy(const std::string& db, const std::string& range, uint64_t since,
                                  bool with_local) override {
    return rpc_.export_changes(name_, db, range, since, with_local, timeout_);
  }
  result<uint64_t> seal_copy(const std::string& db, const std::string& range, bool seal) override {
    return rpc_.seal_copy(name_, db, range, seal, timeout_);
  }
  status retire_copy(const std::string& db, const std::string& shard, uint64_t end_seq, bool remove) override {
    // Waiting for a copy's readers takes up to 10 s there: a minute, whatever the call timeout.
    return rpc_.retire_copy(name_, db, shard, end_seq, remove, std::max(timeout_, std::chrono::milliseconds(60000)));
  }
  result<std::pair<uint64_t, std::string>> split_seal(const std::string& db, const std::string& shard) override {
    return rpc_.split_seal(name_, db, shard, timeout_);
  }

 private:
  // A release 0.3 member: its jobs through reshardRequest and createJob, JSON as its
  // /_reshard/jobs shows them.
  bool typed() const { return rpc_.has_feature(name_, members_feature); }
  result<json> legacy(const std::string& method, const std::string& id, bool state, const json& body);

  std::string name_;
  rpc_node& rpc_;
  std::chrono::milliseconds timeout_;
};

result<json> remote_member::legacy(const std::string& method, const std::string& id, bool state, const json& body) {
  if (!rpc_.has_feature(name_, reshard_feature))
    return status{errc::not_implemented, name_ + " runs a release without resharding"};
  auto r = rpc_.reshard_request(name_, method, id, state, body.dump(), timeout_);
  if (!r) return r.error();
  auto parsed = parse_json(r->second);
  if (!parsed) return status{errc::unavailable, name_ + " answered a reshard request with something unreadable"};
  if (r->first >= 300) {
    const json& reason = member(*parsed, "reason");
    return status{r->first == 404 ? errc::not_found : errc::unavailable,
                  reason.is_string() ? reason.get<std::string>() : r->second};
  }
  return std::move(*parsed);
}

result<std::vector<split_job>> remote_member::reshard_jobs() {
  if (typed()) return rpc_.reshard_jobs(name_, timeout_);
  auto list = legacy("GET", "", false, json::object());
  if (!list) return list.error();
  std::vector<split_job> out;
  if (list->is_array())
    for (const json& j : *list)
      if (auto job = split_job::from_api(j)) out.push_back(std::move(*job));
  return out;
}

status remote_member::set_reshard_job_state(const std::string& id, const reshard_state& s) {
  if (typed()) return rpc_.edit_reshard_job(name_, id, false, s, timeout_);
  auto r = legacy("PUT", id, true, json{{"state", s.running ? "running" : "stopped"}, {"reason", s.reason}});
  return r ? status{} : r.error();
}

status remote_member::remove_reshard_job(const std::string& id) {
  if (typed()) return rpc_.edit_reshard_job(name_, id, true, {}, timeout_);
  auto r = legacy("DELETE", id, false, json::object());
  return r ? status{} : r.error();
}

result<split_job> remote_member::create_reshard_job(const new_job& j) {
  if (typed()) return rpc_.new_reshard_job(name_, j, timeout_);
  json body{{"type", j.type}, {"db", j.db}, {"shard", j.shard}};
  if (j.type == "split") {
    body["suffix"] = j.suffix;
    body["leader"] = j.leader;
  } else {
    body["source"] = j.source;
  }
  auto made = rpc_.create_job(name_, body.dump(), timeout_);
  if (!made) return made.error();
  auto parsed = parse_json(*made);
  auto job = parsed ? split_job::from_api(*parsed) : std::nullopt;
  if (!job) return status{errc::unavailable, name_ + " answered a job's creation with something unreadable"};
  return std::move(*job);
}

}  // namespace

std::shared_ptr<cluster_member> rpc_cluster_members::get(const std::string& name) {
  if (name == self_->name()) return self_;
  if (!rpc_) return nullptr;
  if (!members_.is_member(name)) return nullptr;
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
