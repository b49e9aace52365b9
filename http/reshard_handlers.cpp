// /_reshard (spec section 8; CouchDB's mem3_reshard_httpd): the node-wide state, and split jobs.
#include "actors/members.hpp"
#include "actors/resharder.hpp"
#include "http/handlers.hpp"
#include "node/log.hpp"
#include "wire/json_util.hpp"

#include <algorithm>
#include <set>

namespace settee {

namespace {

// {"state":"running"|"stopped","reason"?}: running, and the reason.
result<std::pair<bool, std::string>> parse_state(const json& body) {
  auto it = body.find("state");
  if (it == body.end()) return status{errc::bad_request, "Expected a `state` field"};
  if (!it->is_string() || (*it != "running" && *it != "stopped"))
    return status{errc::bad_request, "State field not `running` or `stopped`"};
  std::string reason;
  if (auto r = body.find("reason"); r != body.end()) {
    if (!r->is_string()) return status{errc::bad_request, "`reason` must be a string"};
    reason = r->get<std::string>();
  }
  return std::make_pair(*it == "running", reason);
}

result<std::pair<bool, std::string>> state_body(ctx& c) {
  auto body = c.json_object_body();
  if (!body) return body.error();
  return parse_state(*body);
}

// The cluster's resharding state, as mem3_reshard_api's state_and_reason: running when any live
// member runs (the first of their reasons in order), else stopped. A member that cannot say (down
// since, or an older release) is left out, as CouchDB leaves out its bad nodes.
// A row of POST /_reshard/jobs that did not make its job.
json failed_row(const status& st, const std::string& node, const std::string& shard) {
  json row = error_json(st);
  row["node"] = node;
  row["shard"] = shard;
  return row;
}

json cluster_state(ctx& c) {
  std::set<std::string> running, stopped;
  bool any_running = false;
  for (const std::string& name : c.node.cluster->live()) {
    auto m = c.node.cluster->get(name);
    auto s = m ? m->get_reshard_state() : result<reshard_state>(status{errc::not_found, name});
    if (!s) continue;
    any_running = any_running || s->running;
    if (!s->reason.empty()) (s->running ? running : stopped).insert(s->reason);
  }
  const std::set<std::string>& reasons = any_running ? running : stopped;
  return json{{"state", any_running ? "running" : "stopped"},
              {"reason", reasons.empty() ? json(nullptr) : json(*reasons.begin())}};
}

// PUT /_reshard/state: every live member's state (mem3_reshard_api's multicall). The first member
// that could not take it is the answer's error, after the others took it.
status set_cluster_state(ctx& c, const reshard_state& want) {
  status first;
  for (const std::string& name : c.node.cluster->live()) {
    auto m = c.node.cluster->get(name);
    status st = m ? m->set_reshard_state(want) : status{errc::not_found, "no member " + name};
    if (!st) {
      log::warning("resharding state not set on " + name + ": " + st.reason);
      if (first) first = status{st.code, name + ": " + st.reason};
    }
  }
  return first;
}

// Every live member's jobs (a move's job lives on its target), rendered as its node shows them; a
// member that cannot say now is left out (as CouchDB's multicall leaves out its bad nodes).
json cluster_jobs(ctx& c) {
  json jobs = json::array();
  for (const std::string& n : c.node.cluster->live()) {
    auto m = c.node.cluster->get(n);
    auto list = m ? m->reshard_jobs() : result<std::vector<split_job>>(std::vector<split_job>{});
    if (!list) continue;
    for (const split_job& j : *list) jobs.push_back(j.to_api(n));
  }
  return jobs;
}

// The open shards a POST /_reshard/jobs body names, as (db, index); errors as CouchDB words them.
result<std::vector<std::pair<db_meta, size_t>>> shards_named(ctx& c, const json& body) {
  if (auto t = body.find("type"); t != body.end() && (!t->is_string() || (*t != "split" && *t != "move")))
    return status{errc::bad_request, "`job type must be `split` or `move`"};
  if (auto n = body.find("node"); n != body.end() && body.value("type", "split") == "split") {
    if (!n->is_string()) return status{errc::bad_request, "Invalid `node`"};
    if (*n != c.node.node_name) {
      const std::string& name = n->get_ref<const std::string&>();
      auto all = c.node.cluster->all();
      if (std::find(all.begin(), all.end(), name) == all.end())
        return status{errc::bad_request, "`node` is not a valid node name"};
      if (!c.node.cluster->connected(name)) return status{errc::bad_request, "Not connected to `node`"};
      return status{errc::not_implemented, "Jobs for " + name + "'s copies are created on " + name +
                                               " itself in this release: POST /_reshard/jobs there"};
    }
  }
  std::optional<shard_range> range;
  if (auto r = body.find("range"); r != body.end()) {
    if (!r->is_string() || !(range = shard_range::parse(r->get<std::string>())))
      return status{errc::bad_request, "Invalid `range`"};
  }
  std::string db_name, shard_id;
  if (auto s = body.find("shard"); s != body.end()) {
    if (!s->is_string()) return status{errc::bad_request, "Invalid `shard`"};
    // shards/<range>/<db>.<suffix>
    const std::string& name = s->get_ref<const std::string&>();
    size_t slash = name.find('/', 7), dot = name.rfind('.');
    if (name.rfind("shards/", 0) != 0 || slash == std::string::npos || dot == std::string::npos || dot < slash ||
        !shard_range::parse(name.substr(7, slash - 7)))
      return status{errc::bad_request, "`shard` is invalid"};
    db_name = name.substr(slash + 1, dot - slash - 1);
    shard_id = name.substr(7, slash - 7) + name.substr(dot);
  }
  if (auto d = body.find("db"); d != body.end()) {
    if (!d->is_string() || (!db_name.empty() && *d != db_name)) return status{errc::bad_request, "Invalid `db`"};
    db_name = d->get<std::string>();
  }
  if (db_name.empty()) return status{errc::bad_request, "`db` or `shard` is required"};
  auto db = c.node.coord.catalog().lookup(db_name);
  if (!db) return status{errc::bad_request, "Invalid `db`"};
  std::vector<std::pair<db_meta, size_t>> out;
  for (size_t i = 0; i < db->ranges.size(); ++i) {
    if (!shard_id.empty() && db->shard_id(i) != shard_id) continue;
    if (range && !(db->ranges[i] == *range)) continue;
    out.emplace_back(*db, i);
  }
  return out;
}

// A member named by field `key` of a move's body; errors as values.
result<std::string> member_named(ctx& c, const json& body, const char* key) {
  auto n = body.find(key);
  if (n == body.end() || !n->is_string())
    return status{errc::bad_request, std::string("`") + key + "` (a node) is required"};
  const std::string& name = n->get_ref<const std::string&>();
  auto all = c.node.cluster->all();
  if (std::find(all.begin(), all.end(), name) == all.end())
    return status{errc::bad_request, std::string("`") + key + "` is not a valid node name"};
  if (!c.node.cluster->connected(name))  // e.g. restarting: try again later
    return status{errc::unavailable, std::string("Not connected to `") + key + "`"};
  return name;
}

// POST /_reshard/jobs {"type":"move","shard":...,"source":node,"target":node}: the job runs on the
// target, which pulls the copy from the source (spec 11.6).
void create_move(ctx& c, const json& body, const std::vector<std::pair<db_meta, size_t>>& shards) {
  auto from = member_named(c, body, "source");
  if (!from) return c.error(from.error());
  auto to = member_named(c, body, "target");
  if (!to) return c.error(to.error());
  if (!body.contains("shard") && !body.contains("range"))
    return c.error(errc::bad_request, "A move names one `shard` (or `db` and `range`)");
  if (shards.empty()) return c.error(errc::not_found, "No shards to move");
  if (shards.size() != 1) return c.error(errc::bad_request, "A move names one `shard` (or `db` and `range`)");
  const auto& [db, i] = shards.front();
  const std::string shard = "shards/" + db.ranges[i].name() + "/" + db.name + "." + std::to_string(db.suffixes[i]);
  auto target = c.node.cluster->get(*to);
  auto made = target ? target->create_reshard_job({"move", db.name, db.shard_id(i), 0, "", *from})
                     : result<split_job>(status{errc::bad_request, "`target` is not a valid node name"});
  if (!made) {
    const status& st = made.error();
    return c.reply(http_status_of(st.code), json::array({failed_row(st, *to, shard)}));
  }
  c.reply(201, json::array({{{"ok", true}, {"id", made->id}, {"node", *to}, {"shard", shard}}}));
}

void handle_jobs(ctx& c) {
  resharder& r = *c.node.reshard;
  if (c.method() == "GET") {
    json jobs = cluster_jobs(c);
    return c.reply(200, json{{"total_rows", jobs.size()}, {"offset", 0}, {"jobs", std::move(jobs)}});
  }
  if (c.method() != "POST") return c.method_not_allowed("GET,HEAD,POST");
  auto body = c.json_object_body();
  if (!body) return c.error(body.error());
  auto shards = shards_named(c, *body);
  if (!shards) return c.error(shards.error());
  // Every member must read a split database's lineage (a release before 0.3 would route by q).
  std::string old;
  for (const std::string& n : c.node.cluster->all()) {
    auto m = c.node.cluster->get(n);
    if (!m || !m->reshards()) old += (old.empty() ? "" : ", ") + n;
  }
  if (!old.empty()) {
    return c.error(errc::conflict, "Shard splitting needs every cluster member to run release 0.3 or later; " + old +
                                       " does not (or is not connected)");
  }
  // One node at a time per database: two nodes switching one database's map at once can each
  // write it from a view without the other's split (docs/api.md).
  if (!shards->empty()) {
    const std::string prefix = "/" + shards->front().first.name + ".";
    for (const std::string& n : c.node.cluster->live()) {
      auto m = n == c.node.node_name ? nullptr : c.node.cluster->get(n);
      if (!m) continue;
      auto tasks = m->active_tasks();
      if (!tasks)
        return c.error(errc::unavailable, "cannot ask " + n + " for its running splits: " + tasks.error().reason);
      for (const std::string& t : *tasks) {
        auto task = parse_json(t);
        if (task && task->is_object() &&
            (task->value("type", "") == "shard_split" || task->value("type", "") == "shard_move") &&
            task->value("source", "").find(prefix) != std::string::npos)
          return c.error(errc::conflict, "A split or move of " + shards->front().first.name + " is running on " + n +
                                             "; reshard one node's ranges at a time");
      }
    }
  }
  if (body->value("type", "split") == "move") return create_move(c, *body, *shards);
  if (shards->empty()) return c.error(errc::not_found, "No shards to split");
  json out = json::array();
  size_t ok = 0;
  auto failed = [&](const std::string& node, const std::string& shard, const status& st) {
    out.push_back(failed_row(st, node, shard));
  };
  for (auto& [db, i] : *shards) {
    const std::string shard = "shards/" + db.ranges[i].name() + "/" + db.name + "." + std::to_string(db.suffixes[i]);
    auto job = r.create(db, i);
    if (!job) {
      failed(c.node.node_name, shard, job.error());
      continue;
    }
    // A range with copies on other nodes: one job per copy, following this one (it switches the
    // map for all of them); made on each node, or none is.
    std::vector<std::pair<std::string, std::string>> made{{c.node.node_name, job->id}};
    status st;
    for (const std::string& n : job->copies) {
      if (n == c.node.node_name) continue;
      auto m = c.node.cluster->get(n);
      auto follower =
          m ? m->create_reshard_job({"split", db.name, db.shard_id(i), job->child_suffix, c.node.node_name, ""})
            : result<split_job>(status{errc::unavailable, "not a member"});
      if (!follower) {
        st = follower.error();
        st.reason = n + ": " + st.reason;
        break;
      }
      made.emplace_back(n, follower->id);
    }
    if (!st) {
      for (auto& [n, id] : made)
        if (auto m = c.node.cluster->get(n)) (void)m->remove_reshard_job(id);
      failed(c.node.node_name, shard, st);
      continue;
    }
    for (auto& [n, id] : made) {
      ++ok;
      out.push_back({{"ok", true}, {"id", id}, {"node", n}, {"shard", shard}});
    }
  }
  // CouchDB: 201 when every job was made, 202 when some were, else the first error's status.
  c.reply(ok == out.size() ? 201 : ok > 0 ? 202 : 500, out);
}

// One job: answered here when it is this node's, else by the member that has it.
void handle_job(ctx& c, const std::string& id) {
  const bool state = c.path.size() == 4 && c.path[3] == "state";
  if (!state && c.path.size() != 3) return c.error(errc::not_found, "missing");
  if (state && c.method() != "GET" && c.method() != "PUT") return c.method_not_allowed("GET,HEAD,PUT");
  if (!state && c.method() != "GET" && c.method() != "DELETE") return c.method_not_allowed("GET,HEAD,DELETE");
  std::optional<reshard_state> want;
  if (c.method() == "PUT") {
    auto body = state_body(c);
    if (!body) return c.error(body.error());
    want = reshard_state{body->first, body->second};
  }
  // The member that has the job (this node's first).
  for (const std::string& n : c.node.cluster->live()) {
    auto m = c.node.cluster->get(n);
    auto jobs = m ? m->reshard_jobs() : result<std::vector<split_job>>(std::vector<split_job>{});
    if (!jobs) continue;
    auto j = std::find_if(jobs->begin(), jobs->end(), [&](const split_job& x) { return x.id == id; });
    if (j == jobs->end()) continue;
    if (want || c.method() == "DELETE") {
      status st = want ? m->set_reshard_job_state(id, *want) : m->remove_reshard_job(id);
      if (!st) return c.error(st);
      return c.reply(200, json{{"ok", true}});
    }
    if (state)
      return c.reply(200,
                     json{{"state", j->job_state}, {"reason", j->reason.empty() ? json(nullptr) : json(j->reason)}});
    return c.reply(200, j->to_api(n));
  }
  c.error(errc::not_found, "Job not found");
}

}  // namespace

void handle_reshard(ctx& c) {
  if (!c.node.reshard || !c.node.cluster)
    return c.error(errc::not_implemented, "resharding is not available on this node");
  const auto& p = c.path;
  if (p.size() == 1) {
    if (c.method() != "GET") return c.method_not_allowed("GET,HEAD");
    json summary{{"completed", 0}, {"failed", 0}, {"running", 0}, {"stopped", 0}, {"total", 0}};
    for (auto& j : cluster_jobs(c)) {
      std::string s = j.value("job_state", "");
      if (s == "new") s = "running";
      if (summary.contains(s)) summary[s] = summary[s].get<int>() + 1;
      summary["total"] = summary["total"].get<int>() + 1;
    }
    json st = cluster_state(c);
    summary["state"] = st["state"];
    summary["state_reason"] = st["reason"];
    return c.reply(200, summary);
  }
  if (p[1] == "state" && p.size() == 2) {
    if (c.method() == "GET") return c.reply(200, cluster_state(c));
    if (c.method() != "PUT") return c.method_not_allowed("GET,HEAD,PUT");
    auto want = state_body(c);
    if (!want) return c.error(want.error());
    if (auto st = set_cluster_state(c, {want->first, want->second}); !st) return c.error(st);
    return c.reply(200, json{{"ok", true}});
  }
  if (p[1] == "jobs" && p.size() == 2) return handle_jobs(c);
  if (p[1] == "jobs" && p.size() >= 3) return handle_job(c, p[2]);
  c.error(errc::not_found, "missing");
}

}  // namespace settee
