// nodes_db: the `_nodes` system database, one document per cluster member
// ({"_id": "<name>", "host": "...", "rpc_port": N}), stored in `<data>/_nodes.lmdb` and pushed between
// nodes like `_dbs`. Seeds from the config are written into it at start; PUT
// /_node/_local/_nodes/<name> adds a member at runtime, DELETE removes one. Every change (local or replicated) is
// turned into a member and a dialled peer by reload(). Thread-safety: all methods may be called from any plain thread.
#pragma once
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "actors/db_catalog.hpp"
#include "actors/shard_registry.hpp"
#include "cluster/membership.hpp"
#include "cluster/rpc_node.hpp"

namespace settee {

class nodes_db {
 public:
  nodes_db(shard_registry& shards, const clock& clk, std::string data_dir, membership& members, rpc_node& rpc,
           std::chrono::milliseconds timeout);

  // Adds (or updates) a member; durable when it returns. A seed (from the config, written at every
  // start) does not bring back a member that was removed.
  status add(const peer_address& node, bool seed = false);
  // Removes a member (a deletion in `_nodes`, pushed to every node like any change): it is no
  // longer listed, dialled or let in. errc::not_found when it is not a member.
  status remove(const std::string& name);
  // Makes every member in `_nodes` a member and a peer (cheap when nothing changed).
  status reload();
  db_meta meta() const;  // `_nodes` as a one-range database, for internal replication

 private:
  result<shard_handle> handle();
  status edit(const std::function<result<std::optional<doc_update>>(const shard_store::snapshot&)>& make);

  shard_registry& shards_;
  const clock& clk_;
  std::string path_;
  membership& members_;
  rpc_node& rpc_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  uint64_t loaded_seq_ = UINT64_MAX;
  std::set<std::string> known_;
};

}  // namespace settee
