// /_node/{node}/_config: the node's configuration read and changed at run time, as CouchDB's
// chttpd_node answers it (for server admins only: the router checks). A change is applied where the
// node can apply it live (node_services::applies_live); otherwise the answer carries
// "X-Settee-Restart: required" and the log says which setting waits for a restart.
#include "http/handlers.hpp"
#include "node/log.hpp"
#include "wire/json_util.hpp"

namespace settee {

namespace {

json section_json(const config& cfg, const std::string& sec) {
  auto it = cfg.sections().find(sec);
  return it == cfg.sections().end() ? json::object() : json(it->second);
}

void note_restart(ctx& c, const std::string& sec, const std::string& key) {
  if (sec == "admins" || !c.node.applies_live || c.node.applies_live(sec, key)) return;
  c.res.set_header("X-Settee-Restart", "required");
  log::warning("config: [" + sec + "] " + key + " takes effect when the node restarts");
}

void change_key(ctx& c, const std::string& sec, const std::string& key) {
  if (live_config::locked_section(sec))
    return c.error(errc::forbidden, "Config section blacklisted for modification over HTTP API.");
  const bool persist = c.req.get_header_value("X-Couch-Persist") != "false";
  auto old = [&]() -> result<std::string> {
    if (c.method() == "DELETE") return c.node.cfg.erase(sec, key, persist);
    auto body = parse_client_json(c.req.body, {errc::bad_request, "invalid UTF-8 JSON"});
    if (!body) return body.error();
    if (!body->is_string()) return status{errc::bad_request, "a JSON string expected"};
    return c.node.cfg.set(sec, key, body->get<std::string>(), persist);
  }();
  if (!old) return c.error(old.error());
  note_restart(c, sec, key);
  c.reply(200, json(*old));
}

}  // namespace

void handle_config(ctx& c) {
  const auto& p = c.path;  // _node, name, _config, ...
  const auto snapshot = c.node.cfg.current();
  if (p.size() == 3) {
    if (c.method() != "GET") return c.method_not_allowed("GET");
    json all = json::object();
    for (auto& [sec, kv] : snapshot->sections()) all[sec] = kv;
    return c.reply(200, all);
  }
  if (p.size() == 4 && p[3] == "_reload") {
    if (c.method() != "POST") return c.method_not_allowed("POST");
    if (auto st = c.node.cfg.reload(); !st) return c.error(st);
    return c.reply(200, json{{"ok", true}});
  }
  if (p.size() == 4) {
    if (c.method() != "GET") return c.method_not_allowed("GET");
    return c.reply(200, section_json(*snapshot, p[3]));
  }
  if (p.size() > 5) return c.error(errc::not_found, "missing");
  if (c.method() == "PUT" || c.method() == "DELETE") return change_key(c, p[3], p[4]);
  if (c.method() != "GET") return c.method_not_allowed("GET,PUT,DELETE");
  if (!snapshot->has(p[3], p[4])) return c.error(errc::not_found, "unknown_config_value");
  c.reply(200, json(snapshot->get(p[3], p[4])));
}

}  // namespace settee
