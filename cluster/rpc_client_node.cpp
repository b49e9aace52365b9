// What this node asks of other nodes as a whole: tasks, figures, resharding state and jobs, a
// move's and a split's calls, update logs (rpc_node's typed calls, and release 0.3's string calls).
#include "cluster/rpc_internal.hpp"

namespace settee {

bool rpc_node::runs_tasks(const std::string& node) const {
  return members_.has_feature(node, tasks_feature);
}

status rpc_node::compact_db(const std::string& node, const std::string& db, std::chrono::milliseconds timeout) {
  return call_status(node, timeout, [=](Node::Client& cap) {
    auto req = cap.compactDbRequest();
    req.setDb(db);
    return req;
  });
}

status rpc_node::view_cleanup(const std::string& node, const std::string& db, const std::vector<std::string>& keep,
                              std::chrono::milliseconds timeout) {
  return call_status(node, timeout, [=](Node::Client& cap) {
    auto req = cap.viewCleanupRequest();
    req.setDb(db);
    auto list = req.initKeep(static_cast<unsigned>(keep.size()));
    for (unsigned i = 0; i < keep.size(); ++i) list.set(i, keep[i]);
    return req;
  });
}

status rpc_node::view_compact(const std::string& node, const std::string& db, const std::string& ddoc_id,
                              const std::string& rev, const std::string& ddoc, std::chrono::milliseconds timeout) {
  return call_status(node, timeout, [=](Node::Client& cap) {
    auto req = cap.compactViewsRequest();
    req.setDb(db);
    req.setDdocId(ddoc_id);
    req.setRev(rev);
    req.setDdoc(ddoc);
    return req;
  });
}

result<std::vector<std::string>> rpc_node::active_tasks(const std::string& node, std::chrono::milliseconds timeout) {
  return call<std::vector<std::string>>(node, timeout, [=](Node::Client& cap) {
    return cap.activeTasksRequest().send().then(
        [](capnp::Response<Node::ActiveTasksResults>&& r) -> result<std::vector<std::string>> {
          if (status st = status_of(r.getStatus()); !st) return st;
          std::vector<std::string> out;
          for (auto t : r.getTasks()) out.emplace_back(t);
          return out;
        });
  });
}

result<node_status> rpc_node::status_of_node(const std::string& node, std::chrono::milliseconds timeout) {
  if (!members_.has_feature(node, node_status_feature))
    return status{errc::not_implemented, node + " does not report its figures (an older release)"};
  return call<node_status>(node, timeout, [=](Node::Client& cap) {
    return cap.nodeStatusRequest().send().then([](capnp::Response<Node::NodeStatusResults>&& r) -> result<node_status> {
      if (status st = status_of(r.getStatus()); !st) return st;
      return read_node_status(r.getNode());
    });
  });
}

result<reshard_state> rpc_node::reshard_state_of(const std::string& node, const std::optional<reshard_state>& set,
                                                 std::chrono::milliseconds timeout) {
  if (!members_.has_feature(node, members_feature))
    return status{errc::not_implemented, node + " runs a release that cannot be asked for its resharding state"};
  return call<reshard_state>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.reshardStateRequest();
    req.setSet(set.has_value());
    if (set) {
      req.setRunning(set->running);
      req.setReason(set->reason);
    }
    return req.send().then([](capnp::Response<Node::ReshardStateResults>&& r) -> result<reshard_state> {
      if (status st = status_of(r.getStatus()); !st) return st;
      return reshard_state{r.getRunning(), r.getReason()};
    });
  });
}

result<std::vector<split_job>> rpc_node::reshard_jobs(const std::string& node, std::chrono::milliseconds timeout) {
  using list = std::vector<split_job>;
  return call<list>(node, timeout, [=](Node::Client& cap) {
    return cap.reshardJobsRequest().send().then([](capnp::Response<Node::ReshardJobsResults>&& r) -> result<list> {
      if (status st = status_of(r.getStatus()); !st) return st;
      list out;
      for (auto j : r.getJobs()) out.push_back(read_job(j));
      return out;
    });
  });
}

status rpc_node::edit_reshard_job(const std::string& node, const std::string& id, bool remove, const reshard_state& s,
                                  std::chrono::milliseconds timeout) {
  return call_status(node, timeout, [=](Node::Client& cap) {
    auto req = cap.editReshardJobRequest();
    req.setId(id);
    req.setRemove(remove);
    req.setRunning(s.running);
    req.setReason(s.reason);
    return req;
  });
}

result<split_job> rpc_node::new_reshard_job(const std::string& node, const new_job& j,
                                            std::chrono::milliseconds timeout) {
  return call<split_job>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.newReshardJobRequest();
    write_new_job(req.initJob(), j);
    return req.send().then([](capnp::Response<Node::NewReshardJobResults>&& r) -> result<split_job> {
      if (status st = status_of(r.getStatus()); !st) return st;
      return read_job(r.getMade());
    });
  });
}

result<std::string> rpc_node::export_changes(const std::string& node, const std::string& db, const std::string& range,
                                             uint64_t since, bool with_local, std::chrono::milliseconds timeout) {
  return call<std::string>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.exportChangesRequest();
    set_shard(req.initShard(), db, range);
    req.setSince(since);
    req.setWithLocal(with_local);
    return req.send().then([](capnp::Response<Node::ExportChangesResults>&& r) -> result<std::string> {
      if (status st = status_of(r.getStatus()); !st) return st;
      auto bytes = r.getBatch();
      return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
    });
  });
}

result<uint64_t> rpc_node::seal_copy(const std::string& node, const std::string& db, const std::string& range,
                                     bool seal, std::chrono::milliseconds timeout) {
  return call<uint64_t>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.sealCopyRequest();
    set_shard(req.initShard(), db, range);
    req.setSeal(seal);
    return req.send().then([](capnp::Response<Node::SealCopyResults>&& r) -> result<uint64_t> {
      if (status st = status_of(r.getStatus()); !st) return st;
      return r.getUpdateSeq();
    });
  });
}

status rpc_node::retire_copy(const std::string& node, const std::string& db, const std::string& shard, uint64_t end_seq,
                             bool remove, std::chrono::milliseconds timeout) {
  return call_status(node, timeout, [=](Node::Client& cap) {
    auto req = cap.retireCopyRequest();
    req.setDb(db);
    req.setShardId(shard);
    req.setEndSeq(end_seq);
    req.setRemove(remove);
    return req;
  });
}

result<std::string> rpc_node::create_job(const std::string& node, const std::string& body,
                                         std::chrono::milliseconds timeout) {
  return call<std::string>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.createJobRequest();
    req.setBody(body);
    return req.send().then([](capnp::Response<Node::CreateJobResults>&& r) -> result<std::string> {
      if (status st = status_of(r.getStatus()); !st) return st;
      return std::string(r.getJob());
    });
  });
}

result<std::pair<uint64_t, std::string>> rpc_node::split_seal(const std::string& node, const std::string& db,
                                                              const std::string& shard,
                                                              std::chrono::milliseconds timeout) {
  return call<std::pair<uint64_t, std::string>>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.splitSealRequest();
    req.setDb(db);
    req.setShardId(shard);
    return req.send().then([](capnp::Response<Node::SplitSealResults>&& r) -> result<std::pair<uint64_t, std::string>> {
      if (status st = status_of(r.getStatus()); !st) return st;
      return std::make_pair(r.getEndSeq(), std::string(r.getUuid()));
    });
  });
}

result<config_reply> rpc_node::configure(const std::string& node, const config_call& what,
                                         std::chrono::milliseconds timeout) {
  return call<config_reply>(node, timeout, [what](Node::Client& cap) {
    auto req = cap.configRequestRequest();
    req.setMethod(what.method);
    auto path = req.initPath(static_cast<unsigned>(what.path.size()));
    for (unsigned i = 0; i < what.path.size(); ++i) path.set(i, what.path[i]);
    req.setBody(what.body);
    req.setPersist(what.persist);
    return req.send().then([](capnp::Response<Node::ConfigRequestResults>&& r) -> result<config_reply> {
      if (status st = status_of(r.getStatus()); !st) return st;
      return config_reply{static_cast<int>(r.getCode()), std::string(r.getBody()), r.getRestart()};
    });
  });
}

result<std::pair<int, std::string>> rpc_node::reshard_request(const std::string& node, const std::string& method,
                                                              const std::string& id, bool state,
                                                              const std::string& body,
                                                              std::chrono::milliseconds timeout) {
  return call<std::pair<int, std::string>>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.reshardRequestRequest();
    req.setMethod(method);
    req.setId(id);
    req.setState(state);
    req.setBody(body);
    return req.send().then([](capnp::Response<Node::ReshardRequestResults>&& r) -> result<std::pair<int, std::string>> {
      return std::make_pair(static_cast<int>(r.getCode()), std::string(r.getBody()));
    });
  });
}

bool rpc_node::serves_db_updates(const std::string& node) const {
  return members_.has_feature(node, db_updates_feature);
}

result<log_page> rpc_node::db_updates(const std::string& node, const std::string& uuid, uint64_t seq, size_t limit,
                                      std::chrono::milliseconds timeout) {
  return call<log_page>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.dbUpdatesRequest();
    req.setUuid(uuid);
    req.setSeq(seq);
    req.setLimit(static_cast<uint32_t>(std::min<size_t>(limit, UINT32_MAX)));
    return req.send().then([](capnp::Response<Node::DbUpdatesResults>&& r) -> result<log_page> {
      if (status st = status_of(r.getStatus()); !st) return st;
      log_page page;
      page.uuid = r.getUuid();
      page.top = r.getTop();
      for (auto row : r.getRows()) {
        page.rows.emplace_back(row.getSeq(), db_update_row{row.getDb(), "updated", row.getInstance(), row.getTime()});
      }
      return page;
    });
  });
}

}  // namespace settee
