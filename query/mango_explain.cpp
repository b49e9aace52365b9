#include "query/mango_explain.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "query/mango_text.hpp"

namespace settee {
namespace {

bool is_operator(const std::string& key) {
  return !key.empty() && key[0] == '$';
}

// mango_idx_view:indexable: an operator an index range can serve.
bool indexable(const json& cond) {
  static const std::set<std::string> ops = {"$lt", "$lte", "$eq", "$gt", "$gte", "$beginsWith", "$exists"};
  return cond.is_object() && cond.size() == 1 && ops.count(cond.begin().key()) > 0;
}

void indexable_into(const json& sel, std::vector<std::string>& out) {
  if (!sel.is_object() || sel.size() != 1) return;
  const std::string& key = sel.begin().key();
  const json& value = sel.begin().value();
  if (key == "$and" && value.is_array()) {
    for (const json& part : value) indexable_into(part, out);
  } else if (!is_operator(key) && indexable(value)) {
    out.push_back(key);
  }
}

std::vector<std::string> sorted_unique(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::string key_of(const query_index& ix) {
  return ix.ddoc + "/" + ix.name;
}

// One index weighed (nullptr: the special one) and CouchDB's analysis of it.
struct weighed {
  const query_index* ix = nullptr;
  bool usable = true;
  std::string reason;
  uint64_t ranking = 0;
};

// mango_cursor_view:composite_indexes' PrefixDifference: the selector's indexable fields that the
// index's leading fields do not hold (field_ranges stops at a field whose range is empty).
size_t prefix_difference(const std::vector<std::string>& columns, const json& normalized) {
  std::vector<std::string> ranged;
  for (const std::string& f : indexable_fields(normalized)) {
    if (range_of(normalized, f).empty) {
      ranged = {f};
      break;
    }
    ranged.push_back(f);
  }
  size_t prefix = 0;
  while (prefix < columns.size() && std::count(ranged.begin(), ranged.end(), columns[prefix])) ++prefix;
  return ranged.size() - prefix;
}

std::vector<std::string> columns_of(const query_index* ix) {
  if (!ix) return {"_id"};
  std::vector<std::string> out;
  for (const auto& [field, desc] : ix->def.fields) out.push_back(field);
  return out;
}

json analysis_json(const weighed& w, const find_query& q) {
  json covering = w.ix ? json(covers(*w.ix, q.fields)) : json(nullptr);
  return json{{"index", w.ix ? index_json(*w.ix) : all_docs_index_json()},
              {"analysis",
               {{"usable", w.usable},
                {"reasons", json::array({{{"name", w.reason}}})},
                {"ranking", w.ranking},
                {"covering", covering}}}};
}

}  // namespace

json index_json(const query_index& ix) {
  if (!ix.text.is_null())
    return json{{"ddoc", ix.ddoc},
                {"name", ix.name},
                {"type", "text"},
                {"partitioned", ix.partitioned},
                {"def", text_index_def_json(ix.text)}};
  return json{{"ddoc", ix.ddoc},
              {"name", ix.name},
              {"type", "json"},
              {"partitioned", ix.partitioned},
              {"def", ix.def.to_json()}};
}

const json& all_docs_index_json() {
  static const json index = {{"ddoc", nullptr},
                             {"name", "_all_docs"},
                             {"type", "special"},
                             {"def", {{"fields", json::array({{{"_id", "asc"}}})}}}};
  return index;
}

std::vector<std::string> selector_fields(const json& normalized) {
  std::vector<std::string> out;
  if (!normalized.is_object() || normalized.size() != 1) return out;
  const std::string& key = normalized.begin().key();
  const json& value = normalized.begin().value();
  if (is_operator(key) && value.is_array()) {
    for (const json& part : value)
      for (std::string& f : selector_fields(part)) out.push_back(std::move(f));
  } else {
    out.push_back(key);
  }
  return out;
}

std::vector<std::string> indexable_fields(const json& normalized) {
  std::vector<std::string> out;
  indexable_into(normalized, out);
  return sorted_unique(std::move(out));
}

json selector_hints(const json& normalized) {
  // mango_cursor:extract_selector_hints: the indexable ones cut at a ':' (a text index's type).
  std::vector<std::string> can;
  for (const std::string& f : indexable_fields(normalized)) can.push_back(f.substr(0, f.find(':')));
  can = sorted_unique(std::move(can));
  std::vector<std::string> cannot;
  for (const std::string& f : sorted_unique(selector_fields(normalized)))
    if (!std::binary_search(can.begin(), can.end(), f)) cannot.push_back(f);
  return json::array({{{"type", "json"}, {"indexable_fields", can}, {"unindexable_fields", cannot}}});
}

bool covers(const query_index& ix, const std::vector<std::string>& fields) {
  if (fields.empty()) return false;  // all fields
  std::vector<std::string> have = columns_of(&ix);
  have.push_back("_id");
  for (const std::string& f : fields)
    if (std::find(have.begin(), have.end(), f) == have.end()) return false;
  return true;
}

bool plan_covers(const find_query& q, const query_plan& plan) {
  if (!plan.index || q.fields.empty()) return false;
  std::vector<std::string> needed = q.fields;
  for (std::string& f : selector_fields(normalize_selector(q.selector))) needed.push_back(std::move(f));
  return covers(*plan.index, needed);
}

namespace {

// mango_cursor's stages over settee's verdicts: partial indexes the selector does not imply, the
// unusable ones, those use_index excluded, the special index when a JSON one serves (an unfavored
// type), and the usable ones of the chosen type, the chosen one first, then in the planner's order.
struct stages {
  std::vector<weighed> partial, unusable, excluded, unfavored, of_type;
  bool chosen_of_type = true;  // false: a union's first part (not of the type)
};

stages classify(const find_query& q, const std::vector<query_index>& indexes, const query_plan& plan,
                const json& normalized) {
  std::map<std::string, const rejected_index*> rejected;
  for (const rejected_index& r : plan.rejected) rejected[r.index] = &r;
  const std::string winner = plan.index ? key_of(*plan.index) : "";
  const bool excluding = plan.index && named_by(*plan.index, q) && !rejected.count(winner);
  std::vector<const query_index*> order;  // the usable ones in the planner's order, then the others
  for (const std::string& name : plan.usable)
    for (const query_index& ix : indexes)
      if (key_of(ix) == name) order.push_back(&ix);
  for (const query_index& ix : indexes)
    if (ix.text.is_null() && std::find(order.begin(), order.end(), &ix) == order.end()) order.push_back(&ix);
  stages out;
  for (const query_index* ix : order) {
    auto r = rejected.find(key_of(*ix));
    if (r != rejected.end() && key_of(*ix) == winner) continue;  // a union's first part
    if (r != rejected.end())
      (r->second->reason == "is_partial" ? out.partial : out.unusable).push_back({ix, false, r->second->reason});
    else if (excluding && key_of(*ix) != winner)
      out.excluded.push_back({ix, true, "excluded_by_user"});
    else
      out.of_type.push_back({ix, true, ""});
  }
  bool special_usable = true;  // it gives no sort but _id's
  for (const auto& [field, desc] : q.sort) special_usable = special_usable && field == "_id";
  if (!special_usable) {  // mango_idx_special:is_usable's first reason
    const std::vector<std::string> ranged = indexable_fields(normalized);
    const bool has_id = std::count(ranged.begin(), ranged.end(), "_id") > 0;
    out.unusable.push_back({nullptr, false, has_id ? "sort_order_mismatch" : "field_mismatch"});
  } else if (excluding) {
    out.excluded.push_back({nullptr, true, "excluded_by_user"});
  } else if (!out.of_type.empty() || !out.excluded.empty()) {
    out.unfavored.push_back({nullptr, true, "unfavored_type"});
  } else {
    out.of_type.insert(out.of_type.begin(), weighed{nullptr, true, ""});
  }
  auto chosen = std::find_if(out.of_type.begin(), out.of_type.end(),
                             [&](const weighed& w) { return w.ix ? key_of(*w.ix) == winner : winner.empty(); });
  out.chosen_of_type = chosen != out.of_type.end();
  if (out.chosen_of_type) std::rotate(out.of_type.begin(), chosen, chosen + 1);
  return out;
}

}  // namespace

json index_candidates(const find_query& q, const std::vector<query_index>& indexes, const query_plan& plan) {
  const json normalized = normalize_selector(q.selector);
  stages st = classify(q, indexes, plan, normalized);
  // The rankings as mango_cursor computes them: each stage one above the next better one's when
  // that one is not empty; the usable ones of the chosen type by their place after the chosen one.
  const uint64_t unfavored_rank = std::max<size_t>(1, st.of_type.size() + !st.chosen_of_type);
  const uint64_t excluded_rank = unfavored_rank + !st.unfavored.empty();
  const uint64_t unusable_rank = excluded_rank + !st.excluded.empty();
  const uint64_t partial_rank = unusable_rank + !st.unusable.empty();
  std::vector<weighed> all;
  for (auto [stage, rank] : {std::pair{&st.partial, partial_rank},
                             {&st.unusable, unusable_rank},
                             {&st.excluded, excluded_rank},
                             {&st.unfavored, unfavored_rank}})
    for (weighed w : *stage) {
      w.ranking = rank;
      all.push_back(w);
    }
  const size_t winner_width = plan.index ? plan.index->def.fields.size() : 1;
  for (size_t n = st.chosen_of_type ? 1 : 0; n < st.of_type.size(); ++n) {
    weighed w = st.of_type[n];
    w.ranking = st.chosen_of_type ? n : n + 1;
    const std::vector<std::string> columns = columns_of(w.ix);
    w.reason = prefix_difference(columns, normalized) > 0 ? "less_overlap"
               : columns.size() > winner_width            ? "too_many_fields"
                                                          : "alphabetically_comes_after";
    all.push_back(w);
  }
  // CouchDB lists them by index record, last first: design documents and names descending, the
  // special index (no design document) last.
  std::sort(all.begin(), all.end(), [](const weighed& a, const weighed& b) {
    if (!a.ix || !b.ix) return a.ix != nullptr && b.ix == nullptr;
    return std::tie(a.ix->ddoc, a.ix->name) > std::tie(b.ix->ddoc, b.ix->name);
  });
  json out = json::array();
  for (const weighed& w : all) out.push_back(analysis_json(w, q));
  return out;
}

}  // namespace settee
