#include "replicator/replicator_docs.hpp"

#include <zlib.h>

#include <algorithm>

#include "actors/all_docs_reader.hpp"
#include "actors/change_notifier.hpp"
#include "actors/doc_render.hpp"
#include "actors/members.hpp"
#include "node/log.hpp"
#include "replicator/rep_client.hpp"
#include "storage/time_seq.hpp"
#include "wire/external_term.hpp"

namespace settee {
namespace {

constexpr std::chrono::milliseconds every{1000};

// The request a document describes: its body without the document's own fields.
json request_of(const json& body) {
  json r = json::object();
  for (auto& [k, v] : body.items())
    if (k.empty() || k[0] != '_') r[k] = v;
  return r;
}

}  // namespace

status validate_replicator_doc(const json& body, const std::string& server_uuid, const std::string& self_url) {
  if (!body.is_object() || (member(body, "_deleted").is_boolean() && member(body, "_deleted").get<bool>())) return {};
  auto r = parse_rep_request(request_of(body), rep_context{server_uuid, self_url, {}, {}, nullptr, false});
  if (!r) return {errc::forbidden, r.error().reason};
  if (!r->source.local_name.empty() || !r->target.local_name.empty())
    return {errc::forbidden, "local endpoints are not supported in _replicator documents: name them by URL"};
  return {};
}

replicator_docs::replicator_docs(replicator_host host, replications& reps) : node_(std::move(host)), reps_(reps) {}

bool replicator_docs::owns(const std::string& id) const {
  const std::vector<std::string>& live = seen_live_;  // sorted, as must_read() last read them
  if (live.empty()) return true;
  const std::string key = term_to_binary(eterm::tuple({eterm::binary(db_name), eterm::binary(id)}));
  uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(key.data()), static_cast<uInt>(key.size()));
  return live[crc % live.size()] == node_.node_name;
}

replicator_docs::entry replicator_docs::start(const std::string& id, const std::string& rev, json body) {
  entry e;
  e.rev = rev;
  e.body = std::move(body);
  e.updated_s = node_.clk.now_s();
  // A document runs as its owner: one who is not a server admin (their own documents, or a
  // server admin's naming them) connects only where [replicator] allows (docs/security.md).
  const json& owner = member(e.body, "owner");
  rep_context rc{node_.server_uuid,
                 node_.self_url,
                 {},
                 {},
                 reps_.rules(),
                 owner.is_string() && !node_.is_server_admin(owner.get<std::string>())};
  auto r = parse_rep_request(request_of(e.body), rc);
  if (r) {
    e.rep_id = r->id();
    e.source = r->source.url();
    e.target = r->target.url();
  }
  const json state = member(e.body, "_replication_state");
  if (state == "completed" || state == "failed") {  // ended before: it stays so until edited
    e.state = state.get<std::string>();
    e.error = member(e.body, "_replication_state_reason").is_string()
                  ? member(e.body, "_replication_state_reason").get<std::string>()
                  : "";
    return e;
  }
  std::string reason;
  if (!r) {
    reason = r.error().reason;
  } else if (!r->source.local_name.empty() || !r->target.local_name.empty()) {
    reason = "local endpoints are not supported in _replicator documents: name them by URL with credentials";
  } else {
    // The filter's code is part of the id; a source that cannot answer at once (one try of at most
    // 5 s: the processor starts the other documents after it) leaves the name in its place.
    const auto wait = std::min(std::chrono::milliseconds(r->connection_timeout_ms), std::chrono::milliseconds(5000));
    if (auto st = fetch_filter_code(*r, node_.server_uuid, 0, wait); !st)
      log::warning("replicator: document " + id + ": " + st.reason + " (its replication id counts the filter's name)");
    e.rep_id = r->id();
    std::string taken_by;
    e.job = reps_.start_document(
        std::move(*r), db_name, id, [this, id](job_next::kind how, const result<json>& out) { ended(id, how, out); },
        taken_by);
    if (e.job) return e;
    reason = "Replication `" + e.rep_id + "` specified by document `" + id +
             "` already started, triggered by document `" + taken_by + "` from db `_replicator`";
  }
  e.state = "failed";
  e.error = reason;
  write_back(id, e.body, json{{"_replication_state", "failed"}, {"_replication_state_reason", reason}});
  return e;
}

void replicator_docs::write_back(const std::string& id, json body, const json& fields) {
  auto db = node_.coord.catalog().lookup(db_name);
  if (!db) return;
  for (auto& [k, v] : fields.items()) body[k] = v;
  body["_replication_state_time"] = time_seq::format_time(node_.clk.now_s());
  auto u = node_.to_update(*db, std::move(body), id);
  if (!u) return log::warning("replicator: cannot record the state of " + id + ": " + u.error().reason);
  auto w = node_.coord.update_docs(*db, {std::move(*u)});
  if (!w || w->results.empty() || !w->results[0].st)
    log::info("replicator: the state of " + id + " was not recorded (the document changed meanwhile)");
}

void replicator_docs::ended(const std::string& id, job_next::kind how, const result<json>& out) {
  if (how == job_next::kind::cancelled) return;  // stopped by an edit, a deletion or the node
  json body, stats = json::object();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = docs_.find(id);
    if (it == docs_.end()) return;
    entry& e = it->second;
    // couch_replicator_scheduler_job:rep_stats and the replication's start (doc_update_completed).
    const json info = e.job ? e.job->info()["info"] : json::object();
    for (const char* k :
         {"revisions_checked", "missing_revisions_found", "docs_read", "docs_written", "changes_pending",
          "doc_write_failures", "bulk_get_docs", "bulk_get_attempts", "checkpointed_source_seq"})
      stats[k] = member(info, k).is_null() ? json(0) : member(info, k);
    stats["start_time"] = time_seq::format_time(e.updated_s);
    e.state = how == job_next::kind::done ? "completed" : "failed";
    e.error = out ? "" : out.error().reason;
    e.updated_s = node_.clk.now_s();
    body = e.body;
  }
  if (how == job_next::kind::done) {
    body.erase("_replication_state_reason");  // couch_replicator_docs:update_doc_completed
    write_back(id, body, json{{"_replication_state", "completed"}, {"_replication_stats", stats}});
  } else
    write_back(id, body,
               json{{"_replication_state", "failed"}, {"_replication_state_reason", out ? "" : out.error().reason}});
}

bool replicator_docs::must_read(const std::string& key) {
  const uint64_t version = node_.notifier ? node_.notifier->version(key) : 0;
  std::vector<std::string> live = node_.cluster ? node_.cluster->live() : std::vector<std::string>{};
  std::sort(live.begin(), live.end());
  live.erase(std::unique(live.begin(), live.end()), live.end());
  const int64_t now = node_.clk.now_ms();
  const bool clustered = node_.cluster && node_.cluster->clustered();
  if (version == seen_version_ && live == seen_live_ && !(clustered && now - read_at_ms_ >= 10000)) return false;
  seen_version_ = version;
  seen_live_ = std::move(live);
  read_at_ms_ = now;
  return true;
}

job_next replicator_docs::step(job_context& ctx) {
  auto db = node_.coord.catalog().lookup(db_name);
  if (!db || !must_read(db->key())) return job_next::pause(every);
  all_docs_query q;
  q.range.include_docs = true;
  auto listing = list_all_docs(node_.coord, *db, q);
  if (!listing) {
    seen_version_ = UINT64_MAX;  // read again at the next step
    return job_next::pause(every);
  }
  std::vector<std::string> stop;                             // replication ids to cancel, outside the lock
  std::map<std::string, std::pair<std::string, json>> seen;  // id -> (rev, body) of the docs this node owns
  for (auto& row : listing->rows) {
    const all_docs_row& d = row.doc;
    if (d.id.rfind("_design/", 0) == 0 || d.doc.empty() || !owns(d.id)) continue;
    auto body = parse_json(d.doc);
    if (body && body->is_object()) seen[d.id] = {d.rev, std::move(*body)};
  }
  std::vector<std::pair<std::string, std::pair<std::string, json>>> fresh;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = docs_.begin(); it != docs_.end();) {
      auto s = seen.find(it->first);
      if (s != seen.end() && s->second.first == it->second.rev) {
        seen.erase(s);  // unchanged
        ++it;
        continue;
      }
      if (!it->second.rep_id.empty() && reps_.document_job(it->second.rep_id, it->first))
        stop.push_back(it->second.rep_id);  // still running or pending (perhaps as a new job after a rotation)
      it = docs_.erase(it);                 // deleted, edited, or owned elsewhere now
    }
    for (auto& kv : seen) fresh.emplace_back(kv.first, std::move(kv.second));
  }
  for (const std::string& rep_id : stop) (void)reps_.cancel(rep_id);
  for (auto& [id, doc] : fresh) {
    if (ctx.cancelled()) break;
    // Under the lock: a replication that ends at once finds its entry (ended() waits for it).
    std::lock_guard<std::mutex> lock(mu_);
    docs_[id] = start(id, doc.first, std::move(doc.second));
  }
  return job_next::pause(every);
}

const std::vector<std::string>& replicator_docs::replication_states() {
  static const std::vector<std::string> states = {"initializing", "error",     "running", "pending",
                                                  "crashing",     "completed", "failed"};
  return states;
}

json replicator_docs::info_from_doc(const std::string& id, const json& doc) {
  json source = nullptr, target = nullptr;  // without credentials; null when not a valid endpoint
  if (auto r = parse_rep_request(request_of(doc), rep_context{"", "", {}, {}, nullptr, false})) {
    source = r->source.url();
    target = r->target.url();
  }
  const json& recorded = member(doc, "_replication_state");
  const json& when = member(doc, "_replication_state_time");
  json state = nullptr, info = nullptr, start = nullptr;
  int errors = 0;
  if (recorded == "completed") {
    state = recorded;
    info = member(doc, "_replication_stats").is_object() ? member(doc, "_replication_stats") : json::object();
    if (info.contains("start_time")) {
      start = info["start_time"];
      info.erase("start_time");
    }
  } else if (recorded == "failed") {
    state = recorded;
    const json& reason = member(doc, "_replication_state_reason");  // couch_replicator_utils:ejson_state_info
    info = reason.is_null() || reason.is_object() ? reason
                                                  : json{{"error", reason.is_string() ? reason : json(reason.dump())}};
    errors = 1;
    start = when;
  }
  return json{{"doc_id", id},          {"database", db_name},
              {"id", nullptr},         {"source", source},
              {"target", target},      {"state", state},
              {"error_count", errors}, {"info", info},
              {"start_time", start},   {"last_updated", when.is_null() ? json(nullptr) : when}};
}

std::optional<json> replicator_docs::row_of(const std::string& id, const json& body, bool undecided) const {
  const json& recorded = member(body, "_replication_state");
  if (recorded == "completed" || recorded == "failed") return info_from_doc(id, body);
  if (auto r = processor_row(id)) return r;
  if (undecided) return info_from_doc(id, body);
  return std::nullopt;
}

result<std::vector<json>> replicator_docs::rows(const std::vector<std::string>& states) const {
  std::vector<json> out;
  auto db = node_.coord.catalog().lookup(db_name);
  if (!db) return out;
  all_docs_query q;
  q.range.include_docs = true;
  auto listing = list_all_docs(node_.coord, *db, q);
  if (!listing) return listing.error();
  for (auto& r : listing->rows) {
    const all_docs_row& d = r.doc;
    if (d.id.rfind("_design/", 0) == 0 || d.doc.empty()) continue;
    auto body = parse_json(d.doc);
    if (!body || !body->is_object()) continue;
    auto row = row_of(d.id, *body, false);
    if (!row || !(*row)["state"].is_string()) continue;  // couch_replicator_utils:filter_state: null skipped
    if (states.empty() || std::count(states.begin(), states.end(), (*row)["state"].get<std::string>()))
      out.push_back(std::move(*row));
  }
  return out;
}

result<std::optional<json>> replicator_docs::row(const std::string& doc_id) const {
  auto db = node_.coord.catalog().lookup(db_name);
  if (!db) return std::optional<json>();
  auto d = node_.coord.open_doc(*db, doc_id);
  if (!d) return d.error().code == errc::not_found ? result<std::optional<json>>(std::nullopt) : d.error();
  const int w = d->found ? d->info.tree.winner() : -1;
  auto text = w >= 0 && !d->info.tree.nodes()[w].deleted ? render_rev(*d, w, render_options{}) : std::nullopt;
  auto body = text ? parse_json(*text) : std::nullopt;
  if (!body || !body->is_object()) return std::optional<json>();
  return row_of(doc_id, *body, true);
}

std::optional<json> replicator_docs::processor_row(const std::string& doc_id) const {
  std::shared_ptr<replication_job> job;
  std::string rep_id, state, error;
  json source, target;
  int64_t updated_s = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = docs_.find(doc_id);
    if (it == docs_.end()) return std::nullopt;
    const entry& e = it->second;
    job = e.job;
    rep_id = e.rep_id;
    state = e.state;
    error = e.error;
    source = e.source;
    target = e.target;
    updated_s = e.updated_s;
  }
  json info = error.empty() ? json(nullptr) : json{{"error", error}};
  int64_t errors = error.empty() ? 0 : 1;
  if (auto now = reps_.document_job(rep_id, doc_id)) job = now;
  if (job) {
    const std::string st = job->state();
    if (state.empty() || (st != "completed" && st != "failed")) state = st;
    info = job->info()["info"];
    errors = job->error_count();
    if (st == "crashing") info["error"] = job->last_error();
  }
  const json id = rep_id.empty() ? json(nullptr) : json(rep_id);
  const std::string when = time_seq::format_time(updated_s);
  // couch_replicator_doc_processor:ejson_doc: a scheduled job's shape, or a document's own.
  if (state == "running" || state == "pending" || state == "crashing")
    return json{{"doc_id", doc_id},       {"database", db_name},  {"id", id},           {"node", node_.node_name},
                {"source", source},       {"target", target},     {"state", state},     {"info", info},
                {"error_count", errors},  {"last_updated", when}, {"start_time", when}, {"source_proxy", nullptr},
                {"target_proxy", nullptr}};
  return json{{"doc_id", doc_id},        {"database", db_name},  {"id", id},
              {"state", state},          {"info", info},         {"error_count", errors},
              {"node", node_.node_name}, {"last_updated", when}, {"start_time", when}};
}

}  // namespace settee
