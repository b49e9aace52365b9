// replications: the node's running replications by id (one job per id in the jobs framework):
// POST /_replicate starts or joins one, cancels one, and GET /_scheduler/jobs lists them.
// Thread-safety: every method may be called from any thread (the HTTP front's).
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "actors/jobs.hpp"
#include "http/replication_job.hpp"

namespace settee {

class replications {
 public:
  replications(job_runner& jobs, const clock& clk, std::string node);

  // Starts `r` unless a replication with its id runs already (then joins it). A one-shot
  // replication is waited for: its `_replicate` answer or error; a continuous one answers
  // {"ok":true,"_local_id":id} at once.
  result<json> replicate(rep_request r);
  // Starts the replication of `_replicator` document `doc_id` of `db` without waiting; `on_end` is
  // told when it ends (it is forgotten then). Null when a replication with its id runs already:
  // `taken_by` is the document that started it ("" for POST /_replicate).
  std::shared_ptr<replication_job> start_document(rep_request r, const std::string& db, const std::string& doc_id,
                                                  replication_job::end_callback on_end, std::string& taken_by);
  // Stops replication `id` (not_found when it does not run).
  status cancel(const std::string& id);
  // Every replication, sorted by id, as /_scheduler/jobs lists them.
  std::vector<json> jobs() const;
  std::optional<json> job(const std::string& id) const;
  // Cancels every replication (node shutdown, before the runner stops).
  void stop_all();

 private:
  std::shared_ptr<replication_job> find(const std::string& id) const;
  void forget(const std::string& id, const std::shared_ptr<replication_job>& j);

  job_runner& jobs_;
  const clock& clk_;
  std::string node_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<replication_job>> running_;
};

}  // namespace settee
