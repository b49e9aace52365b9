// local_copy: this node's copy of a shard range as a shard_copy. Reads are LMDB snapshots taken
// on the caller's thread (each call its own, short-lived: nothing is held between calls); writes
// go to the range's replica actor and wait for the commit (up to the deadline given here).
// The RPC server answers other nodes with the same functions, so a peer's request and this
// node's coordinator run the same code.
#pragma once
#include <chrono>

#include "actors/index_readers.hpp"
#include "actors/shard_copy.hpp"
#include "actors/shard_registry.hpp"

namespace settee {

struct db_meta;

class local_copy final : public shard_copy {
 public:
  local_copy(shard_handle shard, std::string node, std::chrono::milliseconds timeout)
      : shard_(std::move(shard)), node_(std::move(node)), timeout_(timeout) {}

  const std::string& node() const override { return node_; }
  bool local() const override { return true; }
  bool hashes_sha256() const override { return true; }
  const shard_handle& handle() const { return shard_; }
  // Its views and JSON indexes are read through `readers`: the copy is range `range` of `db`,
  // which must outlive the calls of start_view and start_mango (the coordinator's call, or the
  // RPC call, that made the copy).
  void serve_indexes(const db_meta* db, size_t range, index_readers* readers) {
    db_ = db;
    range_ = range;
    readers_ = readers;
  }
  void start_view(const view_copy_request& req, answer<view_page> done) override;
  void start_mango(const mango_copy_request& req, answer<mango_page> done) override;
  void start_search(const search_copy_request& req, answer<search_copy_page> done) override;

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
  void update_docs(std::vector<doc_update> docs, write_done done) override;
  result<std::string> read_blob(const std::string& key, uint64_t offset, uint64_t length) override;
  result<bool> stage_blob(const std::string& key, uint64_t offset, const std::string& piece) override;
  status drop_staged(const std::string& key) override;
  void purge_docs(std::vector<purge_info> reqs, purge_done done) override;
  result<purge_page> purge_infos(uint64_t since, uint32_t limit) override;
  status set_purged_infos_limit(uint32_t limit) override;

  // The parts that need no waiting, for callers on an event loop (the RPC server).
  result<std::vector<doc_copy>> read_docs(const std::vector<std::string>& ids, doc_bodies bodies) const;
  // Hands `op` to the replica; `done` runs once after the commit (op->st and results final), or
  // with op->st set when the replica stopped first. Never blocks.
  void submit(std::shared_ptr<write_op> op, std::function<void()> done) const;

 private:
  shard_handle shard_;
  std::string node_;
  std::chrono::milliseconds timeout_;
  const db_meta* db_ = nullptr;
  size_t range_ = 0;
  index_readers* readers_ = nullptr;
};

}  // namespace settee
