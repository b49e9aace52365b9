// POST /_replicate and GET /_scheduler/jobs[/id], /_scheduler/docs (chttpd_misc /
// couch_replicator_httpd): the replications themselves are replicator/replications.hpp's.
#include "http/auth.hpp"
#include "http/handlers.hpp"
#include "replicator/rep_client.hpp"
#include "replicator/replications.hpp"
#include "replicator/replicator_docs.hpp"

namespace settee {
namespace {

// {"error": <code name>, "reason": ...} with 500, as couch_replicator_httpd answers {error, {E, R}}.
void reply_replication_error(ctx& c, const status& st) {
  c.reply(500, json{{"error", code_name_of(st.code)}, {"reason", st.reason}});
}

// {"error":"not found"} and nothing else, as couch_replicator_httpd answers.
void reply_not_found(ctx& c) {
  json body = json::object();
  body["error"] = error_name_of(errc::replication_not_found);
  c.reply(http_status_of(errc::replication_not_found), body);
}

}  // namespace

void handle_replicate(ctx& c) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  if (!c.node.replicator) return c.error(errc::not_implemented, "the replicator is not running on this node");
  if (auto st = c.require_json_content(); !st) return c.error(st);
  auto body = c.json_object_body();
  if (!body) return c.error(body.error());
  rep_context rc;
  rc.server_uuid = c.node.server_uuid;
  rc.self_url = c.node.self_url;
  rc.rules = c.node.replicator->rules();  // _replicate is for server admins: not restricted
  if (c.user.authenticated_by == "cookie" && c.user.name) {
    // Local endpoints sign in as the requester with a cookie minted for each request (theirs expires).
    authenticator* auth = &c.node.auth;
    rc.self_session = [auth, name = *c.user.name] { return "AuthSession=" + auth->make_cookie(name); };
  } else if (c.req.has_header("Authorization")) {
    rc.self_auth.emplace_back("Authorization", c.req.get_header_value("Authorization"));
  }
  auto r = parse_rep_request(*body, rc);
  if (!r) return c.error(r.error());
  if (r->cancel) {
    std::string id = r->cancel_id.empty() ? r->id() : r->cancel_id;
    if (auto st = c.node.replicator->cancel(id); !st) return reply_not_found(c);
    return c.reply(200, json{{"ok", true}, {"_local_id", id}});
  }
  if (auto st = fetch_filter_code(*r, rc.server_uuid, static_cast<int>(r->retries_per_request),
                                  std::chrono::milliseconds(r->connection_timeout_ms));
      !st)
    return reply_replication_error(c, st);
  const bool continuous = r->continuous;
  auto out = c.node.replicator->replicate(std::move(*r));
  if (!out) return reply_replication_error(c, out.error());
  c.reply(continuous ? 202 : 200, *out);
}

// couch_replicator_httpd_util:parse_replication_state_filter: states=a,b (any case), each one of
// couch_replicator's states.
result<std::vector<std::string>> states_filter(ctx& c) {
  std::vector<std::string> out;
  if (!c.has("states")) return out;
  const std::vector<std::string>& all = replicator_docs::replication_states();
  std::string known;
  for (const std::string& s : all) known += (known.empty() ? "" : ",") + s;
  std::string given = c.param("states");
  std::transform(given.begin(), given.end(), given.begin(), [](unsigned char ch) { return std::tolower(ch); });
  std::vector<std::string> unknown;
  for (size_t at = 0; at <= given.size();) {
    size_t comma = given.find(',', at);
    if (comma == std::string::npos) comma = given.size();
    const std::string s = given.substr(at, comma - at);
    if (!s.empty()) (std::count(all.begin(), all.end(), s) ? out : unknown).push_back(s);
    at = comma + 1;
  }
  if (!unknown.empty()) {
    std::string list;
    for (const std::string& s : unknown) list += (list.empty() ? "" : ",") + s;
    return status{errc::query_parse_error, "Unknown states [" + list + "]. Choose from: [" + known + "]"};
  }
  return out;
}

void handle_scheduler(ctx& c) {
  if (c.method() != "GET") return c.method_not_allowed("GET,HEAD");
  if (!c.node.replicator) return c.error(errc::not_implemented, "the replicator is not running on this node");
  auto& p = c.path;
  if (p.size() == 2 && p[1] == "jobs") {
    auto limit = c.int_param("limit", 100);
    auto skip = c.int_param("skip", 0);
    if (const status* e = first_error(limit, skip)) return c.error(*e);
    for (auto [name, v] : {std::pair{"limit", *limit}, {"skip", *skip}})  // couch_replicator_httpd_util
      if (v < 0) return c.error(errc::query_parse_error, std::string(name) + " not in range of [0,infinity]");
    std::vector<json> all = c.node.replicator->jobs();
    json jobs = json::array();
    for (size_t i = static_cast<size_t>(std::max<int64_t>(0, *skip));
         i < all.size() && jobs.size() < static_cast<size_t>(std::max<int64_t>(0, *limit)); ++i)
      jobs.push_back(all[i]);
    return c.reply(200, json{{"total_rows", all.size()}, {"offset", *skip}, {"jobs", jobs}});
  }
  if (p.size() == 3 && p[1] == "jobs") {
    auto j = c.node.replicator->job(p[2]);
    if (!j) return c.error(errc::not_found, "unknown job");
    return c.reply(200, *j);
  }
  if (p.size() >= 2 && p[1] == "docs") {
    if (!c.node.rep_docs) return c.error(errc::not_implemented, "the replicator is not running on this node");
    if (p.size() == 2 || (p.size() == 3 && p[2] == replicator_docs::db_name)) {
      auto states = states_filter(c);
      if (!states) return c.error(states.error());
      auto rows = c.node.rep_docs->rows(*states);
      if (!rows) return c.error(rows.error());
      auto limit = c.int_param("limit", INT64_MAX);
      auto skip = c.int_param("skip", 0);
      if (const status* e = first_error(limit, skip)) return c.error(*e);
      for (auto [name, v] : {std::pair{"limit", *limit}, {"skip", *skip}})  // couch_mrview_http's parse_pos_int
        if (v < 0)
          return c.error(errc::query_parse_error, "Invalid value for positive integer: \"" + c.param(name) + "\"");
      const size_t from = static_cast<size_t>(std::clamp<int64_t>(*skip, 0, static_cast<int64_t>(rows->size())));
      json docs = json::array();
      for (size_t i = from; i < rows->size() && docs.size() < static_cast<uint64_t>(std::max<int64_t>(*limit, 0)); ++i)
        docs.push_back((*rows)[i]);
      return c.reply(200, json{{"total_rows", rows->size()}, {"offset", from}, {"docs", docs}});
    }
    if (p.size() == 4 && p[2] == replicator_docs::db_name) {
      auto row = c.node.rep_docs->row(p[3]);
      if (!row) return c.error(row.error());
      if (!*row) return c.error(errc::not_found, "missing");
      return c.reply(200, **row);
    }
    if (p.size() >= 3) return c.error(errc::not_found, "missing");  // another replicator database
  }
  reply_not_found(c);
}

}  // namespace settee
