#include "actors/shard_replica.hpp"

#include <caf/all.hpp>

#include <utility>
#include <vector>

#include "actors/messages.hpp"
#include "node/log.hpp"

namespace settee {

namespace {

bool writes_design_doc(const std::vector<pending_write>& batch) {
  for (const pending_write& p : batch)
    for (const auto& d : p.op->docs)
      if (d.id.compare(0, 8, "_design/") == 0) return true;
  return false;
}

size_t op_docs(const write_op& op) {
  return op.what == write_op::kind::docs ? op.docs.size() : 1;
}

size_t op_bytes(const write_op& op) {
  size_t n = op.security.size() + op.local.body.size();
  for (auto& d : op.docs) n += d.body.size() + d.id.size();
  return n;
}

}  // namespace

write_lane::write_lane(std::shared_ptr<shard_store> store, const clock& clk, replica_limits limits,
                       change_notifier* notifier, std::string notify_key)
    : clk_(clk), limits_(limits), notifier_(notifier), notify_key_(std::move(notify_key)), store_(std::move(store)) {}

write_lane::~write_lane() = default;

void write_lane::set_actor(caf::actor a) {
  std::lock_guard<std::mutex> lock(mu_);
  actor_ = std::move(a);
}

void write_lane::submit(pending_write w, bool here) {
  std::unique_lock<std::mutex> lock(mu_);
  if (closed_) return;
  queue_.push_back(std::move(w));
  if (leading_ || scheduled_) return;  // the commit under way, or the actor's next, takes it
  if (here && !crowded_) {
    leading_ = true;
    lead(lock);
    return;
  }
  hand_to_actor(lock);
}

void write_lane::commit_from_actor() {
  std::unique_lock<std::mutex> lock(mu_);
  scheduled_ = false;
  if (leading_ || queue_.empty() || closed_) return;  // a commit in place hands over when it ends
  leading_ = true;
  lead(lock);
}

void write_lane::lead(std::unique_lock<std::mutex>& lock) {
  std::vector<pending_write> batch = take_batch_locked();
  std::shared_ptr<shard_store> store = store_;
  lock.unlock();
  commit(batch, *store);
  batch.clear();  // callbacks' owners let go outside the lock
  lock.lock();
  leading_ = false;
  crowded_ = !queue_.empty();
  idle_.notify_all();
  if (queue_.empty() || scheduled_ || closed_) return;
  // What queued meanwhile is the actor's: a thread that committed in place goes back to its request.
  hand_to_actor(lock);
  lock.lock();
}

void write_lane::hand_to_actor(std::unique_lock<std::mutex>& lock) {
  scheduled_ = true;
  caf::actor a = actor_;
  lock.unlock();
  caf::anon_send(a, commit_atom_v);
}

std::vector<pending_write> write_lane::take_batch_locked() {
  std::vector<pending_write> batch;
  size_t docs = 0, bytes = 0, n = 0;
  while (n < queue_.size() && (n == 0 || (docs < limits_.batch_max_docs && bytes < limits_.batch_max_bytes))) {
    docs += op_docs(*queue_[n].op);
    bytes += op_bytes(*queue_[n].op);
    ++n;
  }
  batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.begin() + n));
  queue_.erase(queue_.begin(), queue_.begin() + n);
  return batch;
}

void write_lane::commit(std::vector<pending_write>& batch, shard_store& store) {
  if (batch.empty()) return;
  std::vector<write_op*> ops;
  ops.reserve(batch.size());
  for (auto& p : batch) ops.push_back(p.op.get());
  status st = store.commit(ops, clk_.now_s());
  if (!st) log::error("commit failed on " + store.path() + ": " + st.reason);
  // Feeds and the update log learn of the commit before any writer is answered: once a write is
  // acknowledged, its database is marked for _db_updates.
  if (notifier_ && st) {
    notifier_->notify(notify_key_);
    if (writes_design_doc(batch)) notifier_->design_changed();
  }
  for (auto& p : batch) {  // outcomes travel inside each op
    if (p.on_done) p.on_done();
  }
}

void write_lane::close() {
  std::unique_lock<std::mutex> lock(mu_);
  closed_ = true;
  idle_.wait(lock, [&] { return !leading_; });
  std::shared_ptr<shard_store> store = std::move(store_);
  actor_ = nullptr;  // the actor and its lane held each other
  while (!queue_.empty() && store) {
    std::vector<pending_write> batch = take_batch_locked();
    lock.unlock();
    commit(batch, *store);
    batch.clear();
    lock.lock();
  }
}

namespace {

caf::behavior replica_impl(caf::event_based_actor* self, std::shared_ptr<write_lane> lane) {
  return {
      [=](write_atom, pending_write& w) { lane->submit(std::move(w), false); },
      [=](commit_atom) { lane->commit_from_actor(); },
      [=](shutdown_atom) {
        lane->close();
        self->quit();
      },
  };
}

}  // namespace

shard_writer spawn_shard_replica(caf::actor_system& sys, std::shared_ptr<shard_store> store, const clock& clk,
                                 replica_limits limits, change_notifier* notifier, std::string notify_key) {
  auto lane = std::make_shared<write_lane>(std::move(store), clk, limits, notifier, std::move(notify_key));
  // Scheduled, not detached: a write transaction never spans two messages, so any scheduler thread
  // may run it, and open shards cost no thread each.
  caf::actor a = sys.spawn(replica_impl, lane);
  lane->set_actor(a);
  return shard_writer{std::move(a), std::move(lane)};
}

}  // namespace settee
