#include "search/search_ddoc.hpp"

#include "node/crypto.hpp"

namespace settee {

namespace {

const char* member_of(search_api api) {
  return api == search_api::nouveau ? "nouveau" : "indexes";
}

// The default analyzer (member `def`, a name) and the field analyzers (member `fields`, an object
// of names) of `v`, each when present; false when one is not what it must be.
bool read_analyzers(const json& v, const char* def, const char* fields, search_index_def& d) {
  if (v.contains(def)) {
    if (!v[def].is_string()) return false;
    d.default_analyzer = v[def].get<std::string>();
  }
  if (v.contains(fields)) {
    if (!v[fields].is_object()) return false;
    for (const auto& [field, a] : v[fields].items()) {
      if (!a.is_string()) return false;
      d.field_analyzers[field] = a.get<std::string>();
    }
  }
  return true;
}

// An analyzer as a design document may give it: a name, or (clouseau's `perfield`) an object whose
// `default` and `fields` name the others. Returns false when it is neither.
bool read_analyzer(const json& v, search_index_def& d) {
  if (v.is_string()) {
    d.default_analyzer = v.get<std::string>();
    return true;
  }
  if (!v.is_object() || !v.contains("name") || !v["name"].is_string()) return false;
  if (v["name"].get<std::string>() != "perfield") {
    d.default_analyzer = v["name"].get<std::string>();
    return true;
  }
  return read_analyzers(v, "default", "fields", d);
}

}  // namespace

result<search_index_def> search_index_of(search_api api, const std::string& ddoc_id, const json& ddoc,
                                         const std::string& name) {
  const json* all = ddoc.is_object() && ddoc.contains(member_of(api)) ? &ddoc[member_of(api)] : nullptr;
  if (!all || !all->is_object() || !all->contains(name)) return status{errc::not_found, name + " not found."};
  const status invalid{errc::invalid_design_doc, "index `" + name + "` must have parameter `index`"};
  const json& def = (*all)[name];
  const bool mango =
      api == search_api::clouseau && def.is_object() && def.contains("index") && def["index"].is_object();
  if (!def.is_object() || !def.contains("index") || (!def["index"].is_string() && !mango)) return invalid;
  search_index_def d;
  d.api = api;
  d.ddoc_id = ddoc_id;
  d.name = name;
  if (mango)
    d.mango = def["index"];
  else
    d.function = def["index"].get<std::string>();
  if (api == search_api::nouveau) {
    if (!read_analyzers(def, "default_analyzer", "field_analyzers", d)) return invalid;
    if (def.contains("lucene_version")) {
      if (!def["lucene_version"].is_number_integer()) return invalid;
      d.lucene_version = def["lucene_version"].get<int>();
    }
  } else if (def.contains("analyzer") && !read_analyzer(def["analyzer"], d)) {
    return invalid;
  }
  // What decides the index's terms, in a fixed order (std::map sorts the field analyzers).
  json terms = json::array({member_of(api), d.lucene_version, d.default_analyzer, json::object(), d.function});
  if (mango) terms.push_back(d.mango);
  for (const auto& [field, a] : d.field_analyzers) terms[3][field] = a;
  d.signature = crypto::sha256_hex(terms.dump());
  return d;
}

void partition_index(search_index_def& d, bool partitioned_db, const json& ddoc) {
  const json* options = ddoc.is_object() && ddoc.contains("options") ? &ddoc["options"] : nullptr;
  const bool off =
      options && options->is_object() && options->contains("partitioned") && (*options)["partitioned"] == json(false);
  d.partitioned = partitioned_db && !off;
  if (d.partitioned) d.signature = crypto::sha256_hex(d.signature + "/partitioned");
}

std::string clouseau_analyzer(const std::string& name) {
  return name == "standard" ? "classic" : name;
}

text_analysis analysis_of(const search_index_def& def) {
  auto named = [&](const std::string& n) { return def.api == search_api::clouseau ? clouseau_analyzer(n) : n; };
  text_analysis a;
  a.default_analyzer = named(def.default_analyzer);
  for (const auto& [field, name] : def.field_analyzers) a.fields[field] = named(name);
  return a;
}

std::vector<search_index_def> search_indexes_of(search_api api, const std::string& ddoc_id, const json& ddoc) {
  std::vector<search_index_def> out;
  if (!ddoc.is_object() || !ddoc.contains(member_of(api)) || !ddoc[member_of(api)].is_object()) return out;
  for (const auto& [name, _] : ddoc[member_of(api)].items())
    if (auto d = search_index_of(api, ddoc_id, ddoc, name)) out.push_back(std::move(*d));
  return out;
}

}  // namespace settee
