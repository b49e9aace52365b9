// replications: the node's replications by id, and CouchDB's scheduler over them
// (couch_replicator_scheduler): at most `max_jobs` run at once (each a job of the jobs framework),
// the others wait as `pending`, oldest first; every `interval`, when some wait, up to `max_churn`
// crashing replications (backing off) and then continuous ones that ran longest make room (stopped after their step,
// they wait again and later resume from their checkpoints). POST /_replicate starts or joins one, cancels one; GET
// /_scheduler/jobs lists them. Thread-safety: every method may be called from any thread.
#pragma once
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/jobs.hpp"
#include "replicator/feed_watches.hpp"
#include "replicator/replication_job.hpp"

namespace settee {

struct scheduler_limits {
  size_t max_jobs = 500;                      // [replicator] max_jobs
  std::chrono::milliseconds interval{60000};  // [replicator] interval
  size_t max_churn = 20;                      // [replicator] max_churn
  // [replicator] worker_threads: the threads every replication's batches share, besides the
  // `replication` lane's (a step runs at most worker_processes batches at once, one on its lane
  // thread and the others on these).
  size_t worker_threads = 16;
};

class replications {
 public:
  // Replications spool large attachments to files in `spool_dir`; they read from their endpoints
  // within `rules` (null: the defaults).
  replications(job_runner& jobs, const clock& clk, std::string node, std::string spool_dir, scheduler_limits lim = {},
               std::shared_ptr<const remote_rules> rules = nullptr);
  // [replicator] interval and max_churn changed while the node runs.
  void set_schedule(std::chrono::milliseconds interval, size_t max_churn);
  // The rules a request's endpoints are given (rep_context::rules).
  const std::shared_ptr<const remote_rules>& rules() const { return rules_; }

  // Starts `r` unless a replication with its id is known already (then joins it). A one-shot
  // replication is waited for (also while pending): its `_replicate` answer or error; a continuous
  // one answers {"ok":true,"_local_id":id} at once.
  result<json> replicate(rep_request r);
  // Starts the replication of `_replicator` document `doc_id` of `db` without waiting; `on_end` is
  // told when it ends (it is forgotten then). Null when a replication with its id is known already:
  // `taken_by` is the document that started it ("" for POST /_replicate).
  std::shared_ptr<replication_job> start_document(rep_request r, const std::string& db, const std::string& doc_id,
                                                  replication_job::end_callback on_end, std::string& taken_by);
  // The job now running (or pending) replication `id` for `_replicator` document `doc_id`, null
  // when there is none (a rotated replication gets a new job).
  std::shared_ptr<replication_job> document_job(const std::string& id, const std::string& doc_id) const;
  // Stops replication `id` (not_found when it is not known).
  status cancel(const std::string& id);
  // The scheduler's turn: every `interval` (on the node's clock), when replications wait, rotates
  // up to max_churn.
  void rotate();
  // Submits the scheduler's own tick (a job of `control_lane` that calls rotate() every second,
  // so that the interval is met on the node's clock within a second). False when the runner refused it.
  bool start_scheduler();
  // The lane of the scheduler's tick and of the `_replicator` document processor: never waiting
  // behind replications for a slot.
  static constexpr const char* control_lane = "replicator";
  static constexpr const char* scheduler_job_id = "replication scheduler";
  // Every replication, sorted by id, as /_scheduler/jobs lists them.
  // The jobs by state (running, pending, crashing; completed and failed ones while they are known).
  std::map<std::string, size_t> states() const;
  std::vector<json> jobs() const;
  std::optional<json> job(const std::string& id) const;
  // Cancels every replication (node shutdown, before the runner stops).
  void stop_all();

 private:
  struct slot {
    std::shared_ptr<replication_job> job;
    bool active = false;  // submitted to the runner (else pending)
    bool rotating = false;
    int64_t since_ms = 0;  // when it became active
    std::string doc_db, doc_id;
    replication_job::end_callback on_end;  // a document's
  };
  std::shared_ptr<replication_job> find(const std::string& id) const;
  // A job for slot `s` of `id` running `r` (a document's: told how it ended, unless rotated out).
  std::shared_ptr<replication_job> make_job_locked(const std::string& id, rep_request r, slot& s);
  // Runs `id` now if a slot is free, else queues it.
  void admit_locked(const std::string& id);
  void promote_locked();
  void forget(const std::string& id, const std::shared_ptr<replication_job>& j);

  job_runner& jobs_;
  const clock& clk_;
  std::string node_, spool_dir_;
  scheduler_limits lim_;
  std::shared_ptr<const remote_rules> rules_;
  std::shared_ptr<work_pool> batch_threads_;
  mutable std::mutex mu_;
  std::map<std::string, slot> known_;
  std::deque<std::string> pending_;  // oldest first
  size_t active_ = 0;
  int64_t last_rotation_ms_ = 0;
  feed_watches watches_;  // caught-up continuous replications waiting for their sources
};

}  // namespace settee
