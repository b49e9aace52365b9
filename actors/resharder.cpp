#include "actors/resharder.hpp"

#include <algorithm>

#include <unistd.h>

#include "actors/reshard_internal.hpp"
#include "node/crypto.hpp"
#include "node/log.hpp"
#include "storage/import_batch.hpp"

namespace settee {

using namespace reshard_internal;

const std::vector<std::string>& resharder::split_states() {
  return split_state_names();
}

resharder::resharder(coordinator& coord, shard_registry& shards, job_runner& runner, job_store& store, const clock& clk,
                     std::string node, std::string data_dir)
    : coord_(coord),
      shards_(shards),
      runner_(runner),
      store_(store),
      clk_(clk),
      node_(std::move(node)),
      data_dir_(std::move(data_dir)) {}

resharder::~resharder() {
  stop();
}

void resharder::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (const std::string& id : runner_.ids(lane + std::string(" "))) runner_.cancel(id, true);
}

status resharder::start() {
  auto saved = store_.load();
  if (!saved) return saved.error();
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_ = saved->state.running;
    reason_ = saved->state.reason;
    for (split_job& j : saved->jobs) {
      if (!terminal(j) && j.split_state != "new") {
        // The map may or may not have switched: the catalog says.
        if (state_index(j.split_state) > state_index("update_shardmap") || switched(j)) {
          note(j, "restart", "the shard map had switched: going forward");
          // The state it was in may not have finished: it runs again (those after the switch can).
          const auto& all = split_states();
          const size_t at = state_index(j.split_state);
          j.split_state = all[std::max(state_index("update_shardmap"), at > 0 ? at - 1 : 0)];
        } else {  // the copies made here continue from the last parent seq each holds
          note(j, "restart", "the shard map had not switched: copying on");
          j.split_state = "new";
        }
        if (auto st = save_locked(j); !st) return st;
      }
      const std::string id = j.id;
      jobs_.emplace(id, std::move(j));
    }
  }
  submit_runnable();
  return {};
}

json resharder::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return json{{"state", running_ ? "running" : "stopped"}, {"reason", reason_.empty() ? json(nullptr) : json(reason_)}};
}

reshard_state resharder::run_state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {running_, reason_};
}

status resharder::set_state(bool running, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_ = running;
    reason_ = running ? reason : (reason.empty() ? "Shard splitting stopped on the cluster by user" : reason);
    if (auto st = store_.save(reshard_state{running_, reason_}); !st) return st;
    for (auto& [id, j] : jobs_) {
      if (terminal(j) || j.stopped_by_user) continue;
      j.job_state = running ? "running" : "stopped";
      j.reason = running ? "" : reason_;
      note(j, j.job_state);
      if (auto st = save_locked(j); !st) return st;
    }
  }
  settle();
  return {};
}

result<split_job> resharder::create_requested(const new_job& j) {
  if (j.type != "split" && j.type != "move") return status{errc::bad_request, "a job is a split or a move"};
  auto db = coord_.catalog().lookup(j.db);
  if (!db) return db.error();
  for (size_t i = 0; i < db->ranges.size(); ++i) {
    if (db->shard_id(i) != j.shard) continue;
    return j.type == "split" ? create(*db, i, j.suffix, j.leader) : create_move(*db, i, j.source);
  }
  return status{errc::not_found, "Database " + db->name + " has no open shard " + j.shard};
}

result<split_job> resharder::create(const db_meta& db, size_t index, int64_t suffix, const std::string& leader) {
  if (db.everywhere() || !db.entry) return status{errc::bad_request, "System databases are not split"};
  const std::string source = db.shard_id(index);
  const auto& nodes = db.nodes[index];
  if (std::find(nodes.begin(), nodes.end(), node_) == nodes.end()) {
    return status{errc::not_implemented, "Shard " + shard_name(db.name, source) + " has no copy on " + node_ +
                                             ": create the job on a node that holds one"};
  }
  if (!db.ranges[index].halves()) return status{errc::bad_request, "Shard " + source + " cannot be split further"};
  split_job j;
  j.db = db.name;
  j.created = db.created;
  j.source = source;
  j.child_suffix = suffix ? suffix : clk_.now_ms();
  if (nodes.size() > 1) {
    j.leader = leader.empty() ? node_ : leader;
    if (leader.empty()) j.copies = nodes;
  }
  j.id = "001-" + crypto::sha256_hex(node_ + " " + db.name + " " + source + " " + std::to_string(clk_.now_ms()));
  return add_job(std::move(j), "A job splitting ");
}

result<split_job> resharder::add_job(split_job j, const std::string& conflict) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, other] : jobs_) {
      if (other.db == j.db && other.created == j.created && other.source == j.source && !terminal(other))
        return status{errc::conflict, conflict + shard_name(j.db, j.source) + " exists already: " + id};
    }
    j.start_time = clk_.now_s();
    note(j, "new");
    j.job_state = running_ ? "running" : "stopped";
    if (!running_) j.reason = reason_;
    note(j, j.job_state);
    if (auto st = save_locked(j); !st) return st;
    jobs_.emplace(j.id, j);
  }
  submit_runnable();
  return j;
}

result<split_job> resharder::create_move(const db_meta& db, size_t index, const std::string& from) {
  if (db.everywhere() || !db.entry) return status{errc::bad_request, "System databases are not moved"};
  const std::string source = db.shard_id(index);
  const auto& nodes = db.nodes[index];
  if (std::find(nodes.begin(), nodes.end(), from) == nodes.end())
    return status{errc::bad_request, "`source` " + from + " holds no copy of " + shard_name(db.name, source)};
  if (std::find(nodes.begin(), nodes.end(), node_) != nodes.end())
    return status{errc::bad_request,
                  "`target` " + node_ + " holds a copy of " + shard_name(db.name, source) + " already"};
  split_job j;
  j.type = "move";
  j.db = db.name;
  j.created = db.created;
  j.source = source;
  j.from_node = from;
  j.id = "001-" + crypto::sha256_hex("move " + from + " " + node_ + " " + db.name + " " + source + " " +
                                     std::to_string(clk_.now_ms()));
  return add_job(std::move(j), "A job for ");
}

result<std::pair<db_meta, size_t>> resharder::own_copy(const std::string& db, const std::string& range) const {
  auto m = coord_.catalog().lookup(db);
  if (!m) return m.error();
  auto i = m->range_named(range);
  if (!i || !m->hosts(*i)) return status{errc::not_found, "no copy of " + db + " range " + range + " on " + node_};
  return std::make_pair(std::move(*m), *i);
}

result<std::string> resharder::export_copy(const std::string& db, const std::string& range, uint64_t since,
                                           bool with_local) {
  auto at = own_copy(db, range);
  if (!at) return at.error();
  auto h = coord_.shard(at->first, at->second);
  if (!h) return h.error();
  auto snap = h->store->read();
  if (!snap) return snap.error();
  auto batch = import_batch::read(*snap, since, changes_per_step, replication_batch_bytes, with_local);
  if (!batch) return batch.error();
  return batch->encode();
}

result<uint64_t> resharder::seal_copy(const std::string& db, const std::string& range, bool seal) {
  auto at = own_copy(db, range);
  if (!at) return at.error();
  const std::string& path = at->first.shard_paths[at->second];
  auto h = coord_.shard(at->first, at->second);  // open first: a store opens sealed if recorded so
  if (!h) return h.error();
  const bool was = h->store->sealed();
  if (seal) {
    shards_.seal(path);
  } else {
    shards_.unseal(path);
    if (was) log::info("move of " + db + " range " + range + " called off: the copy here takes writes again");
  }
  // The seal is recorded: a restart of this node before the target switched the map must not take writes.
  if (auto st = drain(*h, seal); !st) return st;
  return h->store->header().update_seq;
}

status resharder::retire_copy(const std::string& db, const std::string& shard, uint64_t end_seq, bool remove) {
  auto m = coord_.catalog().lookup(db);
  if (!m) return m.error();
  auto at = m->entry ? m->entry->find(shard) : std::nullopt;
  if (!at) return status{errc::not_found, "Database " + db + " has no shard " + shard};
  const auto& nodes = m->entry->shards[*at].nodes;
  if (std::find(nodes.begin(), nodes.end(), node_) != nodes.end())
    return status{errc::conflict, "the shard map on " + node_ + " still lists its copy of " + shard};
  const std::string path = path_of(db, shard);
  if (!remove) {  // feeds reading it are woken: they go on over the new map; requests finish
    wait_for_readers(path, m->key());
    return {};
  }
  if (::access(path.c_str(), F_OK) != 0) return {};  // removed already
  {
    auto h = shards_.acquire(path, m->created, m->key());
    if (!h) return h.error().code == errc::db_not_found ? status{} : h.error();
    const uint64_t seq = h->store->header().update_seq;
    if (seq != end_seq) {
      log::error("the moved copy of " + db + " " + shard + " here reached seq " + std::to_string(seq) +
                 " after the move took it at " + std::to_string(end_seq) + ": kept at " + path);
      return status{errc::internal, "the source copy on " + node_ + " moved on to seq " + std::to_string(seq) +
                                        " after the move took it at seq " + std::to_string(end_seq) + "; it is kept (" +
                                        path + ")"};
    }
  }
  shards_.remove(path);
  log::info("moved copy of " + db + " " + shard + " removed here");
  return {};
}

std::vector<split_job> resharder::jobs() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<split_job> out;
  for (auto& [id, j] : jobs_) out.push_back(j);
  return out;
}

result<split_job> resharder::job(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return status{errc::not_found, "Job not found"};
  return it->second;
}

status resharder::set_job_state(const std::string& id, bool running, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return status{errc::not_found, "Job not found"};
    split_job& j = it->second;
    if (terminal(j)) return {};
    j.stopped_by_user = !running;
    j.job_state = running && running_ ? "running" : "stopped";
    j.reason = running ? (running_ ? "" : reason_) : (reason.empty() ? "Stopped by user" : reason);
    note(j, j.job_state);
    if (auto st = save_locked(j); !st) return st;
  }
  settle();
  return {};
}

status resharder::remove(const std::string& id) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return status{errc::not_found, "Job not found"};
  split_job j = it->second;
  jobs_.erase(it);  // its step under way halts at its next check
  if (auto st = store_.remove(id); !st) return st;
  lock.unlock();
  runner_.cancel(lane + std::string(" ") + id, true);  // and ends before its children go
  // Before the switch the children are half made: they go. After it the parent is closed: it goes
  // (a move's source copy, on the node it left).
  if (!terminal(j) && state_index(j.split_state) < state_index("source_delete")) {
    if (!switched(j))
      drop_children(j);
    else if (auto from = j.move() ? peer(j.from_node) : nullptr)
      (void)from->retire_copy(j.db, j.source, j.end_seq, true);
    else if (!j.move())
      shards_.remove(path_of(j.db, j.source));
  }
  return {};
}

bool resharder::runnable_locked(const split_job& j) const {
  return running_ && !stopping_ && !terminal(j) && !j.stopped_by_user && j.job_state != "stopped";
}

void resharder::note(split_job& j, const std::string& type, const std::string& detail) {
  j.update_time = clk_.now_s();
  j.history.push_back({j.update_time, type, detail});
  if (j.history.size() > 20) j.history.erase(j.history.begin() + 1);  // the first (new) stays
}

status resharder::save_locked(const split_job& j) {
  return store_.save(j);
}

// A split or move job in the node's job runner: each step is one state (resharder::step).
class resharder::reshard_task final : public job {
 public:
  reshard_task(resharder& owner, std::string id, json row) : owner_(owner), id_(std::move(id)), row_(std::move(row)) {}
  job_next step(job_context& ctx) override {
    mem_.ctx = &ctx;
    job_next next = owner_.step(id_, ctx, mem_);
    mem_.ctx = nullptr;
    return next;
  }
  json task() const override { return row_; }
  // A job stopped and started again while its last step ran is submitted again here.
  void ended(job_next::kind, const std::string&) override { owner_.submit_runnable(); }

 private:
  resharder& owner_;
  std::string id_;
  json row_;
  step_memory mem_;
};

json resharder::task_row(const split_job& j) const {
  json target = json::array();
  for (auto& t : j.targets()) target.push_back(shard_name(j.db, t));
  json info{{"type", j.move() ? "shard_move" : "shard_split"},
            {"job_id", j.id},
            {"source", shard_name(j.db, j.source)},
            {"target", std::move(target)},
            {"phase", j.split_state},
            {"changes_done", 0},
            {"total_changes", 0},
            {"progress", 0}};
  if (j.move()) {  // the copy moves between nodes; the shard keeps its name
    info["source_node"] = j.from_node;
    info["target_node"] = node_;
  }
  return info;
}

void resharder::settle() {
  wake_.notify_all();  // a follower waiting for its leader's switch looks again
  std::vector<std::string> halted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& rid : runner_.ids(lane + std::string(" "))) {
      auto it = jobs_.find(rid.substr(std::string(lane).size() + 1));
      if (it == jobs_.end() || !runnable_locked(it->second)) halted.push_back(rid);
    }
  }
  for (const std::string& rid : halted) runner_.cancel(rid);  // a running one halts at its next check
  submit_runnable();
}

void resharder::submit_runnable() {
  std::vector<std::pair<std::string, json>> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, j] : jobs_)
      if (runnable_locked(j)) ready.emplace_back(id, task_row(j));
  }
  for (auto& [id, row] : ready)
    runner_.submit(lane + std::string(" ") + id, lane, std::make_shared<reshard_task>(*this, id, row));
}

}  // namespace settee
