// Server-level endpoints: /, /_up, /_all_dbs, /_uuids, /_session, /_node.
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>

#include "actors/change_notifier.hpp"
#include "actors/resharder.hpp"
#include "actors/shard_map.hpp"
#include "actors/shard_registry.hpp"
#include "actors/task_list.hpp"
#include "http/auth.hpp"
#include "http/handlers.hpp"
#include "node/crypto.hpp"
#include "node/log.hpp"
#include "node/metrics.hpp"
#include "storage/time_seq.hpp"

namespace settee {

void handle_root(ctx& c) {
  if (c.method() != "GET") return c.method_not_allowed("GET,HEAD");
  c.reply(200, json{{"couchdb", "Welcome"},
                    {"version", "3.4.2"},
                    {"git_sha", "settee"},
                    {"uuid", c.node.server_uuid},
                    {"features", json::array()},
                    {"vendor", {{"name", "settee"}, {"version", SETTEE_VERSION}}}});
}

void handle_up(ctx& c) {
  if (c.method() != "GET") return c.method_not_allowed("GET,HEAD");
  c.reply(200, json{{"status", "ok"}, {"seeds", json::object()}});
}

namespace {

// A JSON-encoded string query parameter (startkey="a"); 400 when it is not valid JSON.
result<std::optional<std::string>> string_key_param(ctx& c, const char* a, const char* b) {
  const char* name = c.has(a) ? a : (b && c.has(b) ? b : nullptr);
  if (!name) return std::optional<std::string>{};
  auto j = parse_client_json(c.param(name),
                             {errc::bad_request, std::string("invalid JSON in the `") + name + "` parameter"});
  if (!j) return j.error();
  if (!j->is_string()) return std::optional<std::string>{};  // non-string keys sort before strings
  return std::optional<std::string>{j->get<std::string>()};
}

}  // namespace

namespace {

// The database names an _all_dbs-style request selects (startkey/endkey/key, inclusive_end,
// descending, skip, limit), in the order it lists them.
result<std::vector<std::string>> selected_db_names(ctx& c) {
  auto descending = c.bool_param("descending", false);
  auto inclusive_end = c.bool_param("inclusive_end", true);
  auto limit = c.int_param("limit", -1);
  auto skip = c.int_param("skip", 0);
  auto start = string_key_param(c, "startkey", "start_key");
  auto end = string_key_param(c, "endkey", "end_key");
  auto key = string_key_param(c, "key", nullptr);  // couch_mrview_http: both ends
  if (auto e = first_error(descending, inclusive_end, limit, skip, start, end, key)) return *e;
  if (*skip < 0)
    return status{errc::query_parse_error, "Invalid value for positive integer: \"" + c.param("skip") + "\""};
  if (*limit < -1 || (c.has("limit") && *limit < 0))
    return status{errc::query_parse_error, "Invalid value for positive integer: \"" + c.param("limit") + "\""};
  if (*key) start = end = *key;
  if (c.has("key") && !*key) return std::vector<std::string>{};    // a non-string key names no database
  if (auto st = c.node.coord.catalog().refresh(); !st) return st;  // a peer's creations too
  // Only the names the page can hold are read: skip + limit from the start key.
  const size_t max = *limit < 0 ? SIZE_MAX : static_cast<size_t>(*skip) + static_cast<size_t>(*limit);
  auto names = c.node.coord.catalog().names(*start, *descending, max);
  std::vector<std::string> out;
  int64_t skipped = 0;
  for (auto& n : names) {
    if (*end) {
      bool past = *descending ? (*inclusive_end ? n < **end : n <= **end) : (*inclusive_end ? n > **end : n >= **end);
      if (past) break;
    }
    if (skipped++ < *skip) continue;
    if (*limit >= 0 && static_cast<int64_t>(out.size()) >= *limit) break;
    out.push_back(n);
  }
  return out;
}

}  // namespace

void handle_all_dbs(ctx& c) {
  if (c.method() != "GET") return c.method_not_allowed("GET,HEAD");
  auto names = selected_db_names(c);
  if (!names) return c.error(names.error());
  // An ETag, as chttpd_misc's (it changes when databases come and go).
  std::string body = json(*names).dump();
  std::string etag = "\"" + crypto::md5_hex(body) + "\"";
  c.res.set_header("ETag", etag);
  if (c.req.get_header_value("If-None-Match") == etag) {
    c.res.status = 304;
    return;
  }
  c.reply_raw(200, body + "\n");
}

// GET /_dbs_info (every database _all_dbs would list, with its options; or `keys=`) and POST
// {"keys": [...]}: chttpd_misc:handle_dbs_info_req, at most 100 keys given by the client ([chttpd]
// max_db_number_for_dbs_info_req); a listed database deleted meanwhile is left out, as CouchDB's.
void handle_dbs_info(ctx& c) {
  if (c.method() != "GET" && c.method() != "POST") return c.method_not_allowed("GET,HEAD,POST");
  constexpr size_t max_keys = 100;
  json keys;
  bool listed = false;  // the names _all_dbs would list: no cap, and a database gone since is left out
  if (c.method() == "POST") {
    auto body = c.json_object_body();
    if (!body) return c.error(body.error());
    if (!body->contains("keys")) return c.error(errc::bad_request, "`keys` member must exist.");
    keys = (*body)["keys"];
  } else if (c.has("keys")) {
    auto parsed = parse_client_json(c.param("keys"), {errc::bad_request, "invalid JSON in the `keys` parameter"});
    if (!parsed) return c.error(parsed.error());
    keys = std::move(*parsed);
  } else {
    auto names = selected_db_names(c);
    if (!names) return c.error(names.error());
    keys = *names;
    listed = true;
  }
  if (!keys.is_array()) return c.error(errc::bad_request, "`keys` member must be an array.");
  if (!listed && keys.size() > max_keys) return c.error(errc::bad_request, "too_many_keys");
  std::string out = "[";
  bool first = true;
  for (const json& key : keys) {
    result<json> info = status{errc::db_not_found, "Database does not exist."};
    if (key.is_string()) {
      if (auto db = c.node.coord.catalog().lookup(key.get<std::string>())) info = db_info_json(c, *db);
    }
    if (!info && listed) continue;
    out += first ? "" : ",";
    first = false;
    out += info ? json{{"key", key}, {"info", *info}}.dump()
                : json{{"key", key}, {"error", error_name_of(errc::db_not_found)}}.dump();
  }
  c.reply_raw(200, out + "]\n");
}

std::string next_uuid() {
  // CouchDB's "sequential" algorithm: a random 26-hex prefix and a 6-hex counter advancing by a
  // random step, so ids are unique and mostly ordered (good for B-tree locality).
  static std::mutex mu;
  static std::string prefix;
  static uint32_t counter = 0;
  static std::mt19937 rng{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mu);
  uint32_t step = 1 + rng() % 0xffe;
  if (prefix.empty() || counter + step > 0xfff000) {
    prefix = crypto::random_hex(13);
    counter = rng() % 0xfff;
  }
  counter += step;
  char tail[8];
  std::snprintf(tail, sizeof tail, "%06x", counter);
  return prefix + tail;
}

void handle_uuids(ctx& c) {
  if (c.method() != "GET") return c.method_not_allowed("GET");
  int64_t count = 1;
  if (c.has("count")) {
    std::string v = c.param("count");
    char* end = nullptr;
    long long n = v.empty() ? -1 : std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n < 0) return c.error(errc::bad_request, "count must be a positive integer");
    if (static_cast<size_t>(n) > c.node.uuids_max_count) return c.error(errc::bad_request, "count parameter too large");
    count = n;
  }
  json ids = json::array();
  for (int64_t i = 0; i < count; ++i) ids.push_back(next_uuid());
  // As chttpd_misc's: an ETag of the uuids and cache-busting headers (a cache must never replay them).
  std::string etag = "\"" + crypto::md5_hex(ids.dump()) + "\"";
  c.reply(200, json{{"uuids", ids}});
  c.res.set_header("Cache-Control", "no-cache");
  c.res.set_header("Pragma", "no-cache");
  c.res.set_header("Expires", "Mon, 01 Jan 1990 00:00:00 GMT");
  c.res.set_header("ETag", etag);
}

namespace {

// Form-encoded body (name=a&password=b) to a JSON object.
// The `name` and `password` fields of a form body (nothing else is looked at).
json parse_form(const std::string& body) {
  json out = json::object();
  http_params params;
  parse_query(body, params);
  for (const char* key : {"name", "password"}) {
    auto it = params.find(key);
    if (it != params.end()) out[key] = it->second;
  }
  return out;
}

constexpr size_t session_body_max_bytes = 16384;
constexpr size_t session_json_max_depth = 4;

json user_ctx_json(const user_ctx& u) {
  return json{{"name", u.name ? json(*u.name) : json(nullptr)}, {"roles", u.roles}};
}

}  // namespace

void handle_session(ctx& c) {
  if (c.method() == "GET") {
    if (!c.user.name && c.param("basic") == "true") return c.error(errc::unauthorized, "Please login.");
    json info = {{"authentication_handlers", authenticator::handlers(*c.node.cfg.current())},
                 {"authentication_db", "_users"}};
    if (!c.user.authenticated_by.empty()) info["authenticated"] = c.user.authenticated_by;
    return c.reply(200, json{{"ok", true}, {"userCtx", user_ctx_json(c.user)}, {"info", info}});
  }
  const char* cleared = "AuthSession=; Version=1; Path=/; HttpOnly; SameSite=Lax; Max-Age=0";
  if (c.method() == "DELETE") {
    c.reply(200, json{{"ok", true}});
    c.res.set_header("Set-Cookie", cleared);
    return;
  }
  if (c.method() != "POST") return c.method_not_allowed("GET,HEAD,POST,DELETE");
  // Anyone may post here: a name and a password need little room and no depth.
  if (c.req.body.size() > session_body_max_bytes) {
    return c.error(errc::too_large, "a /_session body is at most " + std::to_string(session_body_max_bytes) + " bytes");
  }
  std::string type = c.req.get_header_value("Content-Type");
  json body;
  if (type.rfind("application/x-www-form-urlencoded", 0) == 0) {
    body = parse_form(c.req.body);
  } else if (type.rfind("application/json", 0) == 0) {
    auto j = parse_json(c.req.body, session_json_max_depth, nullptr);
    if (!j || !j->is_object()) return c.error(errc::bad_request, "Request body must be a JSON object");
    body = std::move(*j);
  } else {
    return c.error(errc::bad_content_type,
                   "Content-Type must be 'application/x-www-form-urlencoded' or 'application/json'");
  }
  // As couch_httpd_auth: `name` (or `username`) is required; a missing password is an empty one.
  if (!body.contains("name") && body.contains("username")) body["name"] = body["username"];
  if (!body.contains("name")) return c.error(errc::bad_request, "request body must contain a username");
  if (!body.contains("password")) body["password"] = "";
  if (!body["name"].is_string() || !body["password"].is_string()) {
    return c.error(errc::unauthorized, "Name or password is incorrect.");
  }
  std::string name = body["name"].get<std::string>();
  auto u = c.node.auth.check_password(name, body["password"].get<std::string>());
  // couch_httpd_auth: ?next= (signed in) or ?fail= (not) answer 302 to that path on this host; a
  // failure clears the session cookie.
  const std::string go = c.param(u ? "next" : "fail");
  if (!u) {
    c.error(errc::unauthorized, "Name or password is incorrect.");
    c.res.set_header("Set-Cookie", cleared);
  } else {
    c.reply(200, json{{"ok", true}, {"name", name}, {"roles", u->roles}});
    c.res.set_header("Set-Cookie", c.node.auth.session_cookie(name));
  }
  if (c.has(u ? "next" : "fail")) {
    c.res.status = 302;
    c.res.set_header("Location", c.absolute_uri(go));
  }
}

void handle_membership(ctx& c) {
  if (c.method() != "GET") return c.method_not_allowed("GET");
  c.reply(200, json{{"all_nodes", c.node.cluster->live()}, {"cluster_nodes", c.node.cluster->all()}});
}

// Every node's tasks, as CouchDB lists the whole cluster's: this node's, then each connected
// node's that can tell (a node that does not answer in time is left out, and logged).
void handle_active_tasks(ctx& c) {
  if (c.method() != "GET") return c.method_not_allowed("GET");
  json out = c.node.tasks ? c.node.tasks->all() : json::array();
  for (const std::string& n : c.node.cluster->live()) {
    auto m = n == c.node.node_name ? nullptr : c.node.cluster->get(n);
    if (!m) continue;
    auto tasks = m->active_tasks();
    if (!tasks) {
      log::warning("the tasks of " + n + " could not be read: " + tasks.error().reason);
      continue;
    }
    for (const std::string& t : *tasks) {
      if (auto task = parse_json(t); task && task->is_object()) out.push_back(std::move(*task));
    }
  }
  c.reply(200, out);
}

namespace {

// PUT /_node/_local/_nodes/<name@host> {"rpc_port": N, "host": "..."?}: add a member at runtime.
// DELETE: remove one that holds no copy of any database (move them off first).
void handle_member(ctx& c, const std::string& name) {
  if (c.method() != "PUT" && c.method() != "DELETE") return c.method_not_allowed("PUT,DELETE");
  if (!c.node.cluster->clustered())
    return c.error(errc::bad_request, "this node is not clustered: set [cluster] rpc_port");
  size_t at = name.find('@');
  if (at == std::string::npos || at == 0 || at + 1 == name.size()) {
    return c.error(errc::bad_request, "a node name is name@host");
  }
  if (c.method() == "DELETE") {
    if (name == c.node.node_name) return c.error(errc::bad_request, "a node cannot remove itself: ask another member");
    auto& catalog = c.node.coord.catalog();
    if (auto st = catalog.refresh(); !st) return c.error(st);
    for (const std::string& db : catalog.names()) {
      auto m = catalog.find(db);
      if (!m || m->everywhere()) continue;  // system databases have a copy on every member
      for (size_t i = 0; i < m->q; ++i) {
        if (std::find(m->nodes[i].begin(), m->nodes[i].end(), name) != m->nodes[i].end()) {
          return c.error(errc::conflict, name + " still holds a copy of " + db + " range " + m->ranges[i].name() +
                                             ": move its copies off first (POST /_reshard/jobs, type move)");
        }
      }
    }
    if (auto st = c.node.cluster->remove_member(name); !st) return c.error(st);
    return c.reply(200, json{{"ok", true}});
  }
  auto body = parse_json(c.req.body.empty() ? "{}" : c.req.body);
  if (!body || !body->is_object()) return c.error(errc::bad_request, "Request body must be a JSON object");
  const json& port = (*body)["rpc_port"];
  if (!port.is_number_unsigned() || port.get<uint64_t>() == 0 || port.get<uint64_t>() > 65535) {
    return c.error(errc::bad_request, "`rpc_port` must be a port number");
  }
  std::string host = name.substr(at + 1);
  if (body->contains("host")) {
    if (!(*body)["host"].is_string()) return c.error(errc::bad_request, "`host` must be a string");
    host = (*body)["host"].get<std::string>();
  }
  if (auto st = c.node.cluster->add_member(name, host, port.get<uint16_t>()); !st) return c.error(st);
  c.reply(201, json{{"ok", true}});
}

}  // namespace

void handle_node(ctx& c) {
  auto& p = c.path;
  if (p.size() < 2) return c.error(errc::not_found, "missing");
  // Another member's figures and configuration, asked of it.
  const bool member = p.size() >= 3 && (p[2] == "_system" || p[2] == "_config") && c.node.cluster->connected(p[1]);
  if (p[1] != "_local" && p[1] != c.node.node_name && !member) return c.error(errc::not_found, "no such node: " + p[1]);
  if (p.size() == 2) {
    if (c.method() != "GET") return c.method_not_allowed("GET,HEAD");
    return c.reply(200, json{{"name", c.node.node_name}});
  }
  if (p[2] == "_nodes" && p.size() == 4) return handle_member(c, p[3]);
  if (p[2] == "_config") return handle_config(c);
  if (p[2] == "_prometheus" || p[2] == "_stats" || p[2] == "_system") return handle_node_metrics(c);
  c.error(errc::not_found, "missing");
}

}  // namespace settee
