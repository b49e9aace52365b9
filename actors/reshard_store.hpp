// reshard_store: where split and move jobs and the node-wide resharding state are kept (CouchDB's
// mem3_reshard_store): `_local` documents of `_dbs` (never replicated) through the node's
// job_store, "_local/reshard-job/<id>" per job and "_local/reshard-state".
// Thread-safety: as job_store's.
#pragma once
#include <string>
#include <vector>

#include "actors/job_store.hpp"
#include "actors/reshard_job.hpp"

namespace settee {

class reshard_store {
 public:
  explicit reshard_store(job_store& store) : store_(store) {}

  struct saved {
    reshard_state state;
    std::vector<split_job> jobs;  // unreadable ones are left out (and logged)
  };
  result<saved> load() const;
  status save(const split_job& j);
  status save(const reshard_state& s);
  status remove(const std::string& job_id);

 private:
  job_store& store_;
};

}  // namespace settee
