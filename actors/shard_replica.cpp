#include "actors/shard_replica.hpp"

#include <caf/all.hpp>

#include <utility>
#include <vector>

#include "actors/messages.hpp"
#include "node/log.hpp"

namespace settee {

namespace {

bool writes_design_doc(const std::vector<write_op*>& ops) {
  for (const write_op* op : ops)
    for (const auto& d : op->docs)
      if (d.id.compare(0, 8, "_design/") == 0) return true;
  return false;
}

struct replica_state {
  std::shared_ptr<shard_store> store;
  const clock* clk = nullptr;
  replica_limits limits;
  change_notifier* notifier = nullptr;
  std::string notify_key;
  std::vector<pending_write> pending;
  size_t pending_docs = 0;
  size_t pending_bytes = 0;
  bool commit_scheduled = false;

  void commit() {
    if (pending.empty()) return;
    std::vector<write_op*> ops;
    ops.reserve(pending.size());
    for (auto& p : pending) ops.push_back(p.op.get());
    status st = store->commit(ops, clk->now_s());
    if (!st) log::error("commit failed on " + store->path() + ": " + st.reason);
    // Feeds and the update log learn of the commit before any writer is answered: once a write is
    // acknowledged, its database is marked for _db_updates.
    if (notifier && st) {
      notifier->notify(notify_key);
      if (writes_design_doc(ops)) notifier->design_changed();
    }
    for (auto& p : pending) {  // outcomes travel inside each op
      if (p.on_done) p.on_done();
    }
    pending.clear();
    pending_docs = pending_bytes = 0;
  }
};

size_t op_bytes(const write_op& op) {
  size_t n = op.security.size() + op.local.body.size();
  for (auto& d : op.docs) n += d.body.size() + d.id.size();
  return n;
}

caf::behavior replica_impl(caf::stateful_actor<replica_state>* self, std::shared_ptr<shard_store> store,
                           const clock* clk, replica_limits limits, change_notifier* notifier, std::string key) {
  self->state.store = std::move(store);
  self->state.notifier = notifier;
  self->state.notify_key = std::move(key);
  self->state.clk = clk;
  self->state.limits = limits;
  return {
      [=](write_atom, pending_write& w) {
        auto& s = self->state;
        s.pending_docs += w.op->what == write_op::kind::docs ? w.op->docs.size() : 1;
        s.pending_bytes += op_bytes(*w.op);
        s.pending.push_back(std::move(w));
        if (s.pending_docs >= s.limits.batch_max_docs || s.pending_bytes >= s.limits.batch_max_bytes) {
          s.commit();
        } else if (!s.commit_scheduled) {
          s.commit_scheduled = true;
          self->send(self, commit_atom_v);
        }
      },
      [=](commit_atom) {
        self->state.commit_scheduled = false;
        self->state.commit();
      },
      [=](shutdown_atom) {
        self->state.commit();
        self->state.store.reset();
        self->quit();
      },
  };
}

}  // namespace

caf::actor spawn_shard_replica(caf::actor_system& sys, std::shared_ptr<shard_store> store, const clock& clk,
                               replica_limits limits, change_notifier* notifier, std::string notify_key) {
  // Scheduled, not detached: a write transaction never spans two messages, so any scheduler thread
  // may run it, and open shards cost no thread each.
  return sys.spawn(replica_impl, std::move(store), &clk, limits, notifier, std::move(notify_key));
}

}  // namespace settee
