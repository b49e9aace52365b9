#include "query/mango_query.hpp"

#include <set>

#include "node/crypto.hpp"

namespace settee {

namespace {

result<bool> boolean_of(const json& v) {
  if (!v.is_boolean()) return status(errc::mango_invalid_boolean, "Invalid boolean value: " + erlang_w(v));
  return v.get<bool>();
}

result<uint64_t> non_neg_integer(const json& v) {
  if (!v.is_number_integer() || (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0))
    return status(errc::mango_invalid_non_neg, erlang_w(v) + " is not an integer greater than or equal to zero");
  return v.get<uint64_t>();
}

result<uint64_t> pos_integer(const json& v) {
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() <= 0) ||
      (v.is_number_unsigned() && v.get<uint64_t>() == 0))
    return status(errc::mango_invalid_pos, erlang_w(v) + " is not an integer greater than zero");
  return v.get<uint64_t>();
}

// use_index: "ddoc", "_design/ddoc", "ddoc/name", "_design/ddoc/name", [ddoc], [ddoc, name], null, [].
result<std::vector<std::string>> use_index_of(const json& v) {
  auto bad = [&] { return status(errc::mango_invalid_index_name, "Invalid index name: " + erlang_w(v)); };
  if (v.is_null()) return std::vector<std::string>{};
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    size_t slash = s.find('/');
    if (slash == std::string::npos) return std::vector<std::string>{s};
    std::string first = s.substr(0, slash), rest = s.substr(slash + 1);
    if (first == "_design") {
      size_t next = rest.find('/');
      if (next == std::string::npos) return std::vector<std::string>{rest};
      return std::vector<std::string>{rest.substr(0, next), rest.substr(next + 1)};
    }
    return std::vector<std::string>{first, rest};
  }
  if (v.is_array() && v.size() <= 2) {
    std::vector<std::string> out;
    for (const auto& e : v) {
      if (!e.is_string()) return bad();
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  return bad();
}

}  // namespace

result<std::vector<std::pair<std::string, bool>>> parse_sort(const json& v) {
  if (!v.is_array())
    return status(errc::mango_invalid_sort_json, "Sort must be an array of sort specs, not: " + erlang_p(v));
  std::vector<std::pair<std::string, bool>> out;
  for (const auto& spec : v) {
    if (spec.is_string()) {
      out.emplace_back(spec.get<std::string>(), false);
    } else if (spec.is_object() && spec.size() == 1) {
      const json& dir = spec.begin().value();
      if (!dir.is_string() || (dir != "asc" && dir != "desc"))
        return status(errc::mango_invalid_sort_dir, "Invalid sort direction: " + erlang_w(dir));
      out.emplace_back(spec.begin().key(), dir == "desc");
    } else if (spec.is_object()) {
      return status(errc::mango_invalid_sort_field, "Invalid sort field: " + erlang_p(spec));
    } else {
      return status(errc::mango_invalid_sort_json, "Sort must be an array of sort specs, not: " + erlang_p(v));
    }
  }
  for (const auto& s : out)
    if (s.second != out.front().second)
      return status(errc::mango_mixed_sort, "Sorts currently only support a single direction for all fields.");
  return out;
}

namespace {

result<std::vector<std::string>> fields_of(const json& v) {
  if (!v.is_array())
    return status(errc::mango_invalid_fields, "Fields must be an array of strings, not: " + erlang_w(v));
  std::vector<std::string> out;
  for (const auto& f : v) {
    if (!f.is_string()) return status(errc::mango_invalid_field, "Invalid JSON for field spec: " + erlang_w(f));
    out.push_back(f.get<std::string>());
  }
  return out;
}

// The value at `path` in `doc`, or null (objects only: as mango_doc:get_field for projections).
const json* at(const json& doc, const std::vector<std::string>& path) {
  const json* cur = &doc;
  for (const auto& part : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(part);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

}  // namespace

result<find_query> parse_find(const json& body) {
  if (!body.is_object()) return status(errc::bad_request, "Request body must be a JSON object");
  find_query q;
  static const std::set<std::string> known = {
      "selector",      "use_index", "bookmark",  "limit", "skip",   "sort",   "fields",
      "partition",     "r",         "conflicts", "stale", "update", "stable", "execution_stats",
      "allow_fallback"};
  auto sel = body.find("selector");
  if (sel == body.end()) return status(errc::mango_missing_key, "Missing required key: selector");
  if (!sel->is_object())
    return status(errc::mango_invalid_selector, "Selector must be a JSON object, not: " + erlang_w(*sel));
  auto matcher = mango_selector::compile(*sel);
  if (!matcher) return matcher.error();
  q.selector = *sel;
  q.matcher = std::move(*matcher);
  auto opt = [&](const char* key) -> const json* {
    auto it = body.find(key);
    return it == body.end() ? nullptr : &*it;
  };
  if (const json* v = opt("use_index")) {
    auto u = use_index_of(*v);
    if (!u) return u.error();
    q.use_index = std::move(*u);
  }
  if (const json* v = opt("bookmark")) {
    if (v->is_string() && !v->get_ref<const std::string&>().empty()) {
      q.bookmark = v->get<std::string>();
    } else if (!v->is_null() && !v->is_string()) {
      return status(errc::mango_invalid_bookmark, "Invalid bookmark value: " + v->dump());
    }
  }
  if (const json* v = opt("limit")) {
    auto n = non_neg_integer(*v);
    if (!n) return n.error();
    q.limit = *n;
  }
  if (const json* v = opt("skip")) {
    auto n = non_neg_integer(*v);
    if (!n) return n.error();
    q.skip = *n;
  }
  if (const json* v = opt("sort")) {
    auto s = parse_sort(*v);
    if (!s) return s.error();
    q.sort = std::move(*s);
  }
  if (const json* v = opt("fields")) {
    auto f = fields_of(*v);
    if (!f) return f.error();
    q.fields = std::move(*f);
  }
  if (const json* v = opt("partition")) {
    if (!v->is_string() || !v->get_ref<const std::string&>().empty())
      return status(errc::bad_request, "`partition` is not supported: this database is not partitioned");
  }
  if (const json* v = opt("r")) {
    auto n = pos_integer(*v);
    if (!n) return n.error();
    q.r = *n;
  }
  for (auto [key, out] : {std::pair<const char*, bool*>{"conflicts", &q.conflicts},
                          {"update", &q.update},
                          {"stable", &q.stable},
                          {"execution_stats", &q.execution_stats},
                          {"allow_fallback", &q.allow_fallback}}) {
    if (const json* v = opt(key)) {
      auto b = boolean_of(*v);
      if (!b) return b.error();
      *out = *b;
    }
  }
  if (const json* v = opt("stale")) {
    if (*v == "ok") {
      q.stale = "ok";
    } else if (!(*v == "false" || *v == false)) {
      return status(errc::mango_invalid_value, "Invalid value for stale: " + erlang_w(*v));
    }
  }
  for (auto it = body.begin(); it != body.end(); ++it)
    if (!known.count(it.key()))
      return status(errc::mango_invalid_key, "Invalid key " + it.key() + " for this request.");
  return q;
}

json project(const json& doc, const std::vector<std::string>& fields) {
  if (fields.empty()) return doc;
  json out = json::object();
  for (const auto& f : fields) {
    const std::vector<std::string> path = split_field(f);
    const json* v = at(doc, path);
    if (!v) continue;
    json* into = &out;
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      json& next = (*into)[path[i]];
      if (!next.is_object()) next = json::object();
      into = &next;
    }
    (*into)[path.back()] = *v;
  }
  return out;
}

std::string all_docs_bookmark(const std::string& last_id) {
  return crypto::base64_encode(json::array({"all_docs", last_id}).dump(), true);
}

std::optional<std::string> all_docs_position(const std::string& bookmark) {
  std::string text;
  if (!crypto::base64_decode(bookmark, text)) return std::nullopt;
  json v = json::parse(text, nullptr, false);
  if (!v.is_array() || v.size() != 2 || v[0] != "all_docs" || !v[1].is_string()) return std::nullopt;
  return v[1].get<std::string>();
}

std::string index_bookmark(const std::string& signature,
                           const std::vector<std::pair<std::string, std::string>>& positions) {
  json ranges = json::array();
  for (const auto& [range, pos] : positions) ranges.push_back(json::array({range, crypto::base64_encode(pos, true)}));
  return crypto::base64_encode(json::array({"json", signature.substr(0, 16), ranges}).dump(), true);
}

std::optional<index_position> index_positions(const std::string& bookmark) {
  std::string text;
  if (!crypto::base64_decode(bookmark, text)) return std::nullopt;
  json v = json::parse(text, nullptr, false);
  if (!v.is_array() || v.size() != 3 || v[0] != "json" || !v[1].is_string() || !v[2].is_array()) return std::nullopt;
  index_position out;
  out.signature = v[1].get<std::string>();
  for (const json& e : v[2]) {
    std::string pos;
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_string() ||
        !crypto::base64_decode(e[1].get<std::string>(), pos))
      return std::nullopt;
    out.ranges.emplace_back(e[0].get<std::string>(), std::move(pos));
  }
  return out;
}

std::string union_bookmark(size_t part, const std::string& inner) {
  return crypto::base64_encode(json::array({"or", part, inner}).dump(), true);
}

std::optional<std::pair<size_t, std::string>> union_position(const std::string& bookmark) {
  std::string text;
  if (!crypto::base64_decode(bookmark, text)) return std::nullopt;
  json v = json::parse(text, nullptr, false);
  if (!v.is_array() || v.size() != 3 || v[0] != "or" || !v[1].is_number_unsigned() || !v[2].is_string())
    return std::nullopt;
  return std::make_pair(v[1].get<size_t>(), v[2].get<std::string>());
}

}  // namespace settee
