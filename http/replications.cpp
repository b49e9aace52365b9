#include "http/replications.hpp"

namespace settee {
namespace {
std::string job_id(const std::string& rep_id) {
  return "replication " + rep_id;
}
}  // namespace

replications::replications(job_runner& jobs, const clock& clk, std::string node)
    : jobs_(jobs), clk_(clk), node_(std::move(node)) {}

std::shared_ptr<replication_job> replications::find(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = running_.find(id);
  return it == running_.end() ? nullptr : it->second;
}

void replications::forget(const std::string& id, const std::shared_ptr<replication_job>& j) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = running_.find(id);
  if (it != running_.end() && it->second == j) running_.erase(it);
}

result<json> replications::replicate(rep_request r) {
  const std::string id = r.id();
  std::shared_ptr<replication_job> j;
  bool mine = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = running_.find(id);
    if (it != running_.end()) {
      j = it->second;
    } else {
      j = std::make_shared<replication_job>(std::move(r), clk_, node_);
      running_[id] = j;
      mine = true;
    }
  }
  if (mine && !jobs_.submit(job_id(id), replication_job::lane, j)) {
    forget(id, j);
    return status{errc::unavailable, "the node is stopping"};
  }
  if (j->request().continuous) return json{{"ok", true}, {"_local_id", id}};
  auto out = j->wait();
  if (mine) forget(id, j);
  return out;
}

std::shared_ptr<replication_job> replications::start_document(rep_request r, const std::string& db,
                                                              const std::string& doc_id,
                                                              replication_job::end_callback on_end,
                                                              std::string& taken_by) {
  const std::string id = r.id();
  auto j = std::make_shared<replication_job>(std::move(r), clk_, node_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = running_.find(id);
    if (it != running_.end()) {
      taken_by = it->second->doc_id();
      return nullptr;
    }
    running_[id] = j;
  }
  std::weak_ptr<replication_job> weak = j;
  j->set_document(db, doc_id, [this, id, weak, on_end](job_next::kind how, const result<json>& out) {
    if (auto self = weak.lock()) forget(id, self);
    if (on_end) on_end(how, out);
  });
  if (!jobs_.submit(job_id(id), replication_job::lane, j)) {
    forget(id, j);
    return nullptr;
  }
  return j;
}

status replications::cancel(const std::string& id) {
  auto j = find(id);
  if (!j) return {errc::not_found, "not found"};
  j->stop();
  jobs_.cancel(job_id(id), true);
  forget(id, j);
  return {};
}

std::vector<json> replications::jobs() const {
  std::vector<std::shared_ptr<replication_job>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, j] : running_) all.push_back(j);
  }
  std::vector<json> out;
  for (auto& j : all) out.push_back(j->info());
  return out;
}

std::optional<json> replications::job(const std::string& id) const {
  auto j = find(id);
  if (!j) return std::nullopt;
  return j->info();
}

void replications::stop_all() {
  std::vector<std::pair<std::string, std::shared_ptr<replication_job>>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.assign(running_.begin(), running_.end());
  }
  for (auto& [id, j] : all) j->stop();
  for (auto& [id, j] : all) jobs_.cancel(job_id(id), true);
}

}  // namespace settee
