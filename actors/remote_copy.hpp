// remote_copy: another node's copy of a shard range as a shard_copy, over remote_shards (the
// typed node protocol). A node of release 0.2 does not know the typed document calls (it did not
// announce typed_feature): for it the same operations go through its readDoc, and its rendered
// answers are read back into data here and nowhere else (legacy_* in remote_copy.cpp).
#pragma once
#include <chrono>

#include "actors/remote_shards.hpp"
#include "actors/shard_copy.hpp"
#include "node/clock.hpp"

namespace settee {

class remote_copy final : public shard_copy {
 public:
  remote_copy(remote_shards& rpc, std::string node, std::string db, std::string range,
              std::chrono::milliseconds timeout)
      : rpc_(rpc), node_(std::move(node)), db_(std::move(db)), range_(std::move(range)), timeout_(timeout) {}

  const std::string& node() const override { return node_; }
  bool local() const override { return false; }
  bool hashes_sha256() const override { return rpc_.hashes_sha256(node_); }

  result<shard_summary> summary() override;
  result<changes_page> changes(const changes_request& req) override;
  result<resolved_since> resolve_since(const std::string& uuid_prefix, uint64_t seq) override;
  result<all_docs_page> all_docs(const all_docs_request& req) override;
  result<time_seq_state> time_seq(bool reset) override;
  void open_docs(const std::vector<std::string>& ids, doc_bodies bodies, docs_done done) override;
  result<std::optional<local_doc>> open_local(const std::string& id) override;
  result<uint64_t> write_local(const local_update& u) override;
  result<std::vector<settee::local_doc>> list_local() override;
  status set_revs_limit(uint32_t limit) override;
  result<std::string> read_blob(const std::string& key, uint64_t offset, uint64_t length) override;
  result<bool> stage_blob(const std::string& key, uint64_t offset, const std::string& piece) override;
  status drop_staged(const std::string& key) override;
  void update_docs(std::vector<doc_update> docs, write_done done) override;
  void purge_docs(std::vector<purge_info> reqs, purge_done done) override;
  result<purge_page> purge_infos(uint64_t since, uint32_t limit) override;
  status set_purged_infos_limit(uint32_t limit) override;
  void start_summary(answer<shard_summary> done) override;
  void start_changes(const changes_request& req, answer<changes_page> done) override;
  void start_resolve_since(const std::string& uuid_prefix, uint64_t seq, answer<resolved_since> done) override;
  void start_all_docs(const all_docs_request& req, answer<all_docs_page> done) override;
  void start_time_seq(bool reset, answer<time_seq_state> done) override;
  void start_view(const view_copy_request& req, answer<view_page> done) override;
  void start_mango(const mango_copy_request& req, answer<mango_page> done) override;
  void start_search(const search_copy_request& req, answer<search_copy_page> done) override;

 private:
  std::chrono::steady_clock::time_point deadline() const { return mono::now() + timeout_; }
  // Release 0.2 reads documents and _local documents through readDoc; what it cannot do at all:
  status older_release(const char* what) const;
  result<doc_read> legacy(const doc_request& req);
  result<std::vector<doc_copy>> legacy_open_docs(const std::vector<std::string>& ids);

  remote_shards& rpc_;
  std::string node_, db_, range_;
  std::chrono::milliseconds timeout_;
};

}  // namespace settee
