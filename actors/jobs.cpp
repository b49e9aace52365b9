#include "actors/jobs.hpp"

#include <cstdlib>
#include <utility>

#include "node/check.hpp"
#include "node/log.hpp"

namespace settee {

namespace {
// How long an idle worker sleeps before it looks again without being told (a safety net).
constexpr std::chrono::hours idle_recheck{1};
}  // namespace

bool job_context::cancelled() const {
  return cancel_ && cancel_->load();
}

void job_context::progress(const json& fields) {
  if (!runner_ || !task_) return;
  json f = fields;
  f["updated_on"] = runner_->clk_.now_s();
  runner_->tasks_.update(task_, f);
}

void job_context::drop_task() {
  if (runner_ && task_) runner_->tasks_.remove(std::exchange(task_, 0));
}

void job_context::failpoint(const std::string& name, const std::function<void()>& save) {
  const char* fail = std::getenv("SETTEE_FAILPOINT");
  if (!fail || name != fail) return;
  if (save) save();
  log::error("SETTEE_FAILPOINT=" + name + ": exiting now");
  std::_Exit(70);
}

job_runner::job_runner(task_list& tasks, const clock& clk, std::string node, job_options opts)
    : tasks_(tasks), clk_(clk), node_(std::move(node)), opts_(std::move(opts)) {
  size_t slots = 0;
  for (auto& [lane, n] : opts_.lanes) slots += n;
  for (size_t i = 0; i < slots; ++i) workers_.emplace_back([this] { work(); });
}

job_runner::~job_runner() {
  stop();
}

bool job_runner::submit(const std::string& id, const std::string& lane, std::shared_ptr<job> j) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_ || !opts_.lanes.count(lane) || jobs_.count(id)) return false;
  entry e;
  e.lane = lane;
  e.j = std::move(j);
  jobs_.emplace(id, std::move(e));
  cv_.notify_all();
  return true;
}

bool job_runner::cancel(const std::string& id, bool wait) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return false;
  it->second.cancel->store(true);
  if (it->second.st != state::running) {
    entry e = std::move(it->second);
    jobs_.erase(it);
    lock.unlock();
    finish(std::move(e), job_next::kind::cancelled, "");
    lock.lock();
    cv_.notify_all();
    return true;
  }
  // A running job leaves after its step; the worker finishing it notifies.
  auto gone = it->second.cancel;
  if (wait) cv_.wait(lock, [&] { return jobs_.count(id) == 0 || jobs_.at(id).cancel != gone; });
  return true;
}

void job_runner::wake(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  if (it->second.st == state::running) it->second.woken = true;
  if (it->second.st != state::waiting) return;
  it->second.st = state::ready;
  cv_.notify_all();
}

bool job_runner::has(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_.count(id) > 0;
}

std::optional<mono::time_point> job_runner::next_step(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.st != state::waiting) return std::nullopt;
  return it->second.at;
}

std::vector<std::string> job_runner::ids(const std::string& prefix) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (auto it = jobs_.lower_bound(prefix); it != jobs_.end() && it->first.rfind(prefix, 0) == 0; ++it)
    out.push_back(it->first);
  return out;
}

void job_runner::stop() {
  std::vector<std::pair<std::string, entry>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      it->second.cancel->store(true);
      if (it->second.st == state::running) {
        ++it;
        continue;
      }
      left.emplace_back(it->first, std::move(it->second));
      it = jobs_.erase(it);
    }
    cv_.notify_all();
  }
  for (auto& [id, e] : left) finish(std::move(e), job_next::kind::cancelled, "");
  for (auto& w : workers_)
    if (w.joinable()) w.join();
}

std::map<std::string, job_runner::entry>::iterator job_runner::pick_locked(mono::time_point now) {
  for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
    entry& e = it->second;
    if (e.st == state::waiting && e.at <= now) e.st = state::ready;
    if (e.st != state::ready || running_[e.lane] >= opts_.lanes.at(e.lane)) continue;
    return it;
  }
  return jobs_.end();
}

void job_runner::set_task_state(uint64_t task, const char* st, const std::string& reason) {
  if (!task) return;
  tasks_.update(
      task,
      json{{"updated_on", clk_.now_s()}, {"state", st}, {"reason", reason.empty() ? json(nullptr) : json(reason)}});
}

void job_runner::finish(entry e, job_next::kind how, const std::string& reason) {
  if (e.task) tasks_.remove(e.task);
  e.j->ended(how, reason);
}

void job_runner::work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    auto it = pick_locked(mono::now());
    if (it == jobs_.end()) {
      wait_locked(lock);
      continue;
    }
    run_step(lock, it);
  }
}

void job_runner::wait_locked(std::unique_lock<std::mutex>& lock) {
  mono::time_point next = mono::now() + idle_recheck;
  for (auto& [id, e] : jobs_)
    if (e.st == state::waiting && running_[e.lane] < opts_.lanes.at(e.lane)) next = std::min(next, e.at);
  // Anything that changes what can run notifies; the timed part wakes the first waiting job.
  const size_t seen = jobs_.size();
  mono::wait_until(cv_, lock, next, [&] {
    if (stopping_ || jobs_.size() != seen) return true;
    for (auto& [id, e] : jobs_)
      if (e.st == state::ready && running_[e.lane] < opts_.lanes.at(e.lane)) return true;
    return false;
  });
}

void job_runner::run_step(std::unique_lock<std::mutex>& lock, std::map<std::string, entry>::iterator it) {
  const std::string id = it->first;
  entry& e = it->second;
  SETTEE_CHECK(e.st == state::ready && running_[e.lane] < opts_.lanes.at(e.lane));  // a lane's slots hold
  e.st = state::running;
  ++running_[e.lane];
  if (!e.task) {
    json row = e.j->task();
    if (!row.is_null()) {
      row["node"] = node_;
      row["started_on"] = clk_.now_s();
      row["updated_on"] = clk_.now_s();
      e.task = tasks_.add(std::move(row));
    }
  }
  job_context ctx;
  ctx.runner_ = this;
  ctx.task_ = e.task;
  ctx.attempts_ = e.attempts;
  ctx.cancel_ = e.cancel.get();
  std::shared_ptr<job> j = e.j;
  auto cancel = e.cancel;  // kept alive while the step runs
  const std::string lane = e.lane;
  lock.unlock();
  job_next next;
  try {
    next = j->step(ctx);
  } catch (const std::exception& ex) {
    log::error("job " + id + " threw: " + ex.what());
    next = job_next::fail(ex.what());
  }
  lock.lock();
  SETTEE_CHECK(running_[lane] > 0);
  --running_[lane];
  auto at = jobs_.find(id);  // a running entry stays until its worker takes it out
  SETTEE_CHECK(at != jobs_.end() && at->second.st == state::running);
  const bool ends = next.what == job_next::kind::done || next.what == job_next::kind::failed;
  if (ends || cancel->load()) {
    entry gone = std::move(at->second);
    jobs_.erase(at);
    lock.unlock();
    finish(std::move(gone), ends ? next.what : job_next::kind::cancelled, ends ? next.reason : "");
    lock.lock();
  } else {
    schedule_locked(id, at->second, next);
  }
  cv_.notify_all();
}

void job_runner::schedule_locked(const std::string& id, entry& e, job_next next) {
  e.st = state::waiting;
  if (std::exchange(e.woken, false) && next.what != job_next::kind::retry) next = job_next::more();
  // A job that failed shows "retrying" (and why) until a step of it succeeds, its attempts included.
  if (e.attempts && next.what != job_next::kind::retry) set_task_state(e.task, "running");
  switch (next.what) {
    case job_next::kind::step:
      e.st = state::ready;
      e.attempts = 0;
      break;
    case job_next::kind::pause:
      e.at = mono::now() + next.delay;
      e.attempts = 0;
      break;
    case job_next::kind::idle:
      e.at = mono::time_point::max();
      e.attempts = 0;
      break;
    default: {  // retry
      const int n = std::min(++e.attempts, 30);
      auto wait = opts_.backoff_base * (int64_t{1} << std::min(n - 1, 20));
      e.at = mono::now() + std::max(next.delay, std::min<std::chrono::milliseconds>(wait, opts_.backoff_cap));
      log::warning("job " + id + " retries (attempt " + std::to_string(n) + "): " + next.reason);
      set_task_state(e.task, "retrying", next.reason);
      break;
    }
  }
}

}  // namespace settee
