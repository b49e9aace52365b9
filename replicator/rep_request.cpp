#include "replicator/rep_request.hpp"

#include <algorithm>

#include "node/crypto.hpp"
#include "query/mango_selector.hpp"
#include "wire/external_term.hpp"
#include "wire/message.hpp"

namespace settee {
namespace {

status bad(const std::string& reason) {
  return {errc::bad_request, reason};
}

// {remote, User, Host, NonDefaultPort, Path, Headers, OAuth} (couch_replicator_ids get_v4_endpoint).
eterm v4_endpoint(const rep_endpoint& e) {
  // A database of this node: {local, Name} as CouchDB 2 named local endpoints, so that the id
  // (and the checkpoints) do not change with the port the node listens on.
  if (!e.local_name.empty()) return eterm::tuple({eterm::atom("local"), eterm::binary(e.local_name)});
  std::vector<eterm> headers;
  for (auto& [k, v] : e.headers) headers.push_back(eterm::tuple({eterm::string(k), eterm::string(v)}));
  bool default_port =
      (e.scheme == "https" && e.port == 443) || (e.scheme == "http" && (e.port == 80 || e.port == 5984));
  std::string host = e.host;
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return eterm::tuple({eterm::atom("remote"), e.has_credentials ? eterm::string(e.user) : eterm::atom("undefined"),
                       eterm::string(host), default_port ? eterm::atom("default") : eterm::integer(e.port),
                       eterm::string(e.path), eterm::list(std::move(headers)), eterm::atom("undefined")});
}

// An object with its members sorted by name, at every depth (couch_replicator_filters:ejsort).
json sorted_members(const json& v) {
  if (v.is_array()) {
    json out = json::array();
    for (const json& e : v) out.push_back(sorted_members(e));
    return out;
  }
  if (!v.is_object()) return v;
  std::vector<std::pair<std::string, const json*>> members;
  for (auto it = v.begin(); it != v.end(); ++it) members.emplace_back(it.key(), &it.value());
  std::stable_sort(members.begin(), members.end(), [](auto& a, auto& b) { return a.first < b.first; });
  json out = json::object();
  for (auto& [k, e] : members) out[k] = sorted_members(*e);
  return out;
}

// A selector as couch_replicator_filters:parse hashes it: normalized (mango_selector:normalize,
// dotted paths) with its members sorted; one that does not compile as it is.
json hashed_selector(const json& selector) {
  if (!mango_selector::compile(selector)) return selector;
  return sorted_members(normalize_selector(selector));
}

// A filter's code as couch_replicator_filters:fetch_internal returns it: re:replace(Code,
// "^\s*(.*?)\s*$", "\\1") where the Erlang string's "\s" is a space, and without dotall a match
// never spans a line break: a code of one line (one final "\n" may follow) loses the spaces around
// it; any other code is hashed as it is.
std::string hashed_filter_code(const std::string& code) {
  const size_t nl = code.find('\n');
  const bool final_newline = nl != std::string::npos && nl + 1 == code.size();
  if (nl != std::string::npos && !final_newline) return code;
  const std::string line = final_newline ? code.substr(0, nl) : code;
  const size_t first = line.find_first_not_of(' ');
  const std::string trimmed =
      first == std::string::npos ? "" : line.substr(first, line.find_last_not_of(' ') - first + 1);
  return final_newline ? trimmed + "\n" : trimmed;
}

result<bool> boolean(const json& body, const char* name, bool def) {
  auto it = body.find(name);
  if (it == body.end()) return def;
  if (!it->is_boolean()) return bad(std::string("parameter `") + name + "` must be a boolean");
  return it->get<bool>();
}

// couch_util:to_integer: an integer, or a string of one.
result<int64_t> integer(const json& body, const char* name, int64_t def, int64_t min, int64_t max) {
  auto it = body.find(name);
  if (it == body.end()) return def;
  int64_t v = 0;
  if (it->is_number_integer() || it->is_number_unsigned()) {
    v = it->is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(it->get<uint64_t>(), INT64_MAX))
                                 : it->get<int64_t>();
  } else if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    char* end = nullptr;
    errno = 0;
    long long n = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno != 0) return bad(std::string("parameter `") + name + "` must be an integer");
    v = n;
  } else {
    return bad(std::string("parameter `") + name + "` must be an integer");
  }
  if (v < min || v > max)
    return bad(std::string("parameter `") + name + "` must be between " + std::to_string(min) + " and " +
               std::to_string(max));
  return v;
}

// doc_ids, selector, filter: at most one of them.
status parse_filters(const json& body, rep_request& r) {
  if (auto v = body.find("doc_ids"); v != body.end() && !v->is_null()) {
    if (!v->is_array()) return bad("parameter `doc_ids` must be an array");
    std::vector<std::string> ids;
    for (const json& id : *v) {
      if (!id.is_string()) return bad("parameter `doc_ids` must be an array of strings");
      ids.push_back(percent_decode(id.get<std::string>(), false));  // as the old replicator: unquoted
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    r.doc_ids = std::move(ids);
  }
  if (auto v = body.find("selector"); v != body.end()) {
    if (!v->is_object()) return bad("parameter `selector` must be a JSON object");
    r.selector = *v;
  }
  if (auto v = body.find("filter"); v != body.end() && !v->is_null()) {
    if (!v->is_string()) return bad("parameter `filter` must be a string");
    r.filter = v->get<std::string>();
    // The source's own filters (_doc_ids, _selector, _design: their arguments in query_params, as
    // `doc_ids` and `selector`), _view, or a design document's.
    const bool builtin =
        r.filter == "_view" || r.filter == "_doc_ids" || r.filter == "_selector" || r.filter == "_design";
    if (!builtin && r.filter.find('/') == std::string::npos)
      return bad("Invalid filter. Must match `ddocname/filtername` or `filtername`.");
  }
  if ((r.doc_ids ? 1 : 0) + (r.selector ? 1 : 0) + (r.filter.empty() ? 0 : 1) > 1)
    return bad("`doc_ids`,`filter`,`selector` are mutually exclusive");
  return {};
}

// The worker and batch tunables (couch_util:to_integer: integers or strings of them), bounded.
status parse_tunables(const json& body, rep_request& r) {
  struct tunable {
    const char* name;
    int64_t* into;
    int64_t def, min, max;
  };
  for (const tunable& t : {tunable{"worker_processes", &r.worker_processes, 4, 1, 64},
                           {"worker_batch_size", &r.worker_batch_size, 500, 1, 10000},
                           {"http_connections", &r.http_connections, 20, 1, 1000},
                           {"connection_timeout", &r.connection_timeout_ms, 30000, 100, 3600000},
                           {"retries_per_request", &r.retries_per_request, 5, 0, 100},
                           {"checkpoint_interval", &r.checkpoint_interval_ms, 30000, 100, 86400000}}) {
    auto v = integer(body, t.name, t.def, t.min, t.max);
    if (!v) return v.error();
    *t.into = *v;
  }
  return {};
}

}  // namespace

std::string compute_base_id(const rep_request& r, const std::string& server_uuid) {
  std::vector<eterm> parts = {eterm::binary(server_uuid), v4_endpoint(r.source), v4_endpoint(r.target)};
  if (r.doc_ids) {
    std::vector<eterm> ids;
    for (auto& id : *r.doc_ids) ids.push_back(eterm::binary(id));
    parts.push_back(eterm::list(std::move(ids)));
  } else if (r.selector) {
    parts.push_back(ejson(hashed_selector(*r.selector)));
  } else if (r.filter[0] == '_' && r.filter.find('/') == std::string::npos) {  // _view and the source's own
    parts.push_back(eterm::binary(r.filter));
    parts.push_back(ejson(r.query_params));
  } else if (!r.filter.empty()) {
    parts.push_back(eterm::binary(r.filter_code.empty() ? r.filter : hashed_filter_code(r.filter_code)));
    parts.push_back(ejson(r.query_params));
  }
  if (r.winning_revs_only) parts.push_back(eterm::binary("winning_revs_only"));
  if (r.since_seq) parts.push_back(ejson(*r.since_seq));
  return crypto::md5_hex(term_to_binary(eterm::list(std::move(parts))));
}

std::string rep_request::id() const {
  return base_id + (continuous ? "+continuous" : "") + (create_target ? "+create_target" : "");
}

json rep_request::describe() const {
  json out = {{"source", source.local_name.empty() ? source.url() : source.local_name},
              {"target", target.local_name.empty() ? target.url() : target.local_name}};
  if (continuous) out["continuous"] = true;
  if (create_target) out["create_target"] = true;
  if (doc_ids) out["doc_ids"] = *doc_ids;
  if (selector) out["selector"] = *selector;
  if (!filter.empty()) out["filter"] = filter, out["query_params"] = query_params;
  if (since_seq) out["since_seq"] = *since_seq;
  if (winning_revs_only) out["winning_revs_only"] = true;
  return out;
}

result<rep_request> parse_rep_request(const json& body, const rep_context& ctx) {
  if (!body.is_object()) return bad("Request body must be a JSON object");
  rep_request r;
  auto flag = [&](const char* name, bool& into, bool def) -> status {
    auto v = boolean(body, name, def);
    if (!v) return v.error();
    into = *v;
    return {};
  };
  for (auto [name, into, def] : {std::tuple{"cancel", &r.cancel, false},
                                 {"create_target", &r.create_target, false},
                                 {"winning_revs_only", &r.winning_revs_only, false},
                                 {"continuous", &r.continuous, false},
                                 {"use_bulk_get", &r.use_bulk_get, true}})
    if (auto st = flag(name, *into, def); !st) return st;
  if (auto v = body.find("use_checkpoints"); v != body.end()) r.use_checkpoints = !(v->is_boolean() && !v->get<bool>());
  for (const char* name : {"replication_id", "_local_id", "id"}) {
    if (auto v = body.find(name); v != body.end() && v->is_string()) {
      std::string id = v->get<std::string>();
      std::replace(id.begin(), id.end(), ' ', '+');  // couch_replicator_ids:convert
      r.cancel_id = id;
    }
  }
  if (r.cancel && !r.cancel_id.empty() && !body.contains("source")) return r;  // cancel by id
  if (auto v = body.find("create_target_params"); v != body.end()) {
    if (!v->is_object()) return bad("parameter `create_target_params` must be a JSON object");
    r.create_target_params = *v;
  }
  if (auto v = body.find("query_params"); v != body.end()) {
    if (!v->is_object()) return bad("parameter `query_params` must be an object");
    r.query_params = *v;
  }
  if (auto st = parse_filters(body, r); !st) return st;
  if (auto v = body.find("since_seq"); v != body.end() && !v->is_null()) r.since_seq = *v;
  if (auto st = parse_tunables(body, r); !st) return st;
  auto src = body.find("source");
  auto tgt = body.find("target");
  if (src == body.end() || src->is_null()) return bad("Missing replicator database");
  if (tgt == body.end() || tgt->is_null()) return bad("Missing replicator database");
  auto s = parse_endpoint(*src, ctx.self_url, ctx.self_auth);
  if (!s) return bad("source has an invalid url: " + s.error().reason);
  auto t = parse_endpoint(*tgt, ctx.self_url, ctx.self_auth);
  if (!t) return bad("target has an invalid url: " + t.error().reason);
  r.source = std::move(*s);
  r.target = std::move(*t);
  for (rep_endpoint* e : {&r.source, &r.target}) {
    if (!e->local_name.empty()) e->session = ctx.self_session;
    if (ctx.rules) e->rules = ctx.rules;
    e->restricted = ctx.restricted;
  }
  r.base_id = compute_base_id(r, ctx.server_uuid);
  return r;
}

}  // namespace settee
