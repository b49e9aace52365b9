#include "js/query_server.hpp"

#include <nlohmann/json.hpp>

#include "js/json_text.hpp"
#include "node/json.hpp"

namespace settee::js {
namespace {

using nlohmann::json;

const char* fault_name(fault f) {
  switch (f) {
    case fault::compilation:
      return "compilation_error";
    case fault::timeout:
      return "timeout";
    case fault::memory:
      return "memory";
    default:
      return "internal";
  }
}

std::string logs_field(std::vector<std::string> logs) {
  if (logs.empty()) return "";
  std::string out = ",\"log\":[";
  for (size_t i = 0; i < logs.size(); ++i) out += (i ? "," : "") + quote(logs[i]);
  return out + "]";
}

// The functions of a design document that run (views' map and reduce but the built-in reduces,
// validate_doc_update, filters, updates), with CouchDB's words for where they are.
struct named_source {
  std::vector<std::string> path;
  std::string source, what;
};

std::vector<named_source> functions_of(const json& ddoc) {
  std::vector<named_source> out;
  if (auto views = ddoc.find("views"); views != ddoc.end() && views->is_object()) {
    for (auto& [name, view] : views->items()) {
      if (!view.is_object() || name == "lib") continue;
      if (auto m = view.find("map"); m != view.end() && m->is_string())
        out.push_back({{"views", name, "map"}, m->get<std::string>(), "map:" + name});
      if (auto r = view.find("reduce"); r != view.end() && r->is_string() && r->get<std::string>().rfind('_', 0) != 0)
        out.push_back({{"views", name, "reduce"}, r->get<std::string>(), "reduce:" + name});
    }
  }
  if (auto v = ddoc.find("validate_doc_update"); v != ddoc.end() && v->is_string())
    out.push_back({{"validate_doc_update"}, v->get<std::string>(), "validate_doc_update"});
  // Filters and update functions are not compiled on save, as CouchDB (couch_mrview:validate compiles
  // the views only): a design document PouchDB or couchapp tools hold with a broken one is stored and
  // replicated, and the function fails when it is called. A broken validate_doc_update is refused
  // (settee: CouchDB stores it, and then every write to the database fails).
  return out;
}

std::string joined(const std::vector<std::string>& path) {
  std::string out;
  for (auto& p : path) out += (out.empty() ? "" : ".") + p;
  return out;
}

// CouchDB's reason for a function that does not compile (couch_query_servers:try_compile for views).
std::string compile_reason(const named_source& f, const std::string& error) {
  if (f.path[0] == "views")
    return "Compilation of the " + f.path[2] + " function in the '" + f.path[1] + "' view failed: " + error;
  return "Compilation of the " + f.what + " function failed: " + error;
}

}  // namespace

std::string query_server::answer(const outcome& r, const std::string& extra) {
  std::string logs = logs_field(r.logs.empty() ? e_.take_logs() : r.logs);
  switch (r.what) {
    case fault::none:
      return "{\"ok\":" + r.value + extra + logs + "}";
    case fault::thrown:
      if (!r.name.empty())
        return "{\"error\":" + quote(r.name) + ",\"reason\":" + quote(r.message) + extra + logs + "}";
      return "{\"thrown\":" + r.value + extra + logs + "}";
    default:
      return std::string("{\"fault\":\"") + fault_name(r.what) + "\",\"reason\":" + quote(r.message) + logs + "}";
  }
}

std::string query_server::handle(const std::string& header, const std::string& body) {
  json h = json::parse(header, nullptr, false);
  if (!h.is_array() || h.empty() || !h[0].is_string())
    return "{\"fault\":\"internal\",\"reason\":\"a request header is a JSON array naming a command\"}";
  const std::string cmd = h[0].get<std::string>();
  if (cmd == "reset") {
    for (auto& [key, d] : ddocs_) e_.close_scope(d.scope);
    ddocs_.clear();
    lru_.clear();
    return "{\"ok\":true}";
  }
  if (cmd == "compile") return compile_all(body);
  if (cmd == "each" && h.size() == 3 && h[1].is_string() && h[2].is_array()) {
    std::vector<std::string> path;
    for (auto& p : h[2])
      if (p.is_string()) path.push_back(p.get<std::string>());
    if (!path.empty() && path.size() == h[2].size()) return run_each(h[1].get<std::string>(), path, body);
  }
  // ["index", key, [[api, name], ...]]: search index functions (api: "nouveau" or "indexes") over
  // [docs]; each document's index() calls, per function, as "map" answers emits.
  if (cmd == "index" && h.size() == 3 && h[1].is_string() && h[2].is_array()) {
    std::vector<std::vector<std::string>> paths;
    for (auto& p : h[2])
      if (p.is_array() && p.size() == 2 && p[0].is_string() && p[1].is_string() &&
          (p[0] == "nouveau" || p[0] == "indexes"))
        paths.push_back({p[0].get<std::string>(), p[1].get<std::string>(), "index"});
    if (!paths.empty() && paths.size() == h[2].size()) return map_paths(h[1].get<std::string>(), paths, body);
  }
  if (cmd == "map" && h.size() == 3 && h[1].is_string() && h[2].is_array()) {
    std::vector<std::string> views;
    for (auto& v : h[2])
      if (v.is_string()) views.push_back(v.get<std::string>());
    if (!views.empty() && views.size() == h[2].size()) return map(h[1].get<std::string>(), views, body);
  }
  if (cmd == "ddoc" && h.size() == 3 && h[1] == "new" && h[2].is_string()) return add(h[2].get<std::string>(), body);
  if (cmd == "ddoc" && h.size() == 3 && h[1].is_string() && h[2].is_array()) {
    std::vector<std::string> path;
    for (auto& p : h[2])
      if (p.is_string()) path.push_back(p.get<std::string>());
    if (!path.empty() && path.size() == h[2].size()) return run(h[1].get<std::string>(), path, body);
  }
  return "{\"fault\":\"internal\",\"reason\":" + quote("unknown command " + header) + "}";
}

std::string query_server::add(const std::string& key, const std::string& body) {
  forget(key);
  ddoc d;
  outcome r = e_.open_scope(body, d.scope);
  if (!r.ok()) return answer(r);
  d.source = body;
  ddocs_.emplace(key, std::move(d));
  lru_.push_back(key);
  while (ddocs_.size() > max_ddocs_ && !lru_.empty()) forget(lru_.front());
  return "{\"ok\":true}";
}

void query_server::forget(const std::string& key) {
  auto it = ddocs_.find(key);
  if (it == ddocs_.end()) return;
  e_.close_scope(it->second.scope);
  ddocs_.erase(it);
  lru_.remove(key);
}

std::string query_server::compile_all(const std::string& body) {
  json ddoc = json::parse(body, nullptr, false);
  if (!ddoc.is_object()) return "{\"fault\":\"internal\",\"reason\":\"a design document is a JSON object\"}";
  engine::scope_id scope = 0;
  outcome r = e_.open_scope(body, scope);
  if (!r.ok()) return answer(r);
  std::string result = "{\"ok\":true}";
  for (const auto& f : functions_of(ddoc)) {
    engine::fn_id id = 0;
    outcome c = e_.compile(scope, f.source, joined(f.path), id);
    if (c.what == fault::compilation) {
      result = "{\"fault\":\"compilation_error\",\"reason\":" + quote(compile_reason(f, c.message)) + "}";
      break;
    }
    if (!c.ok()) {
      result = answer(c);
      break;
    }
  }
  e_.close_scope(scope);
  (void)e_.take_logs();
  return result;
}

outcome query_server::function_at(ddoc& d, const std::vector<std::string>& path, engine::fn_id& out) {
  const std::string where = joined(path);
  if (auto it = d.compiled.find(where); it != d.compiled.end()) {
    out = it->second;
    return {};
  }
  json doc = json::parse(d.source, nullptr, false);
  const json* at = &doc;
  for (const auto& p : path) {
    if (!at->is_object() || !at->contains(p)) {
      at = nullptr;
      break;
    }
    at = &(*at)[p];
  }
  outcome r;
  if (!at || !at->is_string()) {
    r.what = fault::thrown;
    r.value = "[\"error\",\"not_found\"," + quote("missing " + path[0] + " function " + path.back()) + "]";
    return r;
  }
  r = e_.compile(d.scope, at->get<std::string>(), where, out);
  if (r.ok()) d.compiled.emplace(where, out);
  if (r.what == fault::compilation) {  // first compiled now (filters, updates): CouchDB's reason
    std::string what = path[0];
    if (path.size() == 2 && (path[0] == "filters" || path[0] == "updates"))
      what = path[0].substr(0, path[0].size() - 1) + " '" + path[1] + "'";
    r.message = compile_reason({path, at->get<std::string>(), what}, r.message);
  }
  return r;
}

std::string query_server::find_function(const std::string& key, const std::vector<std::string>& path,
                                        engine::fn_id& fn) {
  auto it = ddocs_.find(key);
  if (it == ddocs_.end()) return "{\"fault\":\"internal\",\"reason\":\"unknown design document\"}";
  lru_.remove(key);
  lru_.push_back(key);
  outcome c = function_at(it->second, path, fn);
  return c.ok() ? std::string() : answer(c);
}

std::string query_server::run_each(const std::string& key, const std::vector<std::string>& path,
                                   const std::string& body) {
  engine::fn_id fn = 0;
  if (std::string failed = find_function(key, path, fn); !failed.empty()) return failed;
  std::string out = "{\"each\":[";
  bool first = true;
  for (const outcome& r : e_.call_each(fn, body)) {
    out += (first ? "" : ",") + answer(r);
    first = false;
  }
  return out + "]}";
}

namespace {

// ,"errors":[...] for an answer, when there are errors.
std::string errors_field(const std::vector<std::string>& errors) {
  if (errors.empty()) return "";
  std::string out = ",\"errors\":[";
  for (size_t i = 0; i < errors.size(); ++i) out += (i ? "," : "") + quote(errors[i]);
  return out + "]";
}

}  // namespace

std::string query_server::map(const std::string& key, const std::vector<std::string>& views, const std::string& body) {
  std::vector<std::vector<std::string>> paths;
  for (const std::string& view : views) paths.push_back({"views", view, "map"});
  return map_paths(key, paths, body);
}

std::string query_server::map_paths(const std::string& key, const std::vector<std::vector<std::string>>& paths,
                                    const std::string& body) {
  std::vector<engine::fn_id> fns;
  for (const auto& path : paths) {
    engine::fn_id fn = 0;
    if (std::string failed = find_function(key, path, fn); !failed.empty()) return failed;
    fns.push_back(fn);
  }
  std::vector<std::string> errors;
  std::string rows;
  outcome r = e_.map_docs(fns, body, rows, errors);
  if (!r.ok()) return answer(r);
  r.value = std::move(rows);
  return answer(r, errors_field(errors));
}

std::string query_server::run(const std::string& key, const std::vector<std::string>& path, const std::string& body) {
  engine::fn_id fn = 0;
  if (std::string failed = find_function(key, path, fn); !failed.empty()) return failed;
  const std::string& kind = path[0];
  if (kind == "filters" || (kind == "views" && path.size() == 3 && path[2] == "map")) {
    // body: [docs, req] for filters, [docs] for a view's map; parsed once, by the engine.
    std::vector<bool> passed;
    std::vector<std::string> errors;
    outcome r = e_.each_doc(fn, body, kind == "views", passed, errors);
    if (!r.ok()) return answer(r);
    r.value = "[";
    for (size_t i = 0; i < passed.size(); ++i) r.value += std::string(i ? "," : "") + (passed[i] ? "true" : "false");
    r.value += "]";
    return answer(r, errors_field(errors));
  }
  return answer(e_.call(fn, body));
}

}  // namespace settee::js
