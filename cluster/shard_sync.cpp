#include "cluster/shard_sync.hpp"

#include <algorithm>
#include <set>

#include "actors/internal_replication.hpp"
#include "actors/remote_copy.hpp"
#include "cluster/nodes_db.hpp"
#include "node/clock.hpp"
#include "node/log.hpp"
#include "node/metrics.hpp"

namespace settee {

std::vector<sync_row> sync_database(coordinator& coord, rpc_node& rpc, const membership& members, const db_meta& db,
                                    std::chrono::milliseconds timeout, task_list* tasks) {
  std::vector<sync_row> rows;
  auto& lag = metrics::node().replication;
  std::set<metrics::replication_lag::key> seen;
  for (const std::string& peer : members.cluster_nodes()) {
    if (peer == members.self()) continue;
    const bool connected = members.is_connected(peer);
    for (size_t i = 0; i < db.q; ++i) {
      // Only this node's copies, only to the nodes holding another copy of the same range.
      if (!db.hosts(i)) continue;
      if (!db.everywhere() && std::find(db.nodes[i].begin(), db.nodes[i].end(), peer) == db.nodes[i].end()) continue;
      const metrics::replication_lag::key key{db.name, db.ranges[i].name(), peer};
      if (!connected) {  // its copy keeps what it last confirmed; ours grows
        if (auto source = coord.shard(db, i)) {
          lag.update(key, source->store->header().update_seq, std::nullopt);
          seen.insert(key);
        }
        continue;
      }
      sync_row row;
      row.node = peer;
      row.range = db.ranges[i].name();
      auto info = rpc.shard_info(peer, db.name, row.range, std::min(timeout, std::chrono::milliseconds(5000)));
      auto source = coord.shard(db, i);
      if (!info || !source) {
        row.st = !info ? info.error() : source.error();
        if (source) {
          lag.update(key, source->store->header().update_seq, std::nullopt);
          seen.insert(key);
        }
        rows.push_back(std::move(row));
        continue;
      }
      seen.insert(key);
      replication_target target;
      target.uuid = info->uuid;
      std::string range = row.range;
      target.apply = [&rpc, &db, peer, range, timeout](std::vector<doc_update>& updates) {
        return rpc.apply_changes(peer, db.name, range, updates, timeout);
      };
      target.stage = [&rpc, &db, peer, range, timeout](const std::string& key, uint64_t offset,
                                                       const std::string& piece) {
        return rpc.stage_blob(peer, db.name, range, key, offset, piece, timeout);
      };
      target.purges = std::make_shared<remote_copy>(rpc, peer, db.name, range, timeout);
      target.purge_seq = info->purge_seq;  // 0 from a release without purge: nothing to take
      // A long push (a node catching up) shows in /_active_tasks with its progress: registered when
      // the push starts from a checkpoint far enough behind.
      uint64_t task = 0;
      if (tasks) {
        const uint64_t top = source->store->header().update_seq;
        target.progress = [&, top](uint64_t from, uint64_t reached) {
          if (!task && reached == from && top >= from + sync_task_min_changes) {
            task = tasks->add({{"type", "internal_replication"},
                               {"database", db.name},
                               {"range", row.range},
                               {"source", members.self()},
                               {"target", peer},
                               {"changes_done", 0},
                               {"total_changes", top - from},
                               {"progress", 0}});
          } else if (task) {
            uint64_t done = std::min(reached, top) - from;
            tasks->update(task, {{"changes_done", done}, {"progress", done * 100 / (top - from)}});
          }
        };
      }
      auto r = push_changes(*source, target, timeout);
      if (task) tasks->remove(task);
      const uint64_t source_seq = source->store->header().update_seq;
      if (r) {
        row.docs = r->docs;
        row.applied = r->applied;
        row.seq = r->to_seq;
        lag.update(key, source_seq, r->to_seq);
      } else {
        row.st = r.error();
        lag.update(key, source_seq, std::nullopt);
      }
      rows.push_back(std::move(row));
    }
  }
  lag.retain(db.name, seen);
  return rows;
}

shard_syncer::shard_syncer(coordinator& coord, rpc_node& rpc, const membership& members,
                           std::chrono::milliseconds interval, std::chrono::milliseconds push_timeout, nodes_db* nodes,
                           task_list* tasks)
    : coord_(coord),
      rpc_(rpc),
      members_(members),
      interval_(interval),
      push_timeout_(push_timeout),
      nodes_(nodes),
      tasks_(tasks) {}

job_next shard_syncer::step(job_context& ctx) {
  if (!std::exchange(first_, false)) sweep(ctx);
  return job_next::pause(interval_);
}

void shard_syncer::sweep(job_context& ctx) {
  // `_dbs` may have been changed by a peer's push: create and remove databases to match.
  if (auto st = coord_.catalog().reload(); !st) log::warning("catalog reload failed: " + st.reason);
  if (nodes_) {
    if (auto st = nodes_->reload(); !st) log::warning("_nodes reload failed: " + st.reason);
  }
  if (members_.all_nodes().size() < 2) return;  // nobody to push to
  if (nodes_) {
    for (auto& row : sync_database(coord_, rpc_, members_, nodes_->meta(), push_timeout_)) {
      if (!row.st) log::warning("sync of _nodes to " + row.node + " failed: " + row.st.reason);
    }
  }
  // The catalog first, so peers learn about databases before their documents arrive.
  for (auto& row : sync_database(coord_, rpc_, members_, coord_.catalog().dbs_meta(), push_timeout_)) {
    if (!row.st) log::warning("sync of _dbs to " + row.node + " failed: " + row.st.reason);
  }
  for (const std::string& name : coord_.catalog().names()) {
    if (ctx.cancelled()) return;
    auto db = coord_.catalog().find(name);
    if (!db) continue;  // deleted meanwhile
    for (auto& row : sync_database(coord_, rpc_, members_, *db, push_timeout_, tasks_)) {
      // A node without a copy of this database is normal until shard maps are replicated.
      if (!row.st && row.st.code != errc::not_found) {
        log::warning("sync of " + name + " " + row.range + " to " + row.node + " failed: " + row.st.reason);
      } else if (row.docs && log::enabled(log::level::debug)) {
        log::debug("internal replication of " + name + " " + row.range + " to " + row.node + ": " +
                   std::to_string(row.docs) + " documents sent, " + std::to_string(row.applied) +
                   " revisions new there, now at seq " + std::to_string(row.seq));
      }
    }
  }
}

}  // namespace settee
