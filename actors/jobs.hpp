// jobs: the node's one framework for long-running work (docs/architecture.md section 39).
//
// A job is a state machine the runner drives one step at a time: step() does a bounded piece of
// work and says what comes next (another step, a pause, a wait for wake(), the end, a failure, or a
// retry after a backoff that doubles up to a cap). Between steps the runner checks for a cancel, so
// stopping a job or the node never interrupts a step half done. Each job runs in a lane (compaction,
// reshard, sync; index builds and replications next) that bounds how many of its jobs run at once;
// the runner has one worker thread per lane slot, so no lane waits for another's. A job that has a
// task row (task()) shows in GET /_active_tasks while it is in the runner, with its `state`
// (running, waiting, retrying) and the progress its steps report.
//
// Jobs that must survive a restart keep their state in `_local` documents (job_store) and are
// submitted again by their owner at start. Failpoints (SETTEE_FAILPOINT=<name>) let kill tests stop
// the process at a named point of a job, after it saved its state.
// Deadlines and backoffs are on the monotonic clock (mono::wait_until), so tests drive them.
// Thread-safety: every method may be called from any thread; step() runs on a worker.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "actors/task_list.hpp"
#include "node/clock.hpp"
#include "node/error.hpp"
#include "node/json.hpp"

namespace settee {

// What a step asks the runner to do next.
struct job_next {
  enum class kind { step, pause, idle, done, failed, retry, cancelled };  // cancelled: ended() only
  kind what = kind::step;
  std::chrono::milliseconds delay{0};  // pause; retry: the least wait
  std::string reason;                  // failed, retry

  static job_next more() { return {}; }
  // The next step after `d` (periodic work), or sooner on wake().
  static job_next pause(std::chrono::milliseconds d) { return {kind::pause, d, {}}; }
  // The next step on wake().
  static job_next idle() { return {kind::idle, {}, {}}; }
  static job_next done() { return {kind::done, {}, {}}; }
  static job_next fail(std::string reason) { return {kind::failed, {}, std::move(reason)}; }
  // The next step after the backoff (attempt n waits max(at_least, min(cap, base * 2^(n-1)))), or
  // sooner on wake().
  static job_next retry(std::string reason, std::chrono::milliseconds at_least = {}) {
    return {kind::retry, at_least, std::move(reason)};
  }
};

// What a step sees of the runner.
class job_context {
 public:
  // A cancel or the runner's stop was asked: end the step early (its work so far must stand).
  bool cancelled() const;
  // Retries in a row before this step (0 after a step that did not ask for one).
  int attempts() const { return attempts_; }
  // Merges `fields` into the job's task row (and stamps `updated_on`).
  void progress(const json& fields);
  // Takes the task row off GET /_active_tasks now (before the job's end is visible elsewhere).
  void drop_task();
  // SETTEE_FAILPOINT=<name>: runs `save` (the job's state to disk), then exits the process (70).
  static void failpoint(const std::string& name, const std::function<void()>& save = {});

 private:
  friend class job_runner;
  class job_runner* runner_ = nullptr;
  uint64_t task_ = 0;
  int attempts_ = 0;
  const std::atomic<bool>* cancel_ = nullptr;
};

class job {
 public:
  virtual ~job() = default;
  virtual job_next step(job_context& ctx) = 0;
  // Its `_active_tasks` row while in the runner (`type` and the task's own fields; the runner adds
  // node, pid, started_on, updated_on, state). null: no row.
  virtual json task() const { return nullptr; }
  // The job left the runner: `how` is done, failed (with `reason`) or cancelled. On a worker, or
  // on the caller of cancel()/stop() for a job that was not running.
  virtual void ended(job_next::kind how, const std::string& reason) {
    (void)how;
    (void)reason;
  }
};

struct job_options {
  std::map<std::string, size_t> lanes;  // lane -> jobs of it running at once
  std::chrono::milliseconds backoff_base{1000};
  std::chrono::milliseconds backoff_cap{30000};
};

class job_runner {
 public:
  job_runner(task_list& tasks, const clock& clk, std::string node, job_options opts);
  ~job_runner();  // stop()
  job_runner(const job_runner&) = delete;
  job_runner& operator=(const job_runner&) = delete;

  // Adds `j` as `id` in `lane`; runs it when a slot of the lane is free. False when `id` is in the
  // runner already, the lane is unknown or the runner stopped.
  bool submit(const std::string& id, const std::string& lane, std::shared_ptr<job> j);
  // Asks job `id` to stop: a waiting job leaves at once, a running one after its step. False when
  // it is not in the runner. `wait`: returns once it left.
  bool cancel(const std::string& id, bool wait = false);
  // Makes a pausing, idle or retrying job `id` step now (a running one steps again after this step).
  void wake(const std::string& id);
  bool has(const std::string& id) const;
  // When waiting job `id` steps next (max: on wake() only); nullopt when it is not waiting.
  std::optional<mono::time_point> next_step(const std::string& id) const;
  // Ids in the runner whose id starts with `prefix`.
  std::vector<std::string> ids(const std::string& prefix = "") const;
  // Cancels every job (each ends after its step) and joins the workers. Idempotent.
  void stop();

 private:
  friend class job_context;
  enum class state { ready, running, waiting };
  struct entry {
    std::string lane;
    std::shared_ptr<job> j;
    state st = state::ready;
    mono::time_point at{};  // waiting: when it is ready again (max: on wake only)
    int attempts = 0;
    bool woken = false;  // wake() while running
    uint64_t task = 0;
    std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
  };
  void work();
  // Waits until a job may be ready (a change, or the first waiting job's time).
  void wait_locked(std::unique_lock<std::mutex>& lock);
  // Runs one step of `it` (the lock is let go meanwhile), then ends or schedules it.
  void run_step(std::unique_lock<std::mutex>& lock, std::map<std::string, entry>::iterator it);
  void schedule_locked(const std::string& id, entry& e, job_next next);
  // The ready entry to run next (its lane under its limit), or end().
  std::map<std::string, entry>::iterator pick_locked(mono::time_point now);
  // Takes a job that left the runner off the task list and tells it how it ended (without the lock).
  void finish(entry e, job_next::kind how, const std::string& reason);
  void set_task_state(uint64_t task, const char* st, const std::string& reason = "");

  task_list& tasks_;
  const clock& clk_;
  std::string node_;
  job_options opts_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, entry> jobs_;
  std::map<std::string, size_t> running_;  // by lane
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace settee
