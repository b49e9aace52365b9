#include "replicator/replications.hpp"
#include "node/check.hpp"

#include <algorithm>
#include <tuple>

namespace settee {
namespace {
std::string job_id(const std::string& rep_id) {
  return "replication " + rep_id;
}
}  // namespace

replications::replications(job_runner& jobs, const clock& clk, std::string node, std::string spool_dir,
                           scheduler_limits lim, std::shared_ptr<const remote_rules> rules)
    : jobs_(jobs),
      clk_(clk),
      node_(std::move(node)),
      spool_dir_(std::move(spool_dir)),
      lim_(lim),
      rules_(rules ? std::move(rules) : std::make_shared<const remote_rules>()),
      batch_threads_(lim.worker_threads ? std::make_shared<work_pool>(lim.worker_threads) : nullptr),
      watches_([this](const std::string& id) { jobs_.wake(job_id(id)); }) {
  lim_.max_jobs = std::max<size_t>(1, lim_.max_jobs);
}

std::shared_ptr<replication_job> replications::find(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = known_.find(id);
  return it == known_.end() ? nullptr : it->second.job;
}

std::shared_ptr<replication_job> replications::document_job(const std::string& id, const std::string& doc_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = known_.find(id);
  return it == known_.end() || it->second.doc_id != doc_id ? nullptr : it->second.job;
}

std::shared_ptr<replication_job> replications::make_job_locked(const std::string& id, rep_request r, slot& s) {
  const rep_endpoint source = r.source;
  const std::chrono::milliseconds timeout(r.connection_timeout_ms);
  auto j = std::make_shared<replication_job>(std::move(r), clk_, node_, spool_dir_, batch_threads_);
  j->set_watch([this, id, source, timeout](const std::string& rest, const json& body) {
    watches_.watch(id, source, timeout, rest, body);
  });
  if (!s.doc_id.empty()) {
    std::weak_ptr<replication_job> weak = j;
    auto on_end = s.on_end;
    j->set_document(s.doc_db, s.doc_id, [this, id, weak, on_end](job_next::kind how, const result<json>& out) {
      auto self = weak.lock();
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = known_.find(id);
        if (it != known_.end() && it->second.job == self && it->second.rotating) return;  // it waits again
      }
      if (self) forget(id, self);
      if (on_end) on_end(how, out);
    });
  }
  s.job = j;
  return j;
}

void replications::set_schedule(std::chrono::milliseconds interval, size_t max_churn) {
  std::lock_guard<std::mutex> lock(mu_);
  lim_.interval = interval;
  lim_.max_churn = max_churn;
}

void replications::admit_locked(const std::string& id) {
  pending_.push_back(id);
  promote_locked();
}

void replications::promote_locked() {
  while (active_ < lim_.max_jobs && !pending_.empty()) {
    const std::string id = pending_.front();
    pending_.pop_front();
    auto it = known_.find(id);
    if (it == known_.end() || it->second.active) continue;
    if (!jobs_.submit(job_id(id), replication_job::lane, it->second.job)) {  // the node is stopping
      it->second.job->abandon("the node is stopping");
      continue;
    }
    it->second.active = true;
    it->second.since_ms = clk_.now_ms();
    ++active_;
  }
  // The scheduler's limit holds, and active_ counts the jobs it admitted.
  SETTEE_CHECK(active_ <= lim_.max_jobs &&
               active_ == static_cast<size_t>(std::count_if(known_.begin(), known_.end(),
                                                            [](const auto& k) { return k.second.active; })));
}

void replications::forget(const std::string& id, const std::shared_ptr<replication_job>& j) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = known_.find(id);
  if (it == known_.end() || it->second.job != j) return;
  watches_.end(id);
  if (it->second.active) {
    SETTEE_CHECK(active_ > 0);
    --active_;
  }
  known_.erase(it);
  pending_.erase(std::remove(pending_.begin(), pending_.end(), id), pending_.end());
  promote_locked();
}

result<json> replications::replicate(rep_request r) {
  const std::string id = r.id();
  const bool continuous = r.continuous;
  std::shared_ptr<replication_job> j;
  bool mine = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = known_.find(id);
    if (it != known_.end()) {
      j = it->second.job;
    } else {
      j = make_job_locked(id, std::move(r), known_[id]);
      admit_locked(id);
      mine = true;
    }
  }
  if (continuous) return json{{"ok", true}, {"_local_id", id}};
  auto out = j->wait();
  if (mine) forget(id, j);
  return out;
}

std::shared_ptr<replication_job> replications::start_document(rep_request r, const std::string& db,
                                                              const std::string& doc_id,
                                                              replication_job::end_callback on_end,
                                                              std::string& taken_by) {
  const std::string id = r.id();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = known_.find(id);
  if (it != known_.end()) {
    taken_by = it->second.doc_id;
    return nullptr;
  }
  slot& s = known_[id];
  s.doc_db = db;
  s.doc_id = doc_id;
  s.on_end = std::move(on_end);
  auto j = make_job_locked(id, std::move(r), s);
  admit_locked(id);
  return j;
}

status replications::cancel(const std::string& id) {
  std::shared_ptr<replication_job> j;
  bool active = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = known_.find(id);
    if (it == known_.end()) return {errc::not_found, "not found"};
    j = it->second.job;
    active = it->second.active;
    pending_.erase(std::remove(pending_.begin(), pending_.end(), id), pending_.end());  // never promoted now
  }
  j->stop();
  if (active)
    jobs_.cancel(job_id(id), true);
  else
    j->ended(job_next::kind::cancelled, "cancelled");  // a pending one: its waiters learn it
  forget(id, j);
  return {};
}

namespace {

// couch_replicator_scheduler's interval timer, as a job of the runner: it looks every second and
// rotate() acts once per interval of the node's clock.
class scheduler_tick final : public job {
 public:
  explicit scheduler_tick(replications& reps) : reps_(reps) {}
  job_next step(job_context&) override {
    reps_.rotate();
    return job_next::pause(std::chrono::seconds(1));
  }

 private:
  replications& reps_;
};

}  // namespace

bool replications::start_scheduler() {
  return jobs_.submit(scheduler_job_id, control_lane, std::make_shared<scheduler_tick>(*this));
}

void replications::rotate() {
  std::vector<std::pair<std::string, std::shared_ptr<replication_job>>> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = clk_.now_ms();
    if (pending_.empty() || now - last_rotation_ms_ < lim_.interval.count()) return;
    last_rotation_ms_ = now;
    // Crashing ones first (they only wait for their backoff), then continuous ones, longest running first.
    std::vector<std::tuple<bool, int64_t, std::string>> running;
    for (auto& [id, s] : known_) {
      if (!s.active || s.rotating) continue;
      const bool crashing = s.job->state() == "crashing";
      if (crashing || s.job->request().continuous) running.emplace_back(!crashing, s.since_ms, id);
    }
    std::sort(running.begin(), running.end());
    const size_t n = std::min({lim_.max_churn, pending_.size(), running.size()});
    for (size_t i = 0; i < n; ++i) {
      const std::string& id = std::get<2>(running[i]);
      slot& s = known_[id];
      s.rotating = true;
      out.emplace_back(id, s.job);
    }
  }
  for (auto& [id, j] : out) {  // each stops after its step and keeps its checkpoint
    j->stop();
    jobs_.cancel(job_id(id), true);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, j] : out) {
    auto it = known_.find(id);
    if (it == known_.end() || it->second.job != j) continue;
    slot& s = it->second;
    SETTEE_CHECK(s.active && active_ > 0);  // only admitted jobs rotate out
    s.active = false;
    s.rotating = false;
    --active_;
    make_job_locked(id, j->request(), s)->carry_on_from(*j);  // a fresh session from the checkpoints, in its turn
    pending_.push_back(id);
  }
  promote_locked();
}

std::vector<json> replications::jobs() const {
  std::vector<std::shared_ptr<replication_job>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, s] : known_) all.push_back(s.job);
  }
  std::vector<json> out;
  for (auto& j : all) out.push_back(j->info());
  return out;
}

std::map<std::string, size_t> replications::states() const {
  std::vector<std::shared_ptr<replication_job>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, s] : known_) all.push_back(s.job);
  }
  std::map<std::string, size_t> out{{"running", 0}, {"pending", 0}, {"crashing", 0}};
  for (auto& j : all) ++out[j->state()];
  return out;
}

std::optional<json> replications::job(const std::string& id) const {
  auto j = find(id);
  if (!j) return std::nullopt;
  return j->info();
}

void replications::stop_all() {
  watches_.stop_all();
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, s] : known_) ids.push_back(id);
  }
  for (const std::string& id : ids) (void)cancel(id);
}

}  // namespace settee
