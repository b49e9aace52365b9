#include "http/design_doc.hpp"

#include "actors/js_pool.hpp"
#include "actors/members.hpp"

#include <string>
#include <vector>

namespace settee {

namespace {

enum type { string_t = 1, object_t = 2, array_t = 4, boolean_t = 8 };

bool has_type(const json& v, int types) {
  return ((types & string_t) && v.is_string()) || ((types & object_t) && v.is_object()) ||
         ((types & array_t) && v.is_array()) || ((types & boolean_t) && v.is_boolean());
}

std::string type_names(int types) {
  std::string out;
  for (auto [bit, name] :
       {std::pair{object_t, "object"}, {string_t, "string"}, {array_t, "array"}, {boolean_t, "boolean"}}) {
    if (types & bit) out += (out.empty() ? "" : " or ") + std::string(name);
  }
  return out;
}

status wrong_type(const std::string& path, int types) {
  return {errc::invalid_design_doc, "`" + path + "` field must have " + type_names(types) + " type"};
}

// One step of a path: a member name, or "" for every member of an object.
struct step {
  const char* key;
  int types;
};

// validate_ddoc_fields for one path: each value along it, where present, has its step's type.
status check_path(const json& v, const std::vector<step>& path, size_t i, const std::string& at) {
  if (i == path.size() || !v.is_object()) return {};
  const step& s = path[i];
  if (*s.key == '\0') {  // any member
    for (auto it = v.begin(); it != v.end(); ++it) {
      std::string here = at.empty() ? it.key() : at + "." + it.key();
      if (!has_type(it.value(), s.types)) return wrong_type(here, s.types);
      if (auto st = check_path(it.value(), path, i + 1, here); !st) return st;
    }
    return {};
  }
  auto it = v.find(s.key);
  if (it == v.end()) return {};  // absent is fine; null is a value of the wrong type
  std::string here = at.empty() ? s.key : at + "." + s.key;
  if (!has_type(*it, s.types)) return wrong_type(here, s.types);
  return check_path(*it, path, i + 1, here);
}

}  // namespace

status validate_design_doc(const json& doc) {
  const json& language = member(doc, "language");
  // Mango's indexes ("query") hold their map as an object.
  const int map_type = language.is_string() && language.get<std::string>() == "query" ? object_t : string_t;
  const std::vector<std::vector<step>> paths = {
      {{"filters", object_t}, {"", object_t | string_t}},
      {{"language", string_t}},
      {{"lists", object_t}, {"", object_t | string_t}},
      {{"options", object_t}},
      {{"options", object_t}, {"include_design", boolean_t}},
      {{"options", object_t}, {"local_seq", boolean_t}},
      {{"options", object_t}, {"partitioned", boolean_t}},
      {{"rewrites", string_t | array_t}},
      {{"shows", object_t}, {"", object_t | string_t}},
      {{"updates", object_t}, {"", object_t | string_t}},
      {{"validate_doc_update", string_t}},
      {{"views", object_t}, {"lib", object_t}},
      {{"views", object_t}, {"", object_t}, {"map", map_type}},
      {{"views", object_t}, {"", object_t}, {"reduce", string_t}},
  };
  for (const auto& path : paths)
    if (auto st = check_path(doc, path, 0, ""); !st) return st;
  const json& views = member(doc, "views");
  if (views.is_object()) {
    for (auto it = views.begin(); it != views.end(); ++it) {
      if (it.key() == "lib") continue;
      if (!it.value().contains("map"))
        return {errc::invalid_design_doc, "View `" + it.key() + "` must contain map function"};
    }
  }
  if (member(member(doc, "options"), "partitioned") == json(true))
    return {errc::invalid_design_doc, "partitioned option cannot be true in a non-partitioned database."};
  // Built-in reduces are known by name (JavaScript ones are compiled once JavaScript runs).
  const bool javascript = !language.is_string() || language.get<std::string>() == "javascript";
  if (javascript && views.is_object()) {
    for (auto it = views.begin(); it != views.end(); ++it) {
      if (it.key() == "lib") continue;
      const json& reduce = member(it.value(), "reduce");
      if (!reduce.is_string()) continue;
      const std::string& r = reduce.get_ref<const std::string&>();
      if (r.empty() || r[0] != '_') continue;
      bool known = false;
      for (const char* builtin : {"_sum", "_count", "_stats", "_approx_count_distinct"})
        known = known || r.rfind(builtin, 0) == 0;
      if (!known) return {errc::invalid_design_doc, "`" + r + "` is not a supported reduce function."};
    }
  }
  return {};
}

status compile_design_doc(const json& doc, js_pool* js) {
  auto lang = doc.find("language");
  if (lang != doc.end() && !(lang->is_string() && lang->get<std::string>() == "javascript")) return {};
  bool has_functions = false;
  for (const char* field : {"views", "validate_doc_update", "filters", "updates"}) has_functions |= doc.contains(field);
  if (!has_functions) return {};
  if (!js) return status{errc::internal, "JavaScript is not available on this node"};
  auto r = js->compile(doc.dump());
  if (!r) return r.error();
  if (r->ok()) return {};
  if (r->what == js_reply::kind::fault && (r->name == "compilation_error" || r->name == "timeout"))
    return status{errc::compilation_error, r->reason};
  return status{errc::internal, "compiling the design document failed: " + r->name + ": " + r->reason};
}

status validation_runs_everywhere(const json& doc, cluster_members* cluster) {
  if (!cluster || !cluster->clustered() || !doc.contains("validate_doc_update")) return {};
  for (const std::string& name : cluster->all()) {
    auto m = cluster->get(name);
    if (!m || !m->runs_javascript())
      return status{errc::not_implemented, "node " + name +
                                               " does not run validate_doc_update functions (an older release, or "
                                               "not connected now): writes it coordinates would pass unvalidated"};
  }
  return {};
}

}  // namespace settee
