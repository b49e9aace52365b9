// Helpers for tests of a shard file (tests/unit/shard_store_test.cpp, view_index_test.cpp): a
// store opened with a fixed creation time, updates, and one committed write.
#pragma once
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "storage/shard_store.hpp"

namespace settee::testing {

inline std::shared_ptr<shard_store> open_store(const std::string& path, const std::string& node = "n1@h",
                                               bool time_seq_enabled = true) {
  store_options o;
  o.node_name = node;
  o.time_seq_enabled = time_seq_enabled;
  o.map_size_bytes = 64ull << 20;
  o.created_at = 1700000000;
  auto s = shard_store::open(path, o);
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().reason));
  return *s;
}

inline doc_update upd(std::string id, std::string body, std::vector<rev_id> revs = {}, bool deleted = false) {
  doc_update u;
  u.id = std::move(id);
  u.body = std::move(body);
  u.revs = std::move(revs);
  u.deleted = deleted;
  return u;
}

inline std::vector<doc_result> write(shard_store& s, std::vector<doc_update> docs, int64_t now = 1700000100) {
  write_op op;
  op.docs = std::move(docs);
  REQUIRE(s.commit({&op}, now));
  REQUIRE(op.st);
  return op.results;
}

}  // namespace settee::testing
