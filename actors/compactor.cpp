#include "actors/compactor.hpp"

#include <future>

#include "node/log.hpp"

namespace settee {

compactor::compactor(task_list& tasks, const clock& clk, std::string node_name, size_t docs_per_step)
    : tasks_(tasks), clk_(clk), node_(std::move(node_name)), docs_per_step_(std::max<size_t>(1, docs_per_step)) {
  thread_ = std::thread([this] { run(); });
}

compactor::~compactor() {
  stop();
}

void compactor::enqueue(const std::string& db, const std::string& shard, std::shared_ptr<local_copy> copy) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_ || !shards_.insert(shard).second) return;
  dbs_.insert(db);
  queue_.push_back({db, shard, std::move(copy)});
  cv_.notify_one();
}

void compactor::enqueue_db(coordinator& coord, const db_meta& db) {
  for (size_t r = 0; r < db.ranges.size(); ++r) {
    if (!db.hosts(r)) continue;
    for (const copy_ptr& copy : coord.copies(db, r)) {
      auto local = std::dynamic_pointer_cast<local_copy>(copy);
      if (!local) continue;
      enqueue(db.name, "shards/" + db.ranges[r].name() + "/" + db.name + "." + std::to_string(db.suffixes[r]),
              std::move(local));
    }
  }
}

bool compactor::running(const std::string& db) const {
  std::lock_guard<std::mutex> lock(mu_);
  return dbs_.count(db) > 0;
}

void compactor::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void compactor::run() {
  for (;;) {
    job j;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      j = std::move(queue_.front());
      queue_.pop_front();
    }
    compact(j);
    std::lock_guard<std::mutex> lock(mu_);
    shards_.erase(j.shard);
    dbs_.erase(dbs_.find(j.db));
  }
}

void compactor::compact(const job& j) {
  const shard_header h = j.copy->handle().store->header();
  const uint64_t total = h.doc_count + h.doc_del_count;
  const int64_t started = clk_.now_s();
  uint64_t task = tasks_.add(json{{"type", "database_compaction"},
                                  {"node", node_},
                                  {"database", j.shard},
                                  {"phase", "document copy"},
                                  {"changes_done", 0},
                                  {"total_changes", total},
                                  {"progress", 0},
                                  {"started_on", started},
                                  {"updated_on", started}});
  uint64_t done = 0;
  std::string from;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
    }
    auto op = std::make_shared<write_op>();
    op->what = write_op::kind::compact;
    op->compact_from = from;
    op->compact_limit = docs_per_step_;
    std::promise<void> committed;
    j.copy->submit(op, [&committed] { committed.set_value(); });
    committed.get_future().wait();
    if (!op->st) {
      log::warning("compaction of " + j.shard + " stopped: " + op->st.reason);
      break;
    }
    done += op->compact_visited;
    tasks_.update(task, json{{"changes_done", done},
                             {"progress", total ? std::min<uint64_t>(100, done * 100 / total) : 100},
                             {"updated_on", clk_.now_s()}});
    if (op->compact_next.empty()) break;
    from = std::move(op->compact_next);
  }
  tasks_.remove(task);
}

}  // namespace settee
