#include "query/mango_index.hpp"

#include <set>

#include "node/collation.hpp"
#include "node/crypto.hpp"
#include "query/mango_query.hpp"
#include "query/mango_text.hpp"
#include "wire/external_term.hpp"

namespace settee {

namespace {

result<index_def> def_of(const json& index) {
  if (!index.is_object())
    return status(errc::mango_invalid_index, "JSON indexes must be an object, not: " + erlang_w(index));
  index_def d;
  for (auto it = index.begin(); it != index.end(); ++it) {
    if (it.key() != "fields" && it.key() != "partial_filter_selector")
      return status(errc::mango_invalid_key, "Invalid key " + it.key() + " for this request.");
  }
  auto f = index.find("fields");
  if (f == index.end()) return status(errc::mango_missing_key, "Missing required key: fields");
  auto fields = parse_sort(*f);  // an index's fields are a sort's
  if (!fields) return fields.error();
  if (fields->empty()) return status(errc::mango_invalid_index, "An index needs at least one field.");
  d.fields = std::move(*fields);
  if (auto p = index.find("partial_filter_selector"); p != index.end()) {
    if (!p->is_object())
      return status(errc::mango_invalid_selector, "Selector must be a JSON object, not: " + erlang_w(*p));
    auto compiled = mango_selector::compile(*p);
    if (!compiled) return compiled.error();
    d.partial_filter = normalize_selector(*p);  // stored normalized, as mango_opts:validate_selector
  }
  d.seal();
  return d;
}

json fields_object(const index_def& d) {
  json o = json::object();
  for (const auto& [f, desc] : d.fields) o[f] = desc ? "desc" : "asc";
  return o;
}

// The view an index is in its design document (mango_idx_view:make_view).
json view_of(const query_index& ix, const json& given_fields) {
  json map = {{"fields", fields_object(ix.def)}, {"partial_filter_selector", ix.def.partial_filter}};
  return json{{"map", map}, {"reduce", "_count"}, {"options", {{"def", {{"fields", given_fields}}}}}};
}

// mango_idx:gen_name: the SHA-1 hex of ?term_to_bin({Def, lists:usort(Opts)}), Def the `index` as
// given and Opts mango_opts:validate_idx_create's (each option, or its default), so that an index
// gets CouchDB's generated name and design document, and two names make two design documents.
std::string generated_name(const json& body) {
  auto given = [&](const char* key, eterm absent) {
    auto v = body.find(key);
    return v == body.end() ? absent : ejson(*v);
  };
  const eterm def = ejson(body["index"]);
  const eterm opts = eterm::list({
      eterm::tuple({eterm::atom("ddoc"), given("ddoc", eterm::atom("auto_name"))}),
      eterm::tuple({eterm::atom("def"), def}),
      eterm::tuple({eterm::atom("name"), given("name", eterm::atom("auto_name"))}),
      eterm::tuple({eterm::atom("partitioned"), given("partitioned", eterm::atom("db_default"))}),
      eterm::tuple({eterm::atom("type"), given("type", eterm::binary("json"))}),
      eterm::tuple({eterm::atom("w"), given("w", eterm::integer(2))}),
  });
  return crypto::sha1_hex(term_to_binary(eterm::tuple({def, opts})));
}

}  // namespace

std::string index_def::definition() const {
  if (!definition_.empty()) return definition_;
  return json{{"fields", to_json()["fields"]}, {"partial_filter_selector", partial_filter}}.dump();
}

std::string index_def::signature() const {
  return !signature_.empty() ? signature_ : crypto::sha256_hex(definition());
}

void index_def::seal() {
  definition_.clear();
  signature_.clear();
  definition_ = definition();
  signature_ = crypto::sha256_hex(definition_);
}

json index_def::to_json() const {
  json fields = json::array();
  for (const auto& [f, desc] : this->fields) fields.push_back(json{{f, desc ? "desc" : "asc"}});
  json out = {{"fields", fields}};
  if (!partial_filter.empty()) out["partial_filter_selector"] = partial_filter;
  return out;
}

result<index_request> parse_index_request(const json& body) {
  if (!body.is_object()) return status(errc::bad_request, "Request body must be a JSON object");
  static const std::set<std::string> known = {"index", "type", "name", "ddoc", "w", "partitioned"};
  for (auto it = body.begin(); it != body.end(); ++it)
    if (!known.count(it.key()))
      return status(errc::mango_invalid_key, "Invalid key " + it.key() + " for this request.");
  auto index = body.find("index");
  if (index == body.end()) return status(errc::mango_missing_key, "Missing required key: index");
  const bool text = body.value("type", json("json")) == "text";
  if (auto t = body.find("type"); t != body.end() && *t != "json" && !text) {
    return status(errc::mango_invalid_index,
                  "Invalid type for index: " + (t->is_string() ? t->get<std::string>() : erlang_w(*t)));
  }
  for (const char* key : {"name", "ddoc"}) {
    auto v = body.find(key);
    if (v != body.end() && (!v->is_string() || v->get_ref<const std::string&>().empty()))
      return status(errc::mango_invalid_index_name, "Invalid index name: " + erlang_w(*v));
  }
  if (auto w = body.find("w"); w != body.end() && (!w->is_number_integer() || w->get<int64_t>() <= 0))
    return status(errc::mango_invalid_pos, erlang_w(*w) + " is not an integer greater than zero");
  if (auto p = body.find("partitioned"); p != body.end() && !p->is_boolean())
    return status(errc::mango_invalid_boolean, "Invalid boolean value: " + erlang_w(*p));
  index_request out;
  if (text) {
    auto def = parse_text_index(*index);
    if (!def) return def.error();
    out.index.text = std::move(*def);
  } else {
    auto def = def_of(*index);
    if (!def) return def.error();
    out.index.def = std::move(*def);
  }
  const std::string generated = generated_name(body);
  out.named = body.contains("name");
  out.index.name = out.named ? body["name"].get<std::string>() : generated;
  std::string ddoc = body.contains("ddoc") ? body["ddoc"].get<std::string>() : generated;
  out.index.ddoc = ddoc.rfind("_design/", 0) == 0 ? ddoc : "_design/" + ddoc;
  out.index.partitioned = body.value("partitioned", false);
  return out;
}

result<index_def> parse_definition(const std::string& definition) {
  json d = json::parse(definition, nullptr, false);
  if (d.is_discarded()) return status(errc::internal, "unreadable index definition");
  if (auto p = d.find("partial_filter_selector"); p != d.end() && p->empty()) d.erase("partial_filter_selector");
  return def_of(d);
}

std::vector<query_index> indexes_of(const std::string& ddoc_id, const json& ddoc) {
  std::vector<query_index> out;
  if (!ddoc.is_object() || ddoc.value("language", "") != "query") return out;
  auto views = ddoc.find("views");
  if (views == ddoc.end() || !views->is_object()) return out;
  for (auto it = views->begin(); it != views->end(); ++it) {
    const json& v = it.value();
    if (!v.is_object() || !v.contains("map") || !v["map"].is_object()) continue;
    const json& map = v["map"];
    auto f = map.find("fields");
    if (f == map.end() || !f->is_object() || f->empty()) continue;
    json index = {{"fields", json::array()}};
    for (auto fi = f->begin(); fi != f->end(); ++fi) index["fields"].push_back(json{{fi.key(), fi.value()}});
    if (auto p = map.find("partial_filter_selector"); p != map.end() && !(p->is_object() && p->empty()))
      index["partial_filter_selector"] = *p;
    auto def = def_of(index);
    if (!def) continue;  // not a valid index: left out, as CouchDB's from_ddoc
    query_index ix;
    ix.ddoc = ddoc_id;
    ix.name = it.key();
    ix.def = std::move(*def);
    if (auto o = ddoc.find("options"); o != ddoc.end() && o->is_object())
      ix.partitioned = o->value("partitioned", false);
    out.push_back(std::move(ix));
  }
  return out;
}

json with_index(const json& ddoc, const query_index& ix, bool& changed) {
  json out = ddoc.is_object() ? ddoc : json{{"_id", ix.ddoc}, {"language", "query"}, {"views", json::object()}};
  if (!out.contains("views") || !out["views"].is_object()) out["views"] = json::object();
  changed = true;
  for (const query_index& have : indexes_of(ix.ddoc, out)) {
    if (have.name == ix.name && have.def.definition() == ix.def.definition()) changed = false;
  }
  if (!changed) return out;
  json given = json::array();
  for (const auto& [f, desc] : ix.def.fields) given.push_back(desc ? json{{f, "desc"}} : json(f));
  out["views"][ix.name] = view_of(ix, given);
  return out;
}

std::optional<json> without_index(const json& ddoc, const std::string& type, const std::string& name, bool& empty) {
  const char* member = type == "text" ? "indexes" : "views";  // where each kind lives
  if (!ddoc.is_object() || !ddoc.contains(member) || !ddoc[member].is_object() || !ddoc[member].contains(name))
    return std::nullopt;
  json out = ddoc;
  out[member].erase(name);
  if (out[member].empty()) out.erase(member);
  auto holds = [&](const char* m) { return out.contains(m) && out[m].is_object() && !out[m].empty(); };
  empty = !holds("views") && !holds("indexes");
  return out;
}

std::shared_ptr<const mango_keys> mango_keys::shared() {
  static const auto keys = std::make_shared<const mango_keys>();
  return keys;
}

std::shared_ptr<const mango_keys::compiled> mango_keys::compile(const std::string& definition) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cache_.find(definition); it != cache_.end()) return it->second;
  }
  auto c = std::make_shared<compiled>();
  if (auto d = parse_definition(definition)) {
    for (const auto& f : d->fields) c->paths.push_back(split_field(f.first));
    if (!d->partial_filter.empty()) {
      if (auto m = mango_selector::compile(d->partial_filter)) c->filter = std::move(*m);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (cache_.size() >= 4096) cache_.clear();  // definitions of indexes long gone
  cache_.emplace(definition, c);
  return c;
}

std::optional<std::string> mango_keys::key(const compiled& c, const json& doc) {
  if (c.paths.empty()) return std::nullopt;
  if (c.filter) {
    auto ok = c.filter->matches(doc);
    if (!ok || !*ok) return std::nullopt;
  }
  json key = json::array();
  for (const auto& path : c.paths) {
    const json* v = field_at(doc, path);
    if (!v) return std::nullopt;
    key.push_back(*v);
  }
  return collation::sort_key(key);
}

std::optional<std::string> mango_keys::key_of(const std::string& definition, const json& doc) const {
  return key(*compile(definition), doc);
}

std::string mango_keys::version() const {
  // Bump the number when what key() makes of a document changes (it names the rows a file holds).
  return "mango-keys 1, collator " + collation::collator_version();
}

void mango_keys::keys_of(const std::vector<const json_index_def*>& defs, std::string_view id, std::string_view rev,
                         std::string_view body, std::vector<std::optional<std::string>>& out) const {
  out.assign(defs.size(), std::nullopt);
  auto parsed = parse_json(body);  // a stored body: its keys are unique and not _id or _rev
  if (!parsed || !parsed->is_object()) return;
  // The document as a selector sees it: _id and _rev first, then its fields (appended as they are:
  // a lookup per key would make a large document quadratic).
  json doc = json::object();
  auto& members = doc.get_ref<json::object_t&>();
  members.reserve(parsed->size() + 2);
  members.emplace_back("_id", std::string(id));
  members.emplace_back("_rev", std::string(rev));
  for (auto& [k, v] : parsed->get_ref<json::object_t&>()) members.emplace_back(k, std::move(v));
  for (size_t i = 0; i < defs.size(); ++i) out[i] = key(*compile(defs[i]->definition), doc);
}

}  // namespace settee
