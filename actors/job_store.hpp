// job_store: where jobs keep the state that must survive a restart: `_local` documents of one
// shard file (the node's `_dbs`), never replicated, one per job under a prefix of the owner's
// ("_local/reshard-job/", "_local/compaction/"). Each put is one write through the file's replica
// (fsynced), at the document's current revision.
// Thread-safety: any thread; writes of one id are the caller's to order.
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "actors/shard_registry.hpp"
#include "node/error.hpp"
#include "node/json.hpp"

namespace settee {

class job_store {
 public:
  using opener = std::function<result<shard_handle>()>;
  // `file` opens the shard the documents live in; `timeout` bounds each write.
  explicit job_store(opener file, std::chrono::milliseconds timeout = std::chrono::seconds(60))
      : file_(std::move(file)), timeout_(timeout) {}

  // Writes `_local` document `id` ("_local/...").
  status put(const std::string& id, const json& body);
  // Deletes it (nothing when it does not exist).
  status remove(const std::string& id);
  // Every document whose id starts with `prefix`, as (id, body); unreadable bodies are skipped
  // with an error in the log.
  result<std::vector<std::pair<std::string, json>>> load(const std::string& prefix) const;

 private:
  status write(const std::string& id, const std::string* body);

  opener file_;
  std::chrono::milliseconds timeout_;
};

}  // namespace settee
