#include "search/search_query.hpp"

#include <algorithm>
#include <limits>
#include <regex>
#include <set>
#include <tuple>

#include "node/crypto.hpp"

namespace settee {

namespace {

status parse_error(const std::string& reason) {
  return {errc::query_parse_error, reason};
}

// A query string's value as JSON: decoded, and a bare word that is not JSON as the string it is
// (sort=-year works without quotes).
json qs_json(const std::string& value) {
  json v = json::parse(value, nullptr, false);
  return v.is_discarded() ? json(value) : v;
}

result<std::vector<std::string>> strings_of(const char* name, const json& v) {
  if (v.is_string()) return std::vector<std::string>{v.get<std::string>()};
  if (!v.is_array()) return parse_error(std::string(name) + " parameter must be a list of strings");
  std::vector<std::string> out;
  for (const json& s : v) {
    if (!s.is_string() || s.get<std::string>().empty())
      return parse_error(std::string("all items in ") + name + " parameter must be strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

result<std::map<std::string, std::vector<text_range>>> ranges_of(const json& v) {
  if (!v.is_object()) return parse_error("ranges parameter must be an object");
  std::map<std::string, std::vector<text_range>> out;
  for (const auto& [field, list] : v.items()) {
    if (!list.is_array()) return parse_error("range values must be lists of objects");
    for (const json& r : list) {
      if (!r.is_object()) return parse_error("all values in ranges parameter must be objects");
      text_range range;
      if (!r.contains("label") || !r["label"].is_string()) return parse_error("a range must have a string label");
      range.label = r["label"].get<std::string>();
      for (auto [key, bound] : {std::pair{"min", &range.min}, std::pair{"max", &range.max}}) {
        if (!r.contains(key) || r[key].is_null()) continue;
        if (!r[key].is_number()) return parse_error(std::string("range ") + key + " must be a number");
        *bound = r[key].get<double>();
      }
      for (auto [key, flag] :
           {std::pair{"min_inclusive", &range.min_inclusive}, std::pair{"max_inclusive", &range.max_inclusive}}) {
        if (!r.contains(key)) continue;
        if (!r[key].is_boolean()) return parse_error(std::string("range ") + key + " must be a boolean");
        *flag = r[key].get<bool>();
      }
      out[field].push_back(std::move(range));
    }
  }
  return out;
}

// A positive integer parameter (limit, top_n).
result<size_t> positive(const char* name, const json& v, bool from_qs) {
  int64_t n = 0;
  if (v.is_number_integer()) {
    n = v.get<int64_t>();
  } else if (from_qs && v.is_number_unsigned()) {
    n = INT64_MAX;
  } else {
    return parse_error(std::string(name) + " parameter must be an integer");
  }
  if (n <= 0) return parse_error(std::string(name) + " parameter must be greater than zero");
  return static_cast<size_t>(n);
}

result<bool> boolean(const char* name, const json& v) {
  if (v.is_boolean()) return v.get<bool>();
  return parse_error(std::string("Invalid value for ") + name + ": " + v.dump());
}

// {"@type": type, "value": v}, its two members placed directly (a braced list builds an array per
// member first: a tenth of a search answer's CPU, two per hit).
json order_value_json(const order_value& v, const std::string& sort_key) {
  json out = json::object();
  auto& members = out.get_ref<json::object_t&>();
  members.reserve(2);
  const bool score = sort_key == "-<score>" || sort_key == "<score>";
  const char* type = v.type != order_value::kind::number ? "string" : score ? "float" : "double";
  members.emplace_back("@type", type);
  if (v.type == order_value::kind::missing)
    members.emplace_back("value", nullptr);
  else if (v.type == order_value::kind::text)
    members.emplace_back("value", v.text);
  else
    members.emplace_back("value", v.number);
  return out;
}

json stats_json(const text_stats& s) {
  json freqs = json::array();
  for (const auto& [term, n] : s.freqs) freqs.push_back(json::array({term, n}));
  return json{{"docs", s.docs}, {"freqs", freqs}};
}

text_stats stats_of(const json& j) {
  text_stats s;
  s.docs = j.value("docs", uint64_t{0});
  for (const json& f : j.value("freqs", json::array()))
    if (f.is_array() && f.size() == 2 && f[0].is_string() && f[1].is_number_unsigned())
      s.freqs[f[0].get<std::string>()] = f[1].get<uint64_t>();
  return s;
}

json order_wire(const text_order& o) {
  json out = json::array();
  for (const order_value& v : o) {
    if (v.type == order_value::kind::number)
      out.push_back(v.number);
    else if (v.type == order_value::kind::text)
      out.push_back(v.text);
    else
      out.push_back(nullptr);
  }
  return out;
}

text_order order_of_wire(const json& j) {
  text_order o;
  if (!j.is_array()) return o;
  for (const json& v : j) {
    order_value x;
    if (v.is_number()) {
      x.number = v.get<double>();
    } else if (v.is_string()) {
      x.type = order_value::kind::text;
      x.text = v.get<std::string>();
    } else {
      x.type = order_value::kind::missing;
    }
    o.push_back(std::move(x));
  }
  return o;
}

json ranges_json(const std::map<std::string, std::vector<text_range>>& ranges) {
  json out = json::object();
  for (const auto& [field, list] : ranges)
    for (const text_range& r : list)
      out[field].push_back(json{{"label", r.label},
                                {"min", std::isinf(r.min) ? json() : json(r.min)},
                                {"max", std::isinf(r.max) ? json() : json(r.max)},
                                {"min_inclusive", r.min_inclusive},
                                {"max_inclusive", r.max_inclusive}});
  return out;
}

json facets_json(const std::map<std::string, std::map<std::string, uint64_t>>& f) {
  json out = json::object();
  for (const auto& [field, values] : f) out[field] = values;
  return out;
}

std::map<std::string, std::map<std::string, uint64_t>> facets_of(const json& j) {
  std::map<std::string, std::map<std::string, uint64_t>> out;
  if (!j.is_object()) return out;
  for (const auto& [field, values] : j.items()) {
    if (!values.is_object()) continue;
    auto& counted = out[field];  // kept without values too (no match)
    for (const auto& [label, n] : values.items())
      if (n.is_number_unsigned()) counted[label] = n.get<uint64_t>();
  }
  return out;
}

}  // namespace

result<search_params> nouveau_params(const std::map<std::string, std::string>& qs, const json* body) {
  search_params p;
  const bool from_qs = body == nullptr;
  auto get = [&](const char* name) -> std::optional<json> {
    if (from_qs) {
      auto it = qs.find(name);
      if (it == qs.end()) return std::nullopt;
      return qs_json(it->second);
    }
    if (!body->contains(name)) return std::nullopt;
    return (*body)[name];
  };
  if (from_qs) {
    auto it = qs.find("q");
    if (it == qs.end()) return parse_error("q parameter is mandatory");
    p.query.query = it->second;
  } else {
    auto q = get("q");
    if (!q) return parse_error("q parameter is mandatory");
    if (!q->is_string()) return parse_error("Invalid value for query: " + q->dump());
    p.query.query = q->get<std::string>();
  }
  if (auto v = get("limit")) {
    auto n = positive("limit", *v, from_qs);
    if (!n) return n.error();
    p.query.limit = *n;
  }
  if (auto v = get("top_n")) {
    auto n = positive("top_n", *v, from_qs);
    if (!n) return n.error();
    if (*n > 1000) return status{errc::bad_request, "topN must be less than or equal to 1000"};
    p.query.top_n = *n;
  }
  if (auto v = get("sort"); v && !v->is_null()) {
    auto s = strings_of("sort", *v);
    if (!s) return s.error();
    p.query.sort = std::move(*s);
  }
  if (auto v = get("counts"); v && !v->is_null()) {
    auto s = strings_of("counts", *v);
    if (!s) return s.error();
    p.query.counts = std::move(*s);
  }
  if (auto v = get("ranges"); v && !v->is_null()) {
    auto r = ranges_of(*v);
    if (!r) return r.error();
    p.query.ranges = std::move(*r);
  }
  for (auto [name, flag] : {std::pair{"update", &p.update}, std::pair{"include_docs", &p.include_docs}}) {
    auto v = get(name);
    if (!v) continue;
    auto b = boolean(name, *v);
    if (!b) return b.error();
    *flag = *b;
  }
  if (auto v = get("bookmark"); v && !v->is_null()) {
    const std::string text = v->is_string() ? v->get<std::string>() : v->dump();
    auto after = unpack_bookmark(text);
    if (!after) return after.error();
    if (!after->empty()) p.query.after = std::move(*after);
  }
  if (auto it = qs.find("partition"); it != qs.end()) p.partition = it->second;
  return p;
}

namespace {

// A Clouseau range "[0 TO 100]", "{10 TO Infinity}" (mixed brackets allowed) as a text_range.
result<text_range> clouseau_range(const std::string& label, const json& v) {
  static const std::regex re("^\\s*([\\[{])\\s*(\\S+)\\s+TO\\s+(\\S+)\\s*([\\]}])\\s*$");
  std::smatch m;
  const std::string text = v.is_string() ? v.get<std::string>() : "";
  if (!std::regex_match(text, m, re)) return parse_error("invalid range for " + label + ": " + v.dump());
  text_range r;
  r.label = label;
  r.min_inclusive = m[1] == "[";
  r.max_inclusive = m[4] == "]";
  const double inf = std::numeric_limits<double>::infinity();
  for (auto [bound, out, open] : {std::tuple{m[2].str(), &r.min, -inf}, std::tuple{m[3].str(), &r.max, inf}}) {
    if (bound == "*" || bound == "Infinity" || bound == "-Infinity") {
      *out = bound == "-Infinity" ? -inf : bound == "Infinity" ? inf : open;
      continue;
    }
    char* end = nullptr;
    *out = std::strtod(bound.c_str(), &end);
    if (end != bound.c_str() + bound.size()) return parse_error("invalid range for " + label + ": " + v.dump());
  }
  return r;
}

// A Clouseau sort key: its type suffix ("<number>", "<string>") dropped, the index knows it.
std::string clouseau_sort_key(const std::string& s) {
  if (s == "<score>" || s == "-<score>") return s;
  const size_t lt = s.rfind('<');
  return lt != std::string::npos && s.back() == '>' ? s.substr(0, lt) : s;
}

// The non-negative integer `name` (limit), at most `most`; positive when `positive`.
result<size_t> clouseau_int(const char* name, const json& v, int64_t most, bool positive) {
  if (!v.is_number_integer()) return parse_error(std::string("Invalid value for ") + name + ": " + v.dump());
  const int64_t n = v.get<int64_t>();
  if (most > 0 && n > most)
    return parse_error(std::string("Value for ") + name + " is too large, must not exceed " + std::to_string(most));
  if (positive && n <= 0) return parse_error(std::string(name) + " must be greater than zero");
  if (n < 0) return parse_error(std::string(name) + " must be greater than or equal to zero");
  return static_cast<size_t>(n);
}

// One of Clouseau's query parameters (q, limit, bookmark, sort, stale, include_*): false when `k`
// is none of them.
result<bool> clouseau_query_param(const std::string& k, const json& v, search_params& p, bool& has_q) {
  if (k == "q" || k == "query") {
    if (!v.is_string()) return parse_error("Invalid value for q: " + v.dump());
    p.query.query = v.get<std::string>();
    has_q = true;
  } else if (k == "limit") {
    auto n = clouseau_int("limit", v, 200, false);
    if (!n) return n.error();
    p.query.limit = *n;
  } else if (k == "bookmark") {
    if (v.is_null()) return true;
    auto after = unpack_bookmark(v.is_string() ? v.get<std::string>() : v.dump());
    if (!after) return after.error();
    if (!after->empty()) p.query.after = std::move(*after);
  } else if (k == "sort") {
    auto keys = strings_of("sort", v);
    if (!keys) return keys.error();
    for (std::string& key : *keys) p.query.sort.push_back(clouseau_sort_key(key));
  } else if (k == "stale") {
    if (v != json("ok")) return parse_error("stale only available as stale=ok");
    p.update = false;
  } else if (k == "update") {
    if (v == json("false") || v == json(false)) p.update = false;
  } else if (k == "include_docs") {
    if (v == json("true") || v == json(true)) {
      p.include_docs = true;
    } else if (v != json("false") && v != json(false)) {
      return parse_error("Invalid value for include_docs: " + v.dump());
    }
  } else if (k == "include_fields") {
    auto f = strings_of("include_fields", v);
    if (!f) return f.error();
    p.include_fields = std::move(*f);
  } else {
    return false;
  }
  return true;
}

// One of Clouseau's facet, highlight and grouping parameters (others are ignored, as dreyfus's).
status clouseau_other_param(const std::string& k, const json& v, search_params& p) {
  if (k == "counts") {
    auto f = strings_of("counts", v);
    if (!f) return f.error();
    p.query.counts = std::move(*f);
    p.query.top_n = std::numeric_limits<size_t>::max();  // Clouseau counts every value
  } else if (k == "ranges") {
    if (!v.is_object()) return parse_error("ranges must be an object");
    for (const auto& [field, labels] : v.items()) {
      if (!labels.is_object()) return parse_error("ranges must be an object of objects");
      for (const auto& [label, range] : labels.items()) {
        auto r = clouseau_range(label, range);
        if (!r) return r.error();
        p.query.ranges[field].push_back(std::move(*r));
      }
    }
  } else if (k == "drilldown") {
    // [field, value...], or a list of them; each occurrence adds one.
    const bool many = v.is_array() && !v.empty() && v[0].is_array();
    for (const json& entry : many ? v : json::array({v})) {
      if (!entry.is_array() || entry.size() < 2) return parse_error("drilldown must be [field, value, ...]");
      std::vector<std::string> e;
      for (const json& s : entry) e.push_back(s.is_string() ? s.get<std::string>() : s.dump());
      p.query.drilldown.push_back(std::move(e));
    }
  } else if (k == "highlight_fields") {
    auto f = strings_of("highlight_fields", v);
    if (!f) return f.error();
    p.query.highlight_fields = std::move(*f);
  } else if (k == "highlight_pre_tag" || k == "highlight_post_tag") {
    if (!v.is_string()) return parse_error("Invalid value for " + k + ": " + v.dump());
    (k == "highlight_pre_tag" ? p.query.highlight_pre : p.query.highlight_post) = v.get<std::string>();
  } else if (k == "highlight_number" || k == "highlight_size") {
    auto n = clouseau_int(k.c_str(), v, 0, true);
    if (!n) return n.error();
    (k == "highlight_number" ? p.query.highlight_number : p.query.highlight_size) = *n;
  } else if (k == "group_field" || k == "group_by") {
    if (!v.is_string()) return parse_error("Invalid value for " + k + ": " + v.dump());
    p.group_field = v.get<std::string>();
    p.group_by = k == "group_by";
  } else if (k == "group_sort") {
    auto keys = strings_of("group_sort", v);
    if (!keys) return keys.error();
    for (std::string& key : *keys) p.group_sort.push_back(clouseau_sort_key(key));
  } else if (k == "group_limit") {
    json n = v;
    if (n.is_string()) n = json::parse(n.get<std::string>(), nullptr, false);
    auto g = clouseau_int("group_limit", n.is_discarded() ? v : n, 200, true);
    if (!g) return g.error();
    p.group_limit = *g;
  } else if (k == "partition") {
    if (v.is_string()) p.partition = v.get<std::string>();
  }
  return {};
}

}  // namespace

result<search_params> clouseau_params(const std::vector<std::pair<std::string, std::string>>& qs, const json* body) {
  // Every parameter as JSON, in order: a query string's values decoded where CouchDB decodes them.
  static const std::set<std::string> decoded = {"sort",
                                                "limit",
                                                "include_fields",
                                                "counts",
                                                "ranges",
                                                "drilldown",
                                                "highlight_fields",
                                                "highlight_pre_tag",
                                                "highlight_post_tag",
                                                "highlight_number",
                                                "highlight_size",
                                                "group_sort"};
  std::vector<std::pair<std::string, json>> given;
  if (body) {
    for (const auto& [k, v] : qs)
      if (k == "partition") given.emplace_back(k, v);
    for (const auto& [k, v] : body->items()) given.emplace_back(k, v);
  } else {
    for (const auto& [k, v] : qs) {
      if (!decoded.count(k)) {
        given.emplace_back(k, json(v));
        continue;
      }
      json j = json::parse(v, nullptr, false);
      if (j.is_discarded()) {
        if (k != "sort") return status{errc::bad_request, "invalid UTF-8 JSON"};
        j = v;  // a bare sort key
      }
      given.emplace_back(k, std::move(j));
    }
  }
  search_params p;
  bool has_q = false;
  for (auto& [k, v] : given) {
    auto done = clouseau_query_param(k, v, p, has_q);
    if (!done) return done.error();
    if (*done) continue;
    if (auto st = clouseau_other_param(k, v, p); !st) return st;
  }
  if (!has_q) return parse_error("Query must include a 'q' or 'query' argument");
  return p;
}

std::string encode_request(const search_copy_request& r) {
  json j{{"what", static_cast<int>(r.what)},
         {"api", r.api == search_api::nouveau ? "nouveau" : "clouseau"},
         {"ddoc_id", r.ddoc_id},
         {"rev", r.rev},
         {"ddoc", r.ddoc},
         {"index", r.index},
         {"signature", r.signature},
         {"q", r.query.query},
         {"default_field", r.query.default_field},
         {"limit", r.query.limit},
         {"sort", r.query.sort},
         {"counts", r.query.counts},
         {"ranges", ranges_json(r.query.ranges)},
         {"top_n", r.query.top_n},
         {"update", r.update}};
  if (!r.query.lowercase_expanded) j["exact_expanded"] = true;
  if (!r.query.drilldown.empty()) j["drilldown"] = r.query.drilldown;
  if (!r.query.highlight_fields.empty())
    j["highlight"] = json{{"fields", r.query.highlight_fields},
                          {"pre", r.query.highlight_pre},
                          {"post", r.query.highlight_post},
                          {"number", r.query.highlight_number},
                          {"size", r.query.highlight_size}};
  if (r.query.after) j["after"] = order_wire(*r.query.after);
  if (r.stats) j["stats"] = stats_json(*r.stats);
  return j.dump();
}

result<search_copy_request> decode_request(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return status{errc::bad_request, "a search request is not a JSON object"};
  search_copy_request r;
  try {
    const int what = j.at("what").get<int>();
    if (what < 0 || what >= static_cast<int>(search_copy_request::phase::hold))
      return status{errc::bad_request, "a search request's phase is not one a node answers"};
    r.what = static_cast<search_copy_request::phase>(what);
    r.api = j.at("api") == "nouveau" ? search_api::nouveau : search_api::clouseau;
    r.ddoc_id = j.at("ddoc_id");
    r.rev = j.at("rev");
    r.ddoc = j.at("ddoc");
    r.index = j.at("index");
    r.signature = j.at("signature");
    r.query.query = j.at("q");
    r.query.default_field = j.at("default_field");
    r.query.limit = j.at("limit");
    r.query.sort = j.at("sort").get<std::vector<std::string>>();
    r.query.counts = j.at("counts").get<std::vector<std::string>>();
    auto ranges = ranges_of(j.at("ranges"));
    if (!ranges) return ranges.error();
    r.query.ranges = std::move(*ranges);
    r.query.top_n = j.at("top_n");
    r.update = j.at("update");
    if (j.contains("after")) r.query.after = order_of_wire(j["after"]);
    if (j.contains("stats")) r.stats = stats_of(j["stats"]);
    r.query.lowercase_expanded = !j.value("exact_expanded", false);
    if (j.contains("drilldown")) r.query.drilldown = j["drilldown"].get<std::vector<std::vector<std::string>>>();
    if (j.contains("highlight")) {
      const json& h = j["highlight"];
      r.query.highlight_fields = h.at("fields").get<std::vector<std::string>>();
      r.query.highlight_pre = h.at("pre");
      r.query.highlight_post = h.at("post");
      r.query.highlight_number = h.at("number");
      r.query.highlight_size = h.at("size");
    }
  } catch (const json::exception& e) {
    return status{errc::bad_request, std::string("a search request is malformed: ") + e.what()};
  }
  return r;
}

std::string encode_page(const search_copy_page& p) {
  json hits = json::array();
  for (const text_hit& h : p.page.hits) {
    json stored = json::array();
    for (const auto& s : h.stored) stored.push_back(json::array({s.name, s.is_number ? json(s.number) : json(s.text)}));
    json hit{{"id", h.id}, {"order", order_wire(h.order)}, {"stored", stored}};
    if (!h.highlights.empty()) hit["highlights"] = h.highlights;
    hits.push_back(std::move(hit));
  }
  return json{{"stats", stats_json(p.stats)},
              {"total_hits", p.page.total_hits},
              {"hits", hits},
              {"counts", facets_json(p.page.counts)},
              {"ranges", facets_json(p.page.ranges)},
              {"indexed_seq", p.indexed_seq},
              {"copy_seq", p.copy_seq},
              {"purge_seq", p.purge_seq},
              {"doc_count", p.doc_count},
              {"disk_size", p.disk_size},
              {"updating", p.updating}}
      .dump();
}

result<search_copy_page> decode_page(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return status{errc::internal, "a search answer is not a JSON object"};
  search_copy_page p;
  try {
    p.stats = stats_of(j.at("stats"));
    p.page.total_hits = j.at("total_hits");
    for (const json& h : j.at("hits")) {
      text_hit hit;
      hit.id = h.at("id");
      hit.order = order_of_wire(h.at("order"));
      for (const json& s : h.at("stored")) {
        text_hit::stored_value v;
        v.name = s.at(0);
        v.is_number = s.at(1).is_number();
        if (v.is_number)
          v.number = s.at(1);
        else
          v.text = s.at(1);
        hit.stored.push_back(std::move(v));
      }
      if (h.contains("highlights"))
        hit.highlights = h["highlights"].get<std::vector<std::pair<std::string, std::vector<std::string>>>>();
      p.page.hits.push_back(std::move(hit));
    }
    p.page.counts = facets_of(j.at("counts"));
    p.page.ranges = facets_of(j.at("ranges"));
    p.indexed_seq = j.at("indexed_seq");
    p.copy_seq = j.at("copy_seq");
    p.purge_seq = j.at("purge_seq");
    p.doc_count = j.at("doc_count");
    p.disk_size = j.at("disk_size");
    p.updating = j.at("updating");
  } catch (const json::exception& e) {
    return status{errc::internal, std::string("a search answer is malformed: ") + e.what()};
  }
  return p;
}

namespace {

// Adds `from`'s counts to `to`'s; a field counted keeps its entry without values (no match), as
// one copy's answer does.
void add_counts(std::map<std::string, std::map<std::string, uint64_t>>& to,
                const std::map<std::string, std::map<std::string, uint64_t>>& from) {
  for (const auto& [field, values] : from) {
    auto& sum = to[field];
    for (const auto& [label, n] : values) sum[label] += n;
  }
}

}  // namespace

text_page merge_pages(const std::vector<search_copy_page>& pages, const text_query& q) {
  text_page out;
  for (const search_copy_page& p : pages) {
    out.total_hits += p.page.total_hits;
    for (const text_hit& h : p.page.hits) out.hits.push_back(h);
    add_counts(out.counts, p.page.counts);
    add_counts(out.ranges, p.page.ranges);
  }
  std::stable_sort(out.hits.begin(), out.hits.end(),
                   [&](const text_hit& a, const text_hit& b) { return compare_orders(q.sort, a.order, b.order) < 0; });
  if (out.hits.size() > q.limit) out.hits.resize(q.limit);
  for (auto& [field, values] : out.counts) {  // the most frequent top_n (ties: the smaller label)
    std::vector<std::pair<std::string, uint64_t>> all(values.begin(), values.end());
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    if (all.size() > q.top_n) all.resize(q.top_n);
    values = {all.begin(), all.end()};
  }
  return out;
}

json order_json(const text_order& order, const std::vector<std::string>& sort) {
  static const std::string relevance = "-<score>", none;
  json out = json::array();
  out.get_ref<json::array_t&>().reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    out.push_back(order_value_json(order[i], sort.empty()      ? (i == 0 ? relevance : none)
                                             : i < sort.size() ? sort[i]
                                                               : none));
  return out;
}

json pack_bookmark(const std::optional<text_order>& order, const std::vector<std::string>& sort) {
  if (!order) return nullptr;
  return crypto::base64_encode(json::array({order_json(*order, sort)}).dump(), true);
}

result<text_order> unpack_bookmark(const std::string& bookmark) {
  const status invalid{errc::bad_request, "Invalid bookmark"};
  std::string text;
  if (!crypto::base64_decode(bookmark, text)) return invalid;
  json j = json::parse(text, nullptr, false);
  if (!j.is_array()) return invalid;
  if (j.empty()) return text_order{};
  // Nouveau's is a list of orders, one per range: settee makes one, and takes the last.
  const json& last = j.back();
  if (!last.is_array()) return invalid;
  text_order o;
  for (const json& v : last) {
    if (!v.is_object() || !v.contains("value")) return invalid;
    const json& x = v["value"];
    order_value ov;
    if (x.is_number()) {
      ov.number = x.get<double>();
    } else if (x.is_string()) {
      ov.type = order_value::kind::text;
      ov.text = x.get<std::string>();
    } else if (x.is_null()) {
      ov.type = order_value::kind::missing;
    } else {
      return invalid;
    }
    o.push_back(std::move(ov));
  }
  return o;
}

}  // namespace settee
