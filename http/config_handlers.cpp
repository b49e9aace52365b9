// /_node/{node}/_config: the node's configuration read and changed at run time, as CouchDB's
// chttpd_node answers it (for server admins only: the router checks). A change is applied where the
// node can apply it live (node_services::applies_live); otherwise the answer carries
// "X-Settee-Restart: required" and the log says which setting waits for a restart. Another
// member's configuration is asked of it over the node protocol (cluster_member::configure), which
// answers with this same code there.
#include "http/handlers.hpp"
#include "node/log.hpp"
#include "wire/json_util.hpp"

namespace settee {

namespace {

config_reply reply_json(int code, const json& body) {
  return config_reply{code, body.dump(-1, ' ', false, json::error_handler_t::replace), false};
}

config_reply reply_error(const status& st) {
  return reply_json(http_status_of(st.code), error_json(st));
}

config_reply change_key(node_services& node, const config_call& call, const std::string& sec, const std::string& key) {
  if (live_config::locked_section(sec))
    return reply_error({errc::forbidden, "Config section blacklisted for modification over HTTP API."});
  auto old = [&]() -> result<std::string> {
    if (call.method == "DELETE") return node.cfg.erase(sec, key, call.persist);
    auto body = parse_client_json(call.body, {errc::bad_request, "invalid UTF-8 JSON"});
    if (!body) return body.error();
    if (!body->is_string()) return status{errc::bad_request, "a JSON string expected"};
    return node.cfg.set(sec, key, body->get<std::string>(), call.persist);
  }();
  if (!old) return reply_error(old.error());
  config_reply r = reply_json(200, json(*old));
  r.restart = sec != "admins" && node.applies_live && !node.applies_live(sec, key);
  if (r.restart) log::warning("config: [" + sec + "] " + key + " takes effect when the node restarts");
  return r;
}

std::string allowed_methods(const std::vector<std::string>& path) {
  if (path.empty() || (path.size() == 1 && path[0] != "_reload")) return "GET";
  return path.size() == 1 ? "POST" : "GET,PUT,DELETE";
}

}  // namespace

config_reply answer_config(node_services& node, const config_call& call) {
  const auto& p = call.path;
  const auto snapshot = node.cfg.current();
  auto not_allowed = [&] {
    return reply_json(405, error_json({errc::method_not_allowed, "Only " + allowed_methods(p) + " allowed"}));
  };
  if (p.size() > 2) return reply_error({errc::not_found, "missing"});
  if (p.empty()) {
    if (call.method != "GET") return not_allowed();
    json all = json::object();
    for (auto& [sec, kv] : snapshot->sections()) all[sec] = kv;
    return reply_json(200, all);
  }
  if (p.size() == 1 && p[0] == "_reload") {
    if (call.method != "POST") return not_allowed();
    if (auto st = node.cfg.reload(); !st) return reply_error(st);
    return reply_json(200, json{{"ok", true}});
  }
  if (p.size() == 1) {
    if (call.method != "GET") return not_allowed();
    auto it = snapshot->sections().find(p[0]);
    return reply_json(200, it == snapshot->sections().end() ? json::object() : json(it->second));
  }
  if (call.method == "PUT" || call.method == "DELETE") return change_key(node, call, p[0], p[1]);
  if (call.method != "GET") return not_allowed();
  if (!snapshot->has(p[0], p[1])) return reply_error({errc::not_found, "unknown_config_value"});
  return reply_json(200, json(snapshot->get(p[0], p[1])));
}

void handle_config(ctx& c) {
  config_call call{
      c.method(), {c.path.begin() + 3, c.path.end()}, c.req.body, c.req.get_header_value("X-Couch-Persist") != "false"};
  const std::string& name = c.path[1];
  result<config_reply> r = status{errc::not_found, "no such node: " + name};
  if (name == "_local" || name == c.node.node_name) {
    r = answer_config(c.node, call);
  } else if (c.node.cluster && c.node.cluster->connected(name)) {
    auto m = c.node.cluster->get(name);
    r = m ? m->configure(call) : result<config_reply>(status{errc::not_found, "no such node: " + name});
  }
  if (!r) return c.error(r.error());
  if (r->restart) c.res.set_header("X-Settee-Restart", "required");
  if (r->code == 405) c.res.set_header("Allow", allowed_methods(call.path));
  c.reply_raw(r->code, r->body + "\n");
}

}  // namespace settee
