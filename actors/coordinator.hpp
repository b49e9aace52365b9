// coordinator: turns a database-level request into shard-level work. It routes document ids to
// ranges (shard_map), sends writes to the owning shard replica actors in parallel (bridge) and
// hands out shard handles for reads, which run as LMDB snapshots on the caller's thread.
// Thread-safety: all methods may be called from any HTTP worker thread.
#pragma once
#include <caf/fwd.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "actors/db_catalog.hpp"
#include "actors/shard_registry.hpp"

namespace settee {

class coordinator {
 public:
  coordinator(db_catalog& catalog, shard_registry& shards, std::chrono::milliseconds timeout);

  db_catalog& catalog() { return catalog_; }

  result<shard_handle> shard(const db_meta& db, size_t index);
  result<shard_handle> shard_for(const db_meta& db, std::string_view doc_id);
  size_t shard_index(const db_meta& db, std::string_view doc_id) const;
  // A read snapshot of the shard that holds `doc_id`.
  result<shard_store::snapshot> read_for(const db_meta& db, std::string_view doc_id);

  // Writes documents, each to the shard of its id; all shards commit in parallel.
  // `out` gets one result per input, in input order.
  status update_docs(const db_meta& db, std::vector<doc_update> docs, std::vector<doc_result>& out);
  // Writes a _local document; returns the new revision number (0 after a delete).
  result<uint64_t> write_local(const db_meta& db, local_update u);
  // Sets the security object on every shard.
  status set_security(const db_meta& db, const std::string& security_json);
  // Sets revs_limit on every shard.
  status set_revs_limit(const db_meta& db, uint32_t limit);

 private:
  // Applies the op `fill` describes to every shard of the database, in parallel.
  status write_every_shard(const db_meta& db, const std::function<void(write_op&)>& fill);

  db_catalog& catalog_;
  shard_registry& shards_;
  std::chrono::milliseconds timeout_;
};

}  // namespace settee
