#include "actors/resharder.hpp"

#include <algorithm>
#include <cstdlib>

#include <unistd.h>

#include "actors/bridge.hpp"
#include "node/clock.hpp"
#include "node/crypto.hpp"
#include "node/log.hpp"
#include "storage/import_batch.hpp"
#include "storage/time_seq.hpp"

namespace settee {

namespace {

constexpr const char* job_prefix = "_local/reshard-job/";
constexpr const char* state_doc = "_local/reshard-state";
// Changes per copy step (one commit on the target, one batch of a move). 2,000 made the writer's
// p99 2.3-2.9x its value before the job; 500 keeps it under 2x for a job ~1.5x longer
// (docs/BENCHMARKS.md "Shard split under writes").
constexpr size_t changes_per_step = 500;
constexpr int max_transient = 60;  // a move waits this many seconds for the other node to answer

// A job step that needs member `node`, which is not one (or this node runs alone).
status no_member(const std::string& node) {
  return {errc::unavailable, node + " is not a member this node can reach"};
}

// A stop asked for while a job runs: not a failure, the job resumes from where it was.
const status halted_status{errc::unavailable, "stopped"};

bool terminal(const split_job& j) {
  return j.job_state == "completed" || j.job_state == "failed";
}

// Lets every write queued on `h` before a seal commit: one op through its writer. `record_seal`
// also records the seal in the header (a move's source), or its end.
status drain(const shard_handle& h, std::optional<bool> record_seal = std::nullopt) {
  auto op = std::make_shared<write_op>();
  op->what = write_op::kind::format;
  op->format_version = 0;
  op->seal = record_seal;
  return write_one(h.writer, op, std::chrono::seconds(60));
}

size_t state_index(const std::string& s) {
  auto& all = resharder::split_states();
  return static_cast<size_t>(std::find(all.begin(), all.end(), s) - all.begin());
}

}  // namespace

const std::vector<std::string>& resharder::split_states() {
  return split_state_names();
}

resharder::resharder(coordinator& coord, shard_registry& shards, task_list& tasks, const clock& clk, std::string node,
                     std::string data_dir)
    : coord_(coord),
      shards_(shards),
      tasks_(tasks),
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
  if (thread_.joinable()) thread_.join();
}

std::string resharder::path_of(const std::string& db, const std::string& shard_id) const {
  return db_catalog::shard_file(data_dir_, db, shard_id);
}

std::vector<std::pair<shard_range, std::string>> resharder::children_of(const split_job& j) const {
  std::vector<std::pair<shard_range, std::string>> out;
  for (const std::string& t : j.targets())
    out.emplace_back(*shard_range::parse(t.substr(0, t.find('.'))), path_of(j.db, t));
  return out;
}

bool resharder::switched(const split_job& j) const {
  auto db = coord_.catalog().find(j.db);
  if (!db || db->created != j.created || !db->entry) return false;
  auto at = db->entry->find(j.source);
  if (!at) return false;
  const shard_info& s = db->entry->shards[*at];
  if (j.move()) return std::find(s.nodes.begin(), s.nodes.end(), j.from_node) == s.nodes.end();
  return !s.open;
}

void resharder::wait_for_readers(const std::string& path, const std::string& notify_key) {
  shards_.notify(notify_key);
  for (int i = 0; i < 1000 && shards_.held(path); ++i) {
    if (i % 100 == 99) shards_.notify(notify_key);  // a feed between two reads missed the first
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::shared_ptr<cluster_member> resharder::peer(const std::string& node) const {
  return members_ ? members_->get(node) : nullptr;
}

void resharder::drop_children(const split_job& j) {
  if (j.leader == node_ && !j.copies.empty()) unseal_copies(j);
  if (j.move()) {  // the copy made here goes; the source takes writes again
    shards_.remove(path_of(j.db, j.source));
    if (auto from = peer(j.from_node)) (void)from->seal_copy(j.db, j.source.substr(0, j.source.find('.')), false);
    return;
  }
  for (auto& [range, path] : children_of(j)) shards_.remove(path);
}

status resharder::start() {
  auto h = coord_.catalog().catalog_file();
  if (!h) return h.error();
  auto snap = h->store->read();
  if (!snap) return snap.error();
  std::vector<local_doc> docs;
  snap->scan_local([&](const local_doc& d) {
    if (d.id.rfind("_local/reshard", 0) == 0) docs.push_back(d);
    return true;
  });
  if (!snap->fault()) return snap->fault();
  std::lock_guard<std::mutex> lock(mu_);
  for (const local_doc& d : docs) {
    auto body = parse_json(d.body);
    if (!body) continue;
    if (d.id == state_doc) {
      running_ = body->value("state", "running") == "running";
      reason_ = body->value("reason", "");
      continue;
    }
    auto j = split_job::from_doc(*body);
    if (!j) {
      log::error("ignoring unreadable reshard job " + d.id);
      continue;
    }
    if (!terminal(*j) && j->split_state != "new") {
      // The map may or may not have switched: the catalog says.
      if (state_index(j->split_state) > state_index("update_shardmap") || switched(*j)) {
        note(*j, "restart", "the shard map had switched: going forward");
        // The state it was in may not have finished: it runs again (those after the switch can).
        const auto& all = split_states();
        const size_t at = state_index(j->split_state);
        j->split_state = all[std::max(state_index("update_shardmap"), at > 0 ? at - 1 : 0)];
      } else {  // the copies made here continue from the last parent seq each holds
        note(*j, "restart", "the shard map had not switched: copying on");
        j->split_state = "new";
      }
      if (auto st = save_locked(*j); !st) return st;
    }
    jobs_.emplace(j->id, std::move(*j));
  }
  thread_ = std::thread([this] { run(); });
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
    if (auto st = save_state_locked(); !st) return st;
    for (auto& [id, j] : jobs_) {
      if (terminal(j) || j.stopped_by_user) continue;
      j.job_state = running ? "running" : "stopped";
      j.reason = running ? "" : reason_;
      note(j, j.job_state);
      if (auto st = save_locked(j); !st) return st;
    }
  }
  wake_.notify_all();
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
  wake_.notify_all();
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
  wake_.notify_all();
  return {};
}

status resharder::remove(const std::string& id) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return status{errc::not_found, "Job not found"};
  split_job j = it->second;
  jobs_.erase(it);  // the runner sees it gone and lets go
  if (auto st = put_local(job_prefix + id, nullptr); !st) return st;
  lock.unlock();
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

status resharder::put_local(const std::string& id, const std::string* body) {
  auto h = coord_.catalog().catalog_file();
  if (!h) return h.error();
  auto snap = h->store->read();
  if (!snap) return snap.error();
  local_doc d;
  bool had = snap->local(id, d);
  if (!body && !had) return {};
  auto op = std::make_shared<write_op>();
  op->what = write_op::kind::local;
  op->local = {id, body ? *body : "", body == nullptr, had ? d.rev : 0};
  return write_one(h->writer, op, std::chrono::seconds(60));
}

status resharder::save_locked(const split_job& j) {
  const std::string body = j.to_doc().dump();
  return put_local(job_prefix + j.id, &body);
}

status resharder::save_state_locked() {
  const std::string body = json{{"state", running_ ? "running" : "stopped"}, {"reason", reason_}}.dump();
  return put_local(state_doc, &body);
}

void resharder::enter(split_job& j, const std::string& split_state) {
  j.split_state = split_state;
  note(j, split_state);
  {  // the API shows the state the job is in (saved once it is done)
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(j.id);
    if (it != jobs_.end()) {
      it->second.split_state = j.split_state;
      it->second.history = j.history;
      it->second.update_time = j.update_time;
    }
  }
  failpoint(j, split_state);
}

void resharder::failpoint(split_job& j, const std::string& name) {
  if (const char* fail = std::getenv("SETTEE_FAILPOINT"); fail && name == fail) {
    std::lock_guard<std::mutex> lock(mu_);
    (void)save_locked(j);
    log::error("SETTEE_FAILPOINT=" + name + ": exiting now");
    std::_Exit(70);
  }
}

void resharder::run() {
  for (;;) {
    std::string next;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] {
        if (stopping_) return true;
        for (auto& [id, j] : jobs_)
          if (runnable_locked(j)) return true;
        return false;
      });
      if (stopping_) return;
      for (auto& [id, j] : jobs_) {
        if (runnable_locked(j)) {
          next = id;
          break;
        }
      }
    }
    drive(next);
  }
}

void resharder::drive(const std::string& id) {
  uint64_t task = 0;
  int transient = 0;  // transient failures in a row
  for (;;) {
    split_job j;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = jobs_.find(id);
      if (it == jobs_.end() || !runnable_locked(it->second)) break;
      j = it->second;
    }
    if (!task) {
      json target = json::array();
      for (auto& t : j.targets()) target.push_back(shard_name(j.db, t));
      json info{{"type", j.move() ? "shard_move" : "shard_split"},
                {"node", node_},
                {"job_id", j.id},
                {"source", shard_name(j.db, j.source)},
                {"target", std::move(target)},
                {"phase", j.split_state},
                {"changes_done", 0},
                {"total_changes", 0},
                {"progress", 0},
                {"started_on", clk_.now_s()},
                {"updated_on", clk_.now_s()}};
      if (j.move()) {  // the copy moves between nodes; the shard keeps its name
        info["source_node"] = j.from_node;
        info["target_node"] = node_;
      }
      task = tasks_.add(std::move(info));
    }
    const split_job before = j;  // a state that does not finish runs again from here
    status st = advance(j);
    tasks_.update(task, json{{"phase", j.split_state},
                             {"changes_done", j.copied_to},
                             {"total_changes", std::max(j.total, j.copied_to)},
                             {"progress", j.total ? std::min<uint64_t>(100, j.copied_to * 100 / j.total) : 0},
                             {"updated_on", clk_.now_s()}});
    std::unique_lock<std::mutex> lock(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) break;  // deleted meanwhile
    if (!st && st.reason == halted_status.reason && st.code == halted_status.code) {
      it->second.split_state = before.split_state;
      it->second.history = before.history;
      it->second.copied_to = j.copied_to;  // stopped: resumes from here
      break;
    }
    // The other node of a move or of a split of several copies restarting, out of reach or not
    // ready yet: the state is tried again, for a while.
    if (!st && (j.move() || !j.leader.empty()) && (st.code == errc::unavailable || st.code == errc::timeout) &&
        transient < max_transient) {
      ++transient;
      it->second.split_state = before.split_state;
      it->second.history = before.history;
      it->second.copied_to = j.copied_to;
      log::warning("reshard job " + id + " in " + j.split_state + ": " + st.reason + "; trying again");
      mono::wait_until(wake_, lock, mono::now() + std::chrono::seconds(1), [&] { return stopping_; });
      continue;
    }
    transient = st ? 0 : transient;
    // What the user changed meanwhile (a stop) wins over the runner's copy of those fields.
    j.stopped_by_user = it->second.stopped_by_user;
    if (it->second.job_state == "stopped" && !terminal(j)) j.job_state = "stopped", j.reason = it->second.reason;
    if (!st) {
      log::error("reshard job " + id + " failed in " + j.split_state + ": " + st.reason);
      j.job_state = "failed";
      j.reason = st.reason;
      note(j, "failed", st.reason);
      if (state_index(j.split_state) < state_index("wait_source_close")) {
        if (!switched(j)) drop_children(j);
      }
    }
    if (terminal(j) && task) {
      // Off the running tasks before the job reads as ended: a client that saw it completed and
      // starts the next split elsewhere must not find it still running (test_reshard_cluster, once).
      tasks_.remove(task);
      task = 0;
    }
    it->second = j;
    if (auto saved = save_locked(j); !saved) log::error("reshard job " + id + " could not be saved: " + saved.reason);
    if (terminal(j)) break;
  }
  if (task) tasks_.remove(task);
}

status resharder::advance(split_job& j) {
  const auto& all = split_states();
  size_t at = state_index(j.split_state);
  if (at + 1 >= all.size()) return {};
  const std::string next = all[at + 1];
  auto db = coord_.catalog().find(j.db);
  if (!db || db->created != j.created) return status{errc::db_not_found, "Database " + j.db + " was deleted"};
  enter(j, next);
  std::optional<size_t> source;
  for (size_t i = 0; i < db->ranges.size(); ++i)
    if (db->shard_id(i) == j.source) source = i;
  if (j.move()) return advance_move(j, *db, source, next);
  const bool leads = j.leader == node_ && !j.copies.empty(), follows = !j.leader.empty() && j.leader != node_;
  if (next == "update_shardmap" && follows) return await_switch(j);  // the leader switches for every copy
  if (next == "initial_copy" || next == "topoff1" || next == "topoff2" || next == "copy_local_docs") {
    if (!source) return status{errc::conflict, "Shard " + j.source + " is no longer open"};
    if (next == "initial_copy" && leads) unseal_copies(j);  // a restart may have left some sealed
    return copy_pass(j, *db, *source, next == "copy_local_docs");
  }
  if (next == "update_shardmap") {
    if (!source) return status{errc::conflict, "Shard " + j.source + " is no longer open"};
    return leads ? switch_copies(j) : switch_map(j);
  }
  const std::string parent_path = path_of(j.db, j.source);
  if (next == "wait_source_close") {
    // Feeds reading the parent are woken: they find it closed and go on from the children (a
    // shard feed of the parent ends). Requests under way finish; then the parent can go.
    wait_for_readers(parent_path, db->key());
    return {};
  }
  if (next == "topoff3") {
    // The parent was sealed before the last pass: nothing can have come after its end_seq.
    auto p = db->entry->find(j.source);
    auto end = p ? db->entry->shards[*p].end_seq.find(node_) : std::map<std::string, uint64_t>::const_iterator{};
    if (!p || end == db->entry->shards[*p].end_seq.end())
      return status{errc::internal, "the shard map lost " + j.source};
    auto h = shards_.acquire(parent_path, j.created, db->key());
    if (h && h->store->header().update_seq != end->second) {
      return status{errc::internal, "the sealed parent moved on to seq " +
                                        std::to_string(h->store->header().update_seq) + " after the children took " +
                                        std::to_string(end->second)};
    }
    j.copied_to = end->second;
    return {};
  }
  if (next == "source_delete") {
    shards_.remove(parent_path);
    return {};
  }
  if (next == "completed") j.job_state = "completed";
  return {};
}

status resharder::copy_pass(split_job& j, const db_meta& db, size_t index, bool with_local) {
  auto parent = coord_.shard(db, index);
  if (!parent) return parent.error();
  std::vector<shard_handle> children;
  for (auto& [range, path] : children_of(j)) {
    auto h = shards_.acquire(path, db.created, db.key());
    if (!h) return h.error();
    children.push_back(*h);
  }
  auto ranges = children_of(j);
  j.total = std::max(j.total, parent->store->header().update_seq);
  for (bool done = false; !done;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = jobs_.find(j.id);
      if (it == jobs_.end() || !runnable_locked(it->second)) return halted_status;
    }
    const shard_header header = parent->store->header();
    auto snap = parent->store->read();
    if (!snap) return snap.error();
    uint64_t reached = UINT64_MAX;
    done = true;
    for (size_t c = 0; c < children.size(); ++c) {
      auto op = std::make_shared<write_op>();
      op->what = write_op::kind::import;
      op->import = std::make_shared<import_request>();
      op->import->from = &*snap;
      op->import->keep = [r = ranges[c].first](std::string_view id) { return r.contains(hash_doc_id(id)); };
      // A child holds the parent's changes up to its update_seq (an import commits whole), so it
      // continues from there: after a restart too, and the two may differ by a step.
      op->import->since = children[c].store->header().update_seq;
      op->import->limit = changes_per_step;
      op->import->uuid = split_child_uuid(header.shard_uuid, ranges[c].first);
      if (with_local) {
        op->import->header = header;
        op->import->local_docs = true;
      }
      if (auto st = write_one(children[c].writer, op, std::chrono::seconds(600)); !st) return st;
      reached = std::min(reached, op->import->last);
      done = done && op->import->done;
    }
    j.copied_to = reached;
    j.total = std::max(j.total, header.update_seq);
  }
  return {};
}

status resharder::switch_map(split_job& j) {
  auto db = coord_.catalog().find(j.db);
  if (!db) return db.error();
  std::optional<size_t> index;
  for (size_t i = 0; i < db->ranges.size(); ++i)
    if (db->shard_id(i) == j.source) index = i;
  if (!index) return status{errc::conflict, "Shard " + j.source + " is no longer open"};
  auto parent = coord_.shard(*db, *index);
  if (!parent) return parent.error();
  // Seal, then let every write queued before the seal commit: one op through the writer.
  shards_.seal(db->shard_paths[*index]);
  if (auto st = drain(*parent); !st) return st;
  if (auto st = copy_pass(j, *db, *index, true); !st) return st;
  const uint64_t end = parent->store->header().update_seq;
  if (end != j.copied_to) return status{errc::internal, "the sealed parent still moved"};
  const std::string uuid = parent->store->header().shard_uuid;
  auto map = coord_.catalog().update_entry(j.db, j.created, [&](catalog_entry& e) {
    if (!e.split_shard(j.source, j.child_suffix, {{node_, end}}, {{node_, uuid}}, clk_.now_s()))
      return status{errc::conflict, "Shard " + j.source + " is no longer open"};
    return status{};
  });
  if (!map) return map.error();
  if (after_switch_) after_switch_();
  log::info("split " + j.db + " " + j.source + " at seq " + std::to_string(end) + " into " + j.targets()[0] + " and " +
            j.targets()[1]);
  return {};
}

result<std::pair<uint64_t, std::string>> resharder::split_seal(const std::string& db, const std::string& shard) {
  split_job j;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(jobs_.begin(), jobs_.end(), [&](const auto& kv) {
      return kv.second.db == db && kv.second.source == shard && !kv.second.move() && !terminal(kv.second);
    });
    if (it == jobs_.end()) return status{errc::not_found, "no split of " + shard_name(db, shard) + " on " + node_};
    if (it->second.split_state != "update_shardmap") {
      return status{errc::conflict,
                    "the split of " + shard_name(db, shard) + " on " + node_ + " is in " + it->second.split_state};
    }
    j = it->second;
  }
  auto at = own_copy(db, shard.substr(0, shard.find('.')));
  if (!at || at->first.shard_id(at->second) != shard)
    return status{errc::conflict, "Shard " + shard + " is no longer open on " + node_};
  const auto& [m, index] = *at;
  auto parent = coord_.shard(m, index);
  if (!parent) return parent.error();
  // Sealed (recorded: it stays sealed through a restart until the leader switches or lifts it),
  // drained, and a last pass.
  shards_.seal(m.shard_paths[index]);
  if (auto st = drain(*parent, true); !st) return st;
  if (auto st = copy_pass(j, m, index, true); !st) return st;
  const shard_header h = parent->store->header();
  if (h.update_seq != j.copied_to) return status{errc::internal, "the sealed parent still moved"};
  return std::make_pair(h.update_seq, h.shard_uuid);
}

void resharder::unseal_copies(const split_job& j) {
  const std::string range = j.source.substr(0, j.source.find('.'));
  for (const std::string& node : j.copies) {
    auto copy = peer(node);
    auto st = copy ? copy->seal_copy(j.db, range, false) : result<uint64_t>(no_member(node));
    if (!st) log::warning("split " + j.id + ": could not lift the seal on " + node + ": " + st.error().reason);
  }
}

status resharder::switch_copies(split_job& j) {
  std::map<std::string, uint64_t> ends;
  std::map<std::string, std::string> uuids;
  for (const std::string& node : j.copies) {
    auto copy = peer(node);
    auto r = copy ? copy->split_seal(j.db, j.source) : result<std::pair<uint64_t, std::string>>(no_member(node));
    if (!r) {
      unseal_copies(j);
      // Not there yet (its job still copying, or restarting): tried again.
      const bool wait = r.error().code == errc::conflict || r.error().code == errc::not_found;
      return status{wait ? errc::unavailable : r.error().code, "the copy on " + node + ": " + r.error().reason};
    }
    ends[node] = r->first;
    uuids[node] = r->second;
  }
  failpoint(j, "update_shardmap:sealed");
  j.copied_to = ends[node_];
  auto map = coord_.catalog().update_entry(j.db, j.created, [&](catalog_entry& e) {
    if (!e.split_shard(j.source, j.child_suffix, ends, uuids, clk_.now_s()))
      return status{errc::conflict, "Shard " + j.source + " is no longer open"};
    return status{};
  });
  if (!map) {
    unseal_copies(j);
    return map.error();
  }
  if (after_switch_) after_switch_();
  log::info("split " + j.db + " " + j.source + " on " + std::to_string(j.copies.size()) + " nodes into " +
            j.targets()[0] + " and " + j.targets()[1]);
  return {};
}

status resharder::await_switch(split_job& j) {
  // The leader seals this copy and runs its last pass (split_seal), then switches the map; wait
  // for it (a leader gone for good: the job fails after ten minutes and its children go).
  for (int i = 0; i < 6000; ++i) {
    if (switched(j)) return {};
    // The leader's new map is written into this node's `_dbs` by its push; the catalog reads it
    // on reload, which the periodic sync does, unless it is off (sync_interval_ms = 0).
    if (i % 10 == 9) {
      if (auto st = coord_.catalog().reload(); !st) log::warning("catalog reload failed: " + st.reason);
    }
    std::unique_lock<std::mutex> lock(mu_);
    auto it = jobs_.find(j.id);
    if (it == jobs_.end() || !runnable_locked(it->second)) return halted_status;
    mono::wait_until(wake_, lock, mono::now() + std::chrono::milliseconds(100), [&] { return stopping_; });
  }
  return status{errc::internal, "the leader " + j.leader + " did not switch the shard map"};
}

status resharder::advance_move(split_job& j, const db_meta& db, std::optional<size_t> index, const std::string& state) {
  auto from = peer(j.from_node);
  if (!from) return no_member(j.from_node);
  const std::string range = j.source.substr(0, j.source.find('.'));
  if (state == "initial_copy" || state == "topoff1" || state == "topoff2" || state == "copy_local_docs") {
    if (!index) return status{errc::conflict, "Shard " + j.source + " is no longer open"};
    if (state == "initial_copy") {
      // A job that resumes after a restart may have left the source sealed; the copy made here
      // continues from the last seq it holds (the source's numbering).
      if (auto st = from->seal_copy(j.db, range, false); !st) return st.error();
      j.copied_to = 0;
      const std::string path = path_of(j.db, j.source);
      shards_.revive(path);  // this node may have held the copy before and deleted it when it left
      if (::access(path.c_str(), F_OK) == 0) {
        auto h = shards_.acquire(path, db.created, db.key());
        if (!h) return h.error();
        j.copied_to = h->store->header().update_seq;
      }
    }
    return move_pass(j, db, *index, state == "copy_local_docs");
  }
  if (state == "update_shardmap") {
    if (!index) return status{errc::conflict, "Shard " + j.source + " is no longer open"};
    return switch_move(j, db, *index);
  }
  if (state == "wait_source_close" || state == "source_delete") {
    // The source node learns the new map from the push after the switch; until then it refuses.
    status st;
    for (int i = 0; i < 100; ++i) {
      st = from->retire_copy(j.db, j.source, j.end_seq, state == "source_delete");
      if (st || st.code != errc::conflict) break;
      if (after_switch_ && i % 10 == 9) after_switch_();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return st;
  }
  if (state == "completed") j.job_state = "completed";
  return {};  // build_indices, topoff3: nothing (the source was sealed before the last pass)
}

status resharder::move_pass(split_job& j, const db_meta& db, size_t index, bool with_local) {
  auto target = shards_.acquire(path_of(j.db, j.source), db.created, db.key());
  if (!target) return target.error();
  const std::string range = db.ranges[index].name();
  auto from = peer(j.from_node);
  if (!from) return no_member(j.from_node);
  for (bool done = false; !done;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = jobs_.find(j.id);
      if (it == jobs_.end() || !runnable_locked(it->second)) return halted_status;
    }
    auto bytes = from->export_copy(j.db, range, j.copied_to, with_local);
    if (!bytes) return bytes.error();
    auto batch = import_batch::decode(*bytes);
    shard_header header;
    if (!batch || !batch->header(header)) return status{errc::internal, "an unreadable batch from " + j.from_node};
    auto op = std::make_shared<write_op>();
    op->what = write_op::kind::import;
    op->import = std::make_shared<import_request>();
    op->import->from = &*batch;
    op->import->since = j.copied_to;
    op->import->limit = SIZE_MAX;
    op->import->header = header;
    op->import->local_docs = with_local;
    op->import->owner = node_;
    if (auto st = write_one(target->writer, op, std::chrono::seconds(600)); !st) return st;
    j.copied_to = op->import->last;
    done = op->import->done;
    j.total = std::max(j.total, header.update_seq);
  }
  return {};
}

status resharder::switch_move(split_job& j, const db_meta& db, size_t index) {
  const std::string range = db.ranges[index].name();
  auto from = peer(j.from_node);
  if (!from) return no_member(j.from_node);
  auto end = from->seal_copy(j.db, range, true);
  if (!end) return end.error();
  // Until the map names this node, the source is the authority: any failure lets it take writes again.
  auto undo = [&](status st) {
    (void)from->seal_copy(j.db, range, false);
    return st;
  };
  if (auto st = move_pass(j, db, index, true); !st) return undo(st);
  if (j.copied_to != *end) {  // the source restarted meanwhile (and took writes before it sealed again)
    return undo(status{errc::unavailable, "the sealed source copy moved on from seq " + std::to_string(*end) + " to " +
                                              std::to_string(j.copied_to)});
  }
  j.end_seq = *end;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto st = save_locked(j); !st) return undo(st);
  }
  failpoint(j, "update_shardmap:sealed");  // the source sealed, the map not switched
  auto map = coord_.catalog().update_entry(j.db, j.created, [&](catalog_entry& e) {
    if (!e.move_copy(j.source, j.from_node, node_))
      return status{errc::conflict, "Shard " + j.source + " has no copy on " + j.from_node + " to move any more"};
    return status{};
  });
  if (!map) return undo(map.error());
  if (after_switch_) after_switch_();
  log::info("moved " + j.db + " " + j.source + " from " + j.from_node + " at seq " + std::to_string(*end));
  return {};
}

}  // namespace settee
