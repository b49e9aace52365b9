// import_batch: a piece of one shard's history that travels to another node, where a shard
// move's target imports it (write_op::kind::import) exactly as a split child imports from a local
// snapshot: the changes after a seq, each with its document's whole revision tree, every body the
// source stores and the attachment bytes they name, plus the source's header as of the batch and,
// on request, its _local documents.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "node/error.hpp"
#include "storage/shard_store.hpp"

namespace settee {

class import_batch final : public import_source {
 public:
  // Up to `limit` changes of `snap` after `since`; the batch also ends after the change that takes
  // its bodies and attachment bytes past `max_bytes` (it always holds one change, when there is
  // one). `with_local`: the _local documents too. A read error is returned.
  static result<import_batch> read(const shard_store::snapshot& snap, uint64_t since, size_t limit, size_t max_bytes,
                                   bool with_local);
  // The node-protocol form, and back (nullopt: not a batch).
  std::string encode() const;
  static std::optional<import_batch> decode(std::string_view bytes);

  // The last seq the batch holds (`since` when none).
  uint64_t last_seq() const { return changes_.empty() ? since_ : changes_.back().seq; }
  size_t size() const { return changes_.size(); }

  // import_source
  void scan_changes(uint64_t since, const std::function<bool(const change_entry&)>& visit) const override;
  bool doc(std::string_view id, doc_info& out) const override;
  bool body(std::string_view id, const rev_id& rev, std::string& out) const override;
  bool blob(std::string_view key, std::string& out) const override;
  bool header(shard_header& out) const override;
  void scan_local(const std::function<bool(const local_doc&)>& visit) const override;
  void scan_purges(uint64_t since, const std::function<bool(const purge_info&)>& visit) const override;
  // A batch holds only some documents: whether the source held `id` is what it read.
  bool holds(std::string_view id) const override { return gone_.count(std::string(id)) == 0; }
  bool complete() const override { return complete_; }
  const status& fault() const override { return fault_; }

 private:
  uint64_t since_ = 0;
  std::vector<change_entry> changes_;  // seq, id, time_s
  std::map<std::string, doc_info, std::less<>> docs_;
  std::map<std::string, std::string, std::less<>> bodies_;  // by doc_key::body(id, rev)
  std::map<std::string, std::string, std::less<>> blobs_;
  std::string header_;  // encoded
  bool complete_ = false;
  bool with_local_ = false;
  std::vector<local_doc> locals_;
  std::vector<purge_info> purges_;
  std::set<std::string> gone_;  // ids of purge requests whose document the source no longer holds
  status fault_;
};

}  // namespace settee
