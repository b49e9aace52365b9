// The states of a split or move job (CouchDB's mem3_reshard_job): one step of the job runner runs
// one of them (resharder::step); the API and the jobs' records are in resharder.cpp.
#include <algorithm>

#include <unistd.h>

#include "actors/bridge.hpp"
#include "actors/internal_replication.hpp"
#include "actors/reshard_internal.hpp"
#include "actors/resharder.hpp"
#include "node/log.hpp"
#include "storage/import_batch.hpp"
#include "storage/lmdb_env.hpp"
#include "storage/time_seq.hpp"

namespace settee {

using namespace reshard_internal;

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

bool resharder::waited_enough(step_memory& mem, std::chrono::milliseconds limit, const std::function<void()>& nudge) {
  const auto now = mono::now();
  if (!mem.later_since) {
    mem.later_since = now;
    mem.nudged = now;
    nudge();
  } else if (now - mem.nudged >= std::chrono::seconds(1)) {
    mem.nudged = now;
    nudge();
  }
  return now - *mem.later_since >= limit;
}

void resharder::wait_for_readers(const std::string& path, const std::string& notify_key) {
  // Readers hold the shard by reference count, which has no release event: looked at every 10 ms
  // (only a move's source, answering its target's retire_copy, waits here; a job pauses instead).
  const auto until = mono::now() + readers_wait;
  auto nudged = mono::now();
  shards_.notify(notify_key);
  while (shards_.held(path) && mono::now() < until) {
    if (mono::now() - nudged >= std::chrono::seconds(1)) {
      nudged = mono::now();
      shards_.notify(notify_key);  // a feed between two reads missed the first
    }
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
  job_context::failpoint(name, [&] {
    std::lock_guard<std::mutex> lock(mu_);
    (void)save_locked(j);
  });
}

job_next resharder::step(const std::string& id, job_context& ctx, step_memory& mem) {
  split_job j;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end() || !runnable_locked(it->second)) return job_next::done();
    j = it->second;
  }
  const split_job before = j;  // a state that does not finish runs again from here
  // A follower in update_shardmap waits for its leader's switch, a look per step; once it
  // switched, the job goes on to the next state.
  const bool awaits =
      !j.move() && !j.leader.empty() && j.leader != node_ && j.split_state == "update_shardmap" && !switched(j);
  status st = awaits ? await_switch(j, mem) : advance(j, mem);
  ctx.progress(json{{"phase", j.split_state},
                    {"changes_done", j.copied_to},
                    {"total_changes", std::max(j.total, j.copied_to)},
                    {"progress", j.total ? std::min<uint64_t>(100, j.copied_to * 100 / j.total) : 0}});
  std::unique_lock<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return job_next::done();  // deleted meanwhile
  auto again = [&] {                               // the state runs again from where it was; what it copied stays
    it->second.split_state = before.split_state;
    it->second.history = before.history;
    it->second.copied_to = j.copied_to;
  };
  if (!st && st.reason == halted_status.reason && st.code == halted_status.code) {
    again();  // stopped: resumes from here when started again
    return job_next::done();
  }
  if (!st && st.reason == later_status.reason && st.code == later_status.code) {
    again();
    return job_next::pause(later_look);
  }
  mem.later_since.reset();
  if (!st && st.reason == not_yet_status.reason) {
    if (!mem.waiting_since) {  // in update_shardmap now (a restart before the switch copies on)
      mem.waiting_since = mono::now();
      it->second = j;
      if (auto saved = save_locked(j); !saved) log::error("reshard job " + id + " could not be saved: " + saved.reason);
    }
    if (mono::now() - *mem.waiting_since < max_leader_wait) return job_next::pause(follower_look);
    st = status{errc::internal, "the leader " + j.leader + " did not switch the shard map"};
  }
  // The other node of a move or of a split of several copies restarting, out of reach or not
  // ready yet: the state is tried again (the runner backs off), for a while.
  if (!st && (j.move() || !j.leader.empty()) && (st.code == errc::unavailable || st.code == errc::timeout)) {
    if (!mem.transient_since) mem.transient_since = mono::now();
    if (mono::now() - *mem.transient_since < max_transient) {
      again();
      return job_next::retry("in " + j.split_state + ": " + st.reason);
    }
  }
  if (st) mem.transient_since.reset(), mem.waiting_since.reset();
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
  // Off the running tasks before the job reads as ended: a client that saw it completed and
  // starts the next split elsewhere must not find it still running (test_reshard_cluster, once).
  if (terminal(j)) ctx.drop_task();
  it->second = j;
  if (auto saved = save_locked(j); !saved) log::error("reshard job " + id + " could not be saved: " + saved.reason);
  return terminal(j) || j.job_state == "stopped" ? job_next::done() : job_next::more();
}

status resharder::advance(split_job& j, step_memory& mem) {
  const auto& all = split_states();
  size_t at = state_index(j.split_state);
  if (at + 1 >= all.size()) return {};
  const std::string next = all[at + 1];
  auto db = coord_.catalog().find(j.db);
  if (!db || db->created != j.created) return status{errc::db_not_found, "Database " + j.db + " was deleted"};
  // _active_tasks shows the state before _reshard/jobs does: the two agree while the state runs.
  if (mem.ctx) mem.ctx->progress(json{{"phase", next}});
  enter(j, next);
  std::optional<size_t> source;
  for (size_t i = 0; i < db->ranges.size(); ++i)
    if (db->shard_id(i) == j.source) source = i;
  if (j.move()) return advance_move(j, *db, source, next, mem);
  const bool leads = j.leader == node_ && !j.copies.empty(), follows = !j.leader.empty() && j.leader != node_;
  if (next == "update_shardmap" && follows) return await_switch(j, mem);  // the leader switches for every copy
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
    if (!waited_enough(mem, readers_wait, [&] { shards_.notify(db->key()); }) && shards_.held(parent_path))
      return later_status;
    return {};
  }
  if (next == "topoff3") {
    // The parent was sealed before the last pass: nothing can have come after its end_seq.
    auto p = db->entry->find(j.source);
    auto end = p ? db->entry->shards[*p].end_seq.find(node_) : std::map<std::string, uint64_t>::const_iterator{};
    if (!p || end == db->entry->shards[*p].end_seq.end())
      return status{errc::internal, "the shard map lost " + j.source};
    // A job killed after source_delete removed the parent, before it saved that state, runs
    // topoff3 again on restart: the parent is gone, checked already (opening it would create an
    // empty one, "moved on to seq 0").
    if (!lmdb::file_exists(parent_path)) {
      j.copied_to = end->second;
      return {};
    }
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
    job_context::failpoint("source_delete:removed");  // before the state is saved (kill tests)
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
      op->import->keep = [r = ranges[c].first, partitioned = db.partitioned](std::string_view id) {
        return r.contains(placement_hash(id, partitioned));
      };
      // A child holds the parent's changes up to its update_seq (an import commits whole), so it
      // continues from there: after a restart too, and the two may differ by a step.
      op->import->since = children[c].store->header().update_seq;
      op->import->limit = changes_per_step;
      op->import->uuid = split_child_uuid(header.shard_uuid, ranges[c].first);
      if (with_local) {
        op->import->header = header;
        op->import->header->time_seq = time_seq::inherit(header.time_seq, header.update_seq, c);
        op->import->local_docs = true;
        op->import->also_local = [child = ranges[c].first](const local_doc& l) {
          return carry_sync_checkpoint(l, child);
        };
      }
      if (auto st = write_one(children[c].writer, op, copy_step_timeout); !st) return st;
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

status resharder::await_switch(split_job& j, step_memory& mem) {
  // The leader seals this copy and runs its last pass (split_seal), then switches the map.
  if (switched(j)) return {};
  // The leader's new map is written into this node's `_dbs` by its push; the catalog reads it
  // on reload, which the periodic sync does, unless it is off (sync_interval_ms = 0).
  if (mono::now() - mem.reloaded >= catalog_reload_every) {
    mem.reloaded = mono::now();
    if (auto st = coord_.catalog().reload(); !st) log::warning("catalog reload failed: " + st.reason);
    if (switched(j)) return {};
  }
  return not_yet_status;
}

status resharder::advance_move(split_job& j, const db_meta& db, std::optional<size_t> index, const std::string& state,
                               step_memory& mem) {
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
    status st = from->retire_copy(j.db, j.source, j.end_seq, state == "source_delete");
    if (!st && st.code == errc::conflict && !waited_enough(mem, retire_wait, [&] {
          if (after_switch_) after_switch_();
        }))
      return later_status;
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
    if (auto st = write_one(target->writer, op, copy_step_timeout); !st) return st;
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
