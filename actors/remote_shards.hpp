// remote_shards: what a coordinator asks of the shard copies on other nodes. The cluster layer
// implements it over Cap'n Proto (cluster/rpc_node); the actors layer only knows this interface.
// Thread-safety: every method may be called from any thread except the RPC thread.
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "node/error.hpp"
#include "storage/shard_store.hpp"

namespace settee {

// One copy of a range as its header describes it.
struct shard_summary {
  std::string uuid;
  uint64_t update_seq = 0;
  uint64_t doc_count = 0;
  uint64_t doc_del_count = 0;
  uint64_t external_size = 0;
  uint64_t file_size = 0;
};

class remote_shards {
 public:
  virtual ~remote_shards() = default;

  // The header of `node`'s copy of `range` (blocks up to `timeout`).
  virtual result<shard_summary> summary(const std::string& node, const std::string& db, const std::string& range,
                                        std::chrono::milliseconds timeout) = 0;

  using write_done = std::function<void(result<std::vector<doc_result>>)>;
  // Starts writing `docs` (each new_edits or not, as it says) to `node`'s copy of `range`. `done`
  // runs exactly once, on some other thread: with one result per document once that copy has
  // committed, or with the error (errc::unavailable when the node cannot be reached).
  virtual void update_docs(const std::string& node, const std::string& db, const std::string& range,
                           const std::vector<doc_update>& docs, write_done done) = 0;
};

}  // namespace settee
