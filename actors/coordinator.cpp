#include "actors/coordinator.hpp"

#include "actors/bridge.hpp"

namespace settee {

coordinator::coordinator(db_catalog& catalog, shard_registry& shards, std::chrono::milliseconds timeout)
    : catalog_(catalog), shards_(shards), timeout_(timeout) {}

result<shard_handle> coordinator::shard(const db_meta& db, size_t index) {
  return shards_.acquire(db.shard_paths[index], db.created, db.key());
}

size_t coordinator::shard_index(const db_meta& db, std::string_view doc_id) const {
  return range_index(db.ranges, hash_doc_id(doc_id));
}

result<shard_handle> coordinator::shard_for(const db_meta& db, std::string_view doc_id) {
  return shard(db, shard_index(db, doc_id));
}

result<shard_store::snapshot> coordinator::read_for(const db_meta& db, std::string_view doc_id) {
  auto h = shard_for(db, doc_id);
  if (!h) return h.error();
  return h->store->read();
}

status coordinator::update_docs(const db_meta& db, std::vector<doc_update> docs, std::vector<doc_result>& out) {
  // Group by shard, remembering each doc's input position.
  std::vector<std::shared_ptr<write_op>> ops(db.q);
  std::vector<std::vector<size_t>> positions(db.q);
  for (size_t i = 0; i < docs.size(); ++i) {
    size_t s = shard_index(db, docs[i].id);
    if (!ops[s]) ops[s] = std::make_shared<write_op>();
    ops[s]->docs.push_back(std::move(docs[i]));
    positions[s].push_back(i);
  }
  std::vector<write_request> requests;
  std::vector<shard_handle> held;  // keep shards open while writes are in flight
  for (size_t s = 0; s < db.q; ++s) {
    if (!ops[s]) continue;
    auto h = shard(db, s);
    if (!h) return h.error();
    requests.emplace_back(h->writer, ops[s]);
    held.push_back(*h);
  }
  if (auto st = write_all(requests, timeout_); !st) return st;
  out.assign(docs.size(), doc_result{});
  for (size_t s = 0; s < db.q; ++s) {
    if (!ops[s]) continue;
    if (!ops[s]->st) return ops[s]->st;
    for (size_t k = 0; k < positions[s].size(); ++k) out[positions[s][k]] = std::move(ops[s]->results[k]);
  }
  return {};
}

result<uint64_t> coordinator::write_local(const db_meta& db, local_update u) {
  auto h = shard_for(db, u.id);
  if (!h) return h.error();
  auto op = std::make_shared<write_op>();
  op->what = write_op::kind::local;
  op->local = std::move(u);
  if (auto st = write_one(h->writer, op, timeout_); !st) return st;
  return op->local_rev;
}

status coordinator::write_every_shard(const db_meta& db, const std::function<void(write_op&)>& fill) {
  std::vector<write_request> requests;
  std::vector<std::shared_ptr<write_op>> ops;
  std::vector<shard_handle> held;  // keep shards open while writes are in flight
  for (size_t s = 0; s < db.q; ++s) {
    auto h = shard(db, s);
    if (!h) return h.error();
    auto op = std::make_shared<write_op>();
    fill(*op);
    requests.emplace_back(h->writer, op);
    ops.push_back(op);
    held.push_back(*h);
  }
  if (auto st = write_all(requests, timeout_); !st) return st;
  for (auto& op : ops)
    if (!op->st) return op->st;
  return {};
}

status coordinator::set_security(const db_meta& db, const std::string& security_json) {
  return write_every_shard(db, [&](write_op& op) {
    op.what = write_op::kind::security;
    op.security = security_json;
  });
}

status coordinator::set_revs_limit(const db_meta& db, uint32_t limit) {
  return write_every_shard(db, [&](write_op& op) {
    op.what = write_op::kind::revs_limit;
    op.revs_limit = limit;
  });
}

}  // namespace settee
