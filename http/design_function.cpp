#include "http/design_function.hpp"

#include <strings.h>

#include "actors/doc_render.hpp"
#include "actors/js_pool.hpp"
#include "node/crypto.hpp"

namespace settee {

result<design_doc> open_design_doc(ctx& c, const db_meta& db, const std::string& ddoc_id) {
  auto d = c.node.coord.open_doc(db, ddoc_id);
  if (!d) return d.error();
  if (!d->found || d->info.tree.winner_deleted()) return status{errc::not_found, "missing"};
  const rev_id rev = d->info.tree.rev(d->info.tree.winner());
  const std::string* body = d->body(rev);
  if (!body) return status{errc::not_found, "missing"};
  return design_doc{rev, *body, parse_json(*body).value_or(json())};
}

result<design_function> open_design_function(ctx& c, const db_meta& db, const std::string& ddoc_id,
                                             const std::vector<std::string>& path) {
  auto d = open_design_doc(c, db, ddoc_id);
  if (!d) return d.error();
  const json* at = &d->doc;
  for (const std::string& key : path) {
    if (!at->is_object() || !at->contains(key)) return status{errc::not_found, "missing json key: " + key};
    at = &(*at)[key];
  }
  if (!c.node.js) return status{errc::not_implemented, "JavaScript is not available on this node"};
  const std::string rev = d->rev.str();
  return design_function{worker_key(db.key(), ddoc_id, rev), render_doc(ddoc_id, rev, false, d->text, "")};
}

namespace {

// "a=1; b=2" as {"a":"1","b":"2"} (mochiweb_cookies:parse_cookie, without its quoting rules).
json cookies_of(const std::string& header) {
  json out = json::object();
  size_t at = 0;
  while (at < header.size()) {
    size_t end = header.find(';', at);
    if (end == std::string::npos) end = header.size();
    std::string pair = header.substr(at, end - at);
    at = end + 1;
    size_t first = pair.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    pair.erase(0, first);
    size_t eq = pair.find('=');
    if (eq == 0) continue;
    out[pair.substr(0, eq)] = eq == std::string::npos ? "" : pair.substr(eq + 1);
  }
  return out;
}

}  // namespace

json js_request_object(ctx& c, const db_meta& db, const json& id) {
  json query = json::object(), headers = json::object(), form = json::object();
  for (const auto& [k, v] : c.req.params) query[k] = v;
  for (const auto& [k, v] : c.req.headers) headers[k] = v;
  json path = json::array();
  for (const auto& segment : c.path) path.push_back(segment);
  const std::string type = c.req.get_header_value("Content-Type");
  if (strncasecmp(type.c_str(), "application/x-www-form-urlencoded", 33) == 0)
    for (auto& [k, v] : parse_query_list(c.req.body)) form[k] = v;
  json user = {{"db", db.name}, {"name", c.user.name ? json(*c.user.name) : json(nullptr)}, {"roles", c.user.roles}};
  return json{{"info", {{"db_name", db.name}}},
              {"id", id},
              {"uuid", crypto::random_hex(16)},
              {"method", c.req.method},
              {"requested_path", path},
              {"path", path},
              {"raw_path", c.req.target},
              {"query", query},
              {"headers", headers},
              {"body", c.req.body.empty() ? std::string("undefined") : c.req.body},
              {"peer", c.req.peer.substr(0, c.req.peer.rfind(':'))},  // the address without its port, as mochiweb's
              {"form", form},
              {"cookie", cookies_of(c.req.get_header_value("Cookie"))},
              {"userCtx", user},
              {"secObj", c.security ? *c.security : json::object()}};
}

}  // namespace settee
