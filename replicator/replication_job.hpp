// replication_job: one replication (one-shot or continuous) as a job of the node's jobs framework
// (actors/jobs.hpp, lane `replication`), speaking CouchDB's replication protocol to both endpoints
// over HTTP, whatever they are (settee, CouchDB, pouchdb-server; this node's own databases through
// its HTTP front):
//
//   start: GET both databases (create the target if asked), read `_local/<id>` on both sides and
//     continue from the newest session they share, else from since_seq (a seq, or a time settee
//     sources resolve to the second), else 0;
//   each step: `_changes?style=all_docs` from there (limit workers x batch size; filtered by
//     doc_ids, selector or a filter), read as a stream one row at a time until the page is full
//     (whatever the source sends: replicator/changes_rows.hpp), split in batches run at most `workers`
//     at once, on the lane's thread and the replicator's shared batch threads (no thread of its
//     own), each batch with a worker's connections:
//     `_revs_diff` on the target, `_bulk_get` of the missing revisions from the source without
//     attachments' bytes, a second one with the bytes for revisions whose missing attachments are
//     small, then `_bulk_docs` with new_edits=false (halved on 413); a revision with larger ones
//     goes alone, GET ?open_revs as multipart/mixed into a spool file and PUT multipart/related
//     from it (as every document when the source has no `_bulk_get`);
//   checkpoints: every checkpoint_interval and at the end, `_local/<id>` on both sides in
//     CouchDB's format (replicator/rep_checkpoint.hpp).
//
// A one-shot job ends when a read of the feed finds nothing pending; a continuous one, once caught
// up, waits for a longpoll read of the source's feed to wake it (replicator/feed_watches.hpp): the step
// never blocks a lane worker longer than a batch.
// Errors of the start are final for a one-shot job; later ones retry from the last checkpoint
// with the runner's backoff.
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/jobs.hpp"
#include "node/clock.hpp"
#include "node/work_pool.hpp"
#include "replicator/rep_checkpoint.hpp"
#include "replicator/rep_client.hpp"
#include "replicator/rep_request.hpp"

namespace settee {

class replication_job final : public job {
 public:
  static constexpr const char* lane = "replication";

  // Called once the job left the runner: how it ended, and wait()'s answer.
  using end_callback = std::function<void(job_next::kind, const result<json>&)>;

  // Attachments too large to hold go through spool files in `spool_dir`; batches run on this
  // thread and `batch_threads` (the replicator's, shared by every job; null: this thread only).
  replication_job(rep_request r, const clock& clk, std::string node, std::string spool_dir,
                  std::shared_ptr<work_pool> batch_threads = nullptr);
  ~replication_job() override;
  // A job of a `_replicator` document (before it is submitted): shown with it in listings, and told
  // when it ends.
  void set_document(std::string db, std::string doc_id, end_callback on_end);

  // How a continuous replication waits once caught up: `watch(rest, body)` starts a longpoll read
  // of the source's feed from where it is that wakes the job (replicator/feed_watches.hpp). Without
  // one, it reads the source every 200 ms.
  using watch_callback = std::function<void(const std::string& rest, const json& body)>;
  void set_watch(watch_callback w) { watch_ = std::move(w); }

  job_next step(job_context& ctx) override;
  json task() const override;
  void ended(job_next::kind how, const std::string& reason) override;

  // Continues the scheduler's record of `earlier`, a job of the same replication that was stopped
  // to make room (its history with a `stopped` event, its errors in a row, when it was added).
  void carry_on_from(const replication_job& earlier);
  // Asks the job's requests to give up their retries (before job_runner::cancel).
  void stop() { stop_ = true; }
  // Ends a job that never entered the runner (it is stopping): wait() answers `reason`; no callback.
  void abandon(const std::string& reason);
  // Waits until the job ended: the `_replicate` answer's members ({"ok":true, session_id, ...} or
  // {"ok":true,"no_changes":true}), or the error that ended it.
  result<json> wait();
  // The job as GET /_scheduler/jobs shows it.
  json info() const;
  // The scheduler's state: "running", or "crashing" after an error until a step succeeds again,
  // "completed" / "failed" once it ended; and the last error.
  std::string state() const;
  std::string last_error() const;
  // Errors in a row since the last step that went well.
  int error_count() const;
  const std::string& doc_id() const { return doc_id_; }
  const rep_request& request() const { return r_; }

 private:
  struct worker;  // a batch's clients
  status start(job_context& ctx);
  // One read of the feed and its batches; true when caught up.
  result<bool> advance(job_context& ctx);
  status replicate_batch(worker& w, const json& rows, rep_stats& stats);
  // Runs batch(i, w) for i < n, at most workers_.size() at once (one worker each).
  void run_batches(size_t n, const std::function<void(size_t, worker&)>& batch);
  // Closes the job's connections (a caught-up job holds none while it waits).
  void release_connections();
  // `_revs_diff` of the rows' revisions: [{"id","rev","atts_since"?}] the target lacks.
  result<json> missing_revisions(worker& w, const json& rows, rep_stats& stats);
  // Those revisions with their histories and the attachments the target lacks, for _bulk_docs;
  // revisions with attachments too large for it are copied one by one (copy_multipart).
  result<json> fetch_revisions(worker& w, const json& wanted, rep_stats& stats);
  // `_bulk_get` of `wanted` with or without attachments' bytes; null when the source has none. An
  // answer past the size limit is asked again in halves, at most four times over (an answer that
  // never ends is not read sixteen times more), down to one revision.
  result<json> bulk_get(worker& w, const json& wanted, bool attachments, rep_stats& stats, int halvings = 0);
  // Revisions `revs` of `id` read as multipart/mixed into a spool file: those with attachments
  // PUT to the target as multipart/related from the file (never held in memory), the others added
  // to `docs`.
  status copy_multipart(worker& w, const std::string& id, const json& revs, const json& atts_since, json& docs,
                        rep_stats& stats);
  status write_revisions(worker& w, json docs, rep_stats& stats);
  status checkpoint();
  json changes_body() const;
  // The query of a read of the source's feed from through_seq_: a batch's, or a longpoll that
  // answers at the next change.
  std::string changes_query(bool longpoll = false) const;

  rep_request r_;
  const clock& clk_;
  std::string node_, spool_dir_;
  std::shared_ptr<work_pool> batch_threads_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> no_bulk_get_{false};  // the source answered _bulk_get with 400/404/405/501
  std::vector<std::unique_ptr<worker>> workers_;
  std::unique_ptr<rep_client> source_, target_;  // the feed's and the checkpoints'

  // Progress (guarded by mu_: task() and info() read it from other threads).
  mutable std::mutex mu_;
  bool started_ = false;
  std::string session_id_, start_time_;
  json start_seq_ = 0, through_seq_ = 0, committed_seq_ = 0;
  json history_ = json::array();
  json log_;  // the last checkpoint written (the one-shot answer)
  std::string source_rev_, target_rev_;
  rep_stats stats_;
  uint64_t pending_ = 0;
  int64_t last_checkpoint_ms_ = 0, started_on_s_ = 0;
  std::string last_error_;
  std::vector<json> history_events_;  // {"timestamp","type"[,"reason"]} for _scheduler/jobs

  std::string doc_db_, doc_id_;
  end_callback on_end_;
  watch_callback watch_;
  bool crashing_ = false;
  int errors_in_a_row_ = 0;
  job_next::kind end_how_ = job_next::kind::step;

  std::condition_variable ended_cv_;
  bool ended_ = false;
  status end_status_;
};

}  // namespace settee
