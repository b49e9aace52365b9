// What this node answers as a whole: the node-level calls of its member (actors/members.hpp),
// reshard jobs (typed, and release 0.3's string calls), a move's and a split's calls, its update
// log (node_server's methods; rpc_internal.hpp).
#include "cluster/legacy_calls.hpp"
#include "cluster/rpc_internal.hpp"

namespace settee {

// The node-level calls (actors/members.hpp), run on the pool by this node's member.
template <class T>
kj::Promise<void> on_member(rpc_node::loop& l, std::function<result<T>(cluster_member&)> work,
                            std::function<void(const T&)> answer, std::function<void(const status&)> fail) {
  cluster_member* self = l.opts.self;
  auto out = std::make_shared<result<T>>(status{errc::not_implemented, "no member calls on this node"});
  return l
      .off_loop([self, work = std::move(work), out] {
        if (self) *out = work(*self);
      })
      .then([out, answer = std::move(answer), fail = std::move(fail)]() {
        if (*out) {
          answer(**out);
        } else {
          fail(out->error());
        }
      });
}

// on_member for a call whose results carry a status: `fill(results, value)` once the member
// answered, its error otherwise.
template <class T, class Context, class Fill>
kj::Promise<void> member_call(rpc_node::loop& l, Context context, std::function<result<T>(cluster_member&)> work,
                              Fill fill) {
  return on_member<T>(
      l, std::move(work),
      [context, fill](const T& value) mutable {
        auto results = context.getResults();
        set_status(results.initStatus(), {});
        fill(results, value);
      },
      [context](const status& st) mutable { set_status(context.getResults().initStatus(), st); });
}

// member_call for a call that answers only its status.
template <class Context>
kj::Promise<void> member_status_call(rpc_node::loop& l, Context context, std::function<status(cluster_member&)> work) {
  return member_call<bool>(
      l, context,
      [work](cluster_member& m) -> result<bool> {
        if (status st = work(m); !st) return st;
        return true;
      },
      [](auto, const bool&) {});
}

kj::Promise<void> node_server::compactDb(CompactDbContext context) {
  std::string db = context.getParams().getDb();
  return member_status_call(loop_, context, [db](cluster_member& m) { return m.compact(db); });
}

kj::Promise<void> node_server::viewCleanup(ViewCleanupContext context) {
  std::string db = context.getParams().getDb();
  std::vector<std::string> keep;
  for (auto k : context.getParams().getKeep()) keep.emplace_back(k.cStr());
  return member_status_call(loop_, context, [db, keep](cluster_member& m) { return m.view_cleanup(db, keep); });
}

kj::Promise<void> node_server::compactViews(CompactViewsContext context) {
  auto p = context.getParams();
  std::string db = p.getDb(), ddoc_id = p.getDdocId(), rev = p.getRev(), ddoc = p.getDdoc();
  return member_status_call(loop_, context, [=](cluster_member& m) { return m.view_compact(db, ddoc_id, rev, ddoc); });
}

kj::Promise<void> node_server::activeTasks(ActiveTasksContext context) {
  using list = std::vector<std::string>;
  return member_call<list>(
      loop_, context, [](cluster_member& m) { return m.active_tasks(); },
      [](auto results, const list& tasks) {
        auto out = results.initTasks(static_cast<unsigned>(tasks.size()));
        for (unsigned i = 0; i < tasks.size(); ++i) out.set(i, tasks[i]);
      });
}

kj::Promise<void> node_server::nodeStatus(NodeStatusContext context) {
  return member_call<node_status>(
      loop_, context, [](cluster_member& m) { return m.figures(); },
      [](auto results, const node_status& s) { write_node_status(results.initNode(), s); });
}

kj::Promise<void> node_server::reshardState(ReshardStateContext context) {
  auto params = context.getParams();
  std::optional<reshard_state> set;
  if (params.getSet()) set = reshard_state{params.getRunning(), params.getReason()};
  return member_call<reshard_state>(
      loop_, context,
      [set](cluster_member& m) -> result<reshard_state> {
        if (set)
          if (status st = m.set_reshard_state(*set); !st) return st;
        return m.get_reshard_state();
      },
      [](auto results, const reshard_state& s) {
        results.setRunning(s.running);
        results.setReason(s.reason);
      });
}

kj::Promise<void> node_server::reshardJobs(ReshardJobsContext context) {
  using list = std::vector<split_job>;
  return member_call<list>(
      loop_, context, [](cluster_member& m) { return m.reshard_jobs(); },
      [](auto results, const list& jobs) {
        auto out = results.initJobs(static_cast<unsigned>(jobs.size()));
        for (unsigned i = 0; i < jobs.size(); ++i) write_job(out[i], jobs[i]);
      });
}

kj::Promise<void> node_server::editReshardJob(EditReshardJobContext context) {
  auto p = context.getParams();
  std::string id = p.getId();
  bool remove = p.getRemove();
  reshard_state want{p.getRunning(), p.getReason()};
  return member_status_call(loop_, context, [id, remove, want](cluster_member& m) {
    return remove ? m.remove_reshard_job(id) : m.set_reshard_job_state(id, want);
  });
}

kj::Promise<void> node_server::newReshardJob(NewReshardJobContext context) {
  new_job want = read_new_job(context.getParams().getJob());
  return member_call<split_job>(
      loop_, context, [want](cluster_member& m) { return m.create_reshard_job(want); },
      [](auto results, const split_job& j) { write_job(results.initMade(), j); });
}

kj::Promise<void> node_server::exportChanges(ExportChangesContext context) {
  auto params = context.getParams();
  std::string db = params.getShard().getDb(), range = params.getShard().getRange();
  uint64_t since = params.getSince();
  bool with_local = params.getWithLocal();
  return member_call<std::string>(
      loop_, context, [=](cluster_member& m) { return m.export_copy(db, range, since, with_local); },
      [](auto results, const std::string& bytes) {
        results.setBatch(capnp::Data::Reader(reinterpret_cast<const capnp::byte*>(bytes.data()), bytes.size()));
      });
}

kj::Promise<void> node_server::sealCopy(SealCopyContext context) {
  auto params = context.getParams();
  std::string db = params.getShard().getDb(), range = params.getShard().getRange();
  bool seal = params.getSeal();
  return member_call<uint64_t>(
      loop_, context, [=](cluster_member& m) { return m.seal_copy(db, range, seal); },
      [](auto results, const uint64_t& seq) { results.setUpdateSeq(seq); });
}

kj::Promise<void> node_server::retireCopy(RetireCopyContext context) {
  auto params = context.getParams();
  std::string db = params.getDb(), shard = params.getShardId();
  uint64_t end_seq = params.getEndSeq();
  bool remove = params.getRemove();
  return member_status_call(loop_, context,
                            [=](cluster_member& m) { return m.retire_copy(db, shard, end_seq, remove); });
}

kj::Promise<void> node_server::createJob(CreateJobContext context) {
  std::string body = context.getParams().getBody();
  return member_call<std::string>(
      loop_, context, [body](cluster_member& m) { return answer_create_job(m, body); },
      [](auto results, const std::string& job) { results.setJob(job); });
}

kj::Promise<void> node_server::splitSeal(SplitSealContext context) {
  std::string db = context.getParams().getDb(), shard = context.getParams().getShardId();
  using sealed = std::pair<uint64_t, std::string>;
  return member_call<sealed>(
      loop_, context, [=](cluster_member& m) { return m.split_seal(db, shard); },
      [](auto results, const sealed& s) {
        results.setEndSeq(s.first);
        results.setUuid(s.second);
      });
}

kj::Promise<void> node_server::configRequest(ConfigRequestContext context) {
  auto params = context.getParams();
  config_call call{params.getMethod(), {}, params.getBody(), params.getPersist()};
  for (auto p : params.getPath()) call.path.push_back(p);
  return member_call<config_reply>(
      loop_, context, [call](cluster_member& m) { return m.configure(call); },
      [](auto results, const config_reply& r) {
        results.setCode(static_cast<uint16_t>(r.code));
        results.setBody(r.body);
        results.setRestart(r.restart);
      });
}

kj::Promise<void> node_server::reshardRequest(ReshardRequestContext context) {
  auto params = context.getParams();
  std::string method = params.getMethod(), id = params.getId(), body = params.getBody();
  bool state = params.getState();
  using answer = std::pair<int, std::string>;
  auto reply = [context](const answer& a) mutable {
    auto results = context.getResults();
    results.setCode(static_cast<uint16_t>(a.first));
    results.setBody(a.second);
  };
  return on_member<answer>(
      loop_, [=](cluster_member& m) -> result<answer> { return answer_reshard_request(m, method, id, state, body); },
      reply,
      [reply](const status&) mutable {
        reply({501, R"({"error":"not_implemented","reason":"resharding is not available on this node"})"});
      });
}

// This node's update log: no shard, but read on the pool all the same (it may open the file).
kj::Promise<void> node_server::dbUpdates(DbUpdatesContext context) {
  auto params = context.getParams();
  std::string uuid = params.getUuid();
  uint64_t seq = params.getSeq();
  size_t limit = std::clamp<size_t>(params.getLimit(), 1, 10000);
  auto read = loop_.opts.read_updates;
  auto out = std::make_shared<std::optional<result<log_page>>>();
  return loop_
      .off_loop([read, uuid, seq, limit, out] {
        out->emplace(read ? read(uuid, seq, limit) : result<log_page>(status{errc::not_implemented, "no update log"}));
      })
      .then([context, out]() mutable {
        auto results = context.getResults();
        result<log_page>& r = **out;
        if (!r) return set_status(results.initStatus(), r.error());
        results.setUuid(r->uuid);
        results.setTop(r->top);
        auto rows = results.initRows(static_cast<unsigned>(r->rows.size()));
        for (unsigned i = 0; i < r->rows.size(); ++i) {
          rows[i].setSeq(r->rows[i].first);
          rows[i].setDb(r->rows[i].second.db);
          rows[i].setInstance(r->rows[i].second.instance);
          rows[i].setTime(r->rows[i].second.time_s);
        }
      });
}

}  // namespace settee
