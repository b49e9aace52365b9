#include "http/mango_plan.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "node/collation.hpp"
#include "storage/json_index.hpp"

namespace settee {

namespace {

// The conditions the selector's top-level conjunction puts on each field (implicit $and and
// $and, nested objects as dotted paths, a value as $eq); anything under $or, $nor or $not is
// left to the filter.
using conditions = std::map<std::string, std::vector<std::pair<std::string, json>>>;

void collect(const json& sel, const std::string& prefix, conditions& out) {
  for (auto it = sel.begin(); it != sel.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if (k == "$and" && v.is_array()) {
      for (const json& e : v)
        if (e.is_object()) collect(e, prefix, out);
    } else if (!k.empty() && k[0] == '$') {
      if (!prefix.empty()) out[prefix].emplace_back(k, v);
    } else {
      const std::string field = prefix.empty() ? k : prefix + "." + k;
      if (v.is_object() && !v.empty()) {
        collect(v, field, out);
      } else {
        out[field].emplace_back("$eq", v);
      }
    }
  }
}

conditions conditions_of(const json& selector) {
  conditions c;
  if (selector.is_object()) collect(selector, "", c);
  return c;
}

// Whether every document the selector matches has `field`: any condition on it but
// {"$exists": false} fails on a document without it (mango_selector's match of a missing field).
bool required(const conditions& c, const std::string& field) {
  auto it = c.find(field);
  if (it == c.end()) return false;
  for (const auto& [op, arg] : it->second)
    if (!(op == "$exists" && arg == false)) return true;
  return false;
}

int cmp(const json& a, const json& b) {
  return collation::compare(a, b);
}

void narrow(field_range& r, const std::string& op, const json& arg) {
  auto raise_low = [&](bool inclusive) {
    if (!r.low || cmp(arg, *r.low) > 0 || (cmp(arg, *r.low) == 0 && !inclusive)) {
      r.low = arg;
      r.low_inclusive = inclusive;
    }
  };
  auto lower_high = [&](bool inclusive) {
    if (!r.high || cmp(arg, *r.high) < 0 || (cmp(arg, *r.high) == 0 && !inclusive)) {
      r.high = arg;
      r.high_inclusive = inclusive;
    }
  };
  if (op == "$eq") {
    raise_low(true);
    lower_high(true);
  } else if (op == "$gt") {
    raise_low(false);
  } else if (op == "$gte") {
    raise_low(true);
  } else if (op == "$lt") {
    lower_high(false);
  } else if (op == "$lte") {
    lower_high(true);
  }
  if (r.low && r.high) {
    const int c = cmp(*r.low, *r.high);
    if (c > 0 || (c == 0 && !(r.low_inclusive && r.high_inclusive))) r.empty = true;
  }
}

field_range range_in(const conditions& c, const std::string& field) {
  field_range r;
  auto it = c.find(field);
  if (it == c.end()) return r;
  for (const auto& [op, arg] : it->second) narrow(r, op, arg);
  return r;
}

struct candidate {
  const query_index* index;
  int eq = 0;           // leading fields held to one value
  bool ranged = false;  // and the next one narrowed
  bool descending = false;
};

// mango_idx_view's is_usable and can_use_sort; nullopt when unusable.
std::optional<candidate> usable(const query_index& ix, const conditions& c, const find_query& q) {
  std::set<std::string> sort_fields;
  for (const auto& s : q.sort) sort_fields.insert(s.first);
  for (const auto& [f, desc] : ix.def.fields) {
    if (sort_fields.count(f) || f == "_id" || f == "_rev") continue;
    if (!required(c, f)) return std::nullopt;
  }
  candidate out{&ix};
  for (const auto& [f, desc] : ix.def.fields) {
    const field_range r = range_in(c, f);
    if (r.equality() && !r.empty) {
      ++out.eq;
      continue;
    }
    out.ranged = r.low.has_value() || r.high.has_value();
    break;
  }
  if (!q.sort.empty()) {
    // The index's fields after the constant ones must start with the sort's.
    size_t i = 0;
    while (i < ix.def.fields.size() && ix.def.fields[i].first != q.sort.front().first) {
      if (!range_in(c, ix.def.fields[i].first).equality()) return std::nullopt;
      ++i;
    }
    if (ix.def.fields.size() - i < q.sort.size()) return std::nullopt;
    for (size_t k = 0; k < q.sort.size(); ++k)
      if (ix.def.fields[i + k].first != q.sort[k].first) return std::nullopt;
    out.descending = q.sort.front().second;
  }
  return out;
}

// `partial` (the index's partial filter) holds for every document the query's selector matches.
// Conservative: only when each of its conditions appears as such in the selector's conjunction.
bool implied(const json& partial, const conditions& c) {
  if (partial.empty()) return true;
  for (const auto& [field, conds] : conditions_of(partial)) {
    auto have = c.find(field);
    if (have == c.end()) return false;
    for (const auto& cond : conds)
      if (std::find(have->second.begin(), have->second.end(), cond) == have->second.end()) return false;
  }
  return true;
}

std::string use_index_name(const find_query& q) {
  std::string name = "_design/" + q.use_index[0];
  if (q.use_index.size() > 1) name += ", " + q.use_index[1];
  return name;
}

bool named_by(const query_index& ix, const find_query& q) {
  if (q.use_index.empty()) return false;
  const std::string ddoc = q.use_index[0].rfind("_design/", 0) == 0 ? q.use_index[0] : "_design/" + q.use_index[0];
  return ix.ddoc == ddoc && (q.use_index.size() < 2 || ix.name == q.use_index[1]);
}

const json max_marker = "<MAX>";

// The rows of `ix` the selector can match: one range of positions, and CouchDB's start and end
// keys for _explain.
void ranges_of(const query_index& ix, const conditions& c, query_plan& plan) {
  std::string prefix(1, '\x60');  // collation's array tag: keys are arrays of the fields' values
  json start = json::array(), end = json::array();
  for (const auto& [f, desc] : ix.def.fields) {
    const field_range r = range_in(c, f);
    if (r.empty) return;  // nothing matches: no range at all
    if (r.equality()) {
      prefix += collation::sort_key(*r.low);
      start.push_back(*r.low);
      end.push_back(*r.low);
      continue;
    }
    std::string low = prefix, high = json_index::past(prefix);
    if (r.low) {
      const std::string at = prefix + collation::sort_key(*r.low);
      low = r.low_inclusive ? at : json_index::past(at);
      start.push_back(*r.low);
    }
    if (r.high) {
      const std::string at = prefix + collation::sort_key(*r.high);
      high = r.high_inclusive ? json_index::past(at) : at;
      end.push_back(*r.high);
    } else {
      end.push_back(max_marker);
    }
    plan.ranges.emplace_back(low, high);
    plan.start_key = start;
    plan.end_key = end;
    return;
  }
  end.push_back(max_marker);
  plan.ranges.emplace_back(prefix, json_index::past(prefix));
  plan.start_key = start;
  plan.end_key = end;
}

}  // namespace

bool field_range::equality() const {
  return low && high && low_inclusive && high_inclusive && cmp(*low, *high) == 0;
}

field_range range_of(const json& selector, const std::string& field) {
  return range_in(conditions_of(selector), field);
}

result<query_plan> plan_find(const find_query& q, const std::vector<query_index>& indexes) {
  const conditions c = conditions_of(q.selector);
  std::vector<candidate> usable_ones;
  for (const query_index& ix : indexes) {
    if (!implied(ix.def.partial_filter, c) && !named_by(ix, q)) continue;  // CouchDB uses one only when named
    if (auto u = usable(ix, c, q)) usable_ones.push_back(*u);
  }
  query_plan plan;
  const candidate* chosen = nullptr;
  for (const candidate& u : usable_ones)
    if (named_by(*u.index, q)) chosen = &u;
  if (!q.use_index.empty() && !chosen) {
    if (!q.allow_fallback)
      return status{errc::mango_no_usable_index, "The index specified with \"use_index\" is not usable for the query."};
    plan.warnings.push_back(use_index_name(q) +
                            " was not used because it does not contain a valid index for this query.");
  }
  if (!chosen) {
    auto better = [](const candidate& a, const candidate& b) {
      if (a.eq != b.eq) return a.eq > b.eq;
      if (a.ranged != b.ranged) return a.ranged;
      if (a.index->def.fields.size() != b.index->def.fields.size())
        return a.index->def.fields.size() < b.index->def.fields.size();
      return std::tie(a.index->ddoc, a.index->name) < std::tie(b.index->ddoc, b.index->name);
    };
    for (const candidate& u : usable_ones)
      if (!chosen || better(u, *chosen)) chosen = &u;
  }
  if (!chosen) {
    // The special index: documents in id order, so only a sort on _id.
    for (const auto& [field, descending] : q.sort)
      if (field != "_id")
        return status{errc::mango_no_usable_index, "No index exists for this sort, try indexing by the sort fields."};
    plan.descending = !q.sort.empty() && q.sort.front().second;
    plan.warnings.push_back("No matching index found, create an index to optimize query time.");
    return plan;
  }
  plan.index = *chosen->index;
  plan.descending = chosen->descending;
  ranges_of(*chosen->index, c, plan);
  return plan;
}

}  // namespace settee
