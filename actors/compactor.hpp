// compactor: database compaction in the background (POST /db/_compact), as jobs of the node's
// job runner (actors/jobs.hpp), lane "compaction". A shard copy keeps the bodies of older
// revisions (GET ?rev=, open_revs) until it is compacted; compaction drops them and the
// attachment references they held (blobs go with their last reference). Each job compacts one copy
// in steps of `docs_per_step` documents: each step is a write op the copy's replica commits
// between client writes, so writers wait for one step at most. Progress shows in the task list as
// CouchDB's `database_compaction` tasks.
// A job's position is saved (a `_local/compaction/<shard>` document of `_dbs`, at most once a
// second and when it ends), so a compaction cut by a restart or a kill -9 goes on from there when
// the node starts again (CouchDB starts it over, or not at all). SETTEE_FAILPOINT=compaction:step
// exits after a step saved its position (kill tests).
#pragma once
#include <memory>
#include <string>

#include "actors/coordinator.hpp"
#include "actors/job_store.hpp"
#include "actors/jobs.hpp"
#include "actors/local_copy.hpp"

namespace settee {

class compactor {
 public:
  // `store` keeps the jobs' positions (null: they are not kept).
  compactor(job_runner& runner, job_store* store, size_t docs_per_step);

  // Queues `copy` (this node's copy of shard `shard`, "shards/<range>/<db>.<suffix>", of database
  // `db`), from document id `from` on. A shard queued or running already is not queued twice.
  void enqueue(const std::string& db, const std::string& shard, std::shared_ptr<local_copy> copy,
               const std::string& from = "");
  // Queues every copy of database `db` that this node holds.
  void enqueue_db(coordinator& coord, const db_meta& db);
  // Whether a copy of database `db` is queued or being compacted.
  bool running(const std::string& db) const;
  // Queues again the compactions a restart cut (their saved positions). After the catalog loaded.
  status resume(coordinator& coord);

  static constexpr const char* lane = "compaction";

 private:
  job_runner& runner_;
  job_store* store_;
  size_t docs_per_step_;
};

}  // namespace settee
