#include "actors/internal_replication.hpp"

#include <cstdlib>

#include "actors/bridge.hpp"

namespace settee {

replication_target local_target(const shard_handle& target, std::chrono::milliseconds timeout) {
  replication_target t;
  t.uuid = target.store->header().shard_uuid;
  t.apply = [target, timeout](std::vector<doc_update>& updates) -> result<size_t> {
    auto write = std::make_shared<write_op>();
    write->docs = std::move(updates);
    // A merge never conflicts: any failure is real.
    if (auto st = write_one(target.writer, write, timeout); !st) return st;
    return count_added(write->results);
  };
  return t;
}

size_t count_added(const std::vector<doc_result>& results) {
  size_t n = 0;
  for (auto& r : results) n += r.st && r.added;
  return n;
}

std::string checkpoint_id(const std::string& target_uuid) {
  return "_local/shard-sync-" + target_uuid;
}

namespace {

// The checkpoint body is {"seq":N}; storage/ stays free of a JSON library, so it is written and
// read by hand.
std::string checkpoint_body(uint64_t seq) {
  return "{\"seq\":" + std::to_string(seq) + "}";
}

bool parse_checkpoint(const std::string& body, uint64_t& seq) {
  const std::string key = "{\"seq\":";
  if (body.rfind(key, 0) != 0) return false;
  char* end = nullptr;
  seq = std::strtoull(body.c_str() + key.size(), &end, 10);
  return end && *end == '}';
}

struct checkpoint {
  uint64_t seq = 0;
  uint64_t rev = 0;  // of the _local doc
};

checkpoint load(const shard_handle& source, const std::string& id) {
  checkpoint cp;
  local_doc d;
  auto snap = source.store->read();
  if (snap && snap->local(id, d)) {
    cp.rev = d.rev;
    if (!parse_checkpoint(d.body, cp.seq)) cp.seq = 0;  // unreadable: start over (merging is idempotent)
  }
  return cp;
}

}  // namespace

uint64_t read_checkpoint(const shard_handle& source, const std::string& target_uuid) {
  return load(source, checkpoint_id(target_uuid)).seq;
}

result<replication_result> push_changes(const shard_handle& source, const replication_target& target,
                                        std::chrono::milliseconds timeout, size_t batch_docs) {
  std::string id = checkpoint_id(target.uuid);
  checkpoint cp = load(source, id);
  replication_result out;
  out.from_seq = out.to_seq = cp.seq;
  for (int round = 0; round < 1000000; ++round) {  // bounded; ends when caught up
    auto snap = source.store->read();
    if (!snap) return snap.error();
    replication_batch batch = snap->read_for_replication(out.to_seq, batch_docs);
    if (batch.docs == 0) break;
    auto applied = target.apply(batch.updates);
    if (!applied) return applied.error();
    // Checkpoint only after the target committed (synced) the batch.
    auto save = std::make_shared<write_op>();
    save->what = write_op::kind::local;
    save->local = {id, checkpoint_body(batch.last_seq), false, cp.rev};
    if (auto st = write_one(source.writer, save, timeout); !st) return st;
    cp.rev = save->local_rev;
    out.to_seq = batch.last_seq;
    out.docs += batch.docs;
    out.applied += *applied;
  }
  return out;
}

}  // namespace settee
