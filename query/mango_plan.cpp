#include "query/mango_plan.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "node/check.hpp"
#include "node/collation.hpp"
#include "storage/json_index.hpp"

namespace settee {

namespace {

// The conditions the selector's top-level conjunction puts on each field (implicit $and and
// $and, nested objects as dotted paths, a value as $eq); anything under $or, $nor or $not is
// left to the filter.
using conditions = std::map<std::string, std::vector<std::pair<std::string, json>>>;

void collect(const json& sel, const std::string& prefix, conditions& out, std::vector<json>* ors = nullptr) {
  for (auto it = sel.begin(); it != sel.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if (k == "$and" && v.is_array()) {
      for (const json& e : v)
        if (e.is_object()) collect(e, prefix, out, ors);
    } else if (k == "$or" && prefix.empty() && ors && ors->empty() && v.is_array() && !v.empty()) {
      for (const json& e : v) ors->push_back(e.is_object() ? e : json::object());
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

// What the selector requires, as one conjunction or, with a top-level $or, one per branch (the
// conjunction with the branch's conditions added): a document matches only if one holds.
using branches = std::vector<conditions>;

branches branches_of(const json& selector, std::vector<json>* raw = nullptr) {
  conditions c;
  std::vector<json> ors;
  if (selector.is_object()) collect(selector, "", c, &ors);
  if (raw) *raw = ors;
  branches out;
  for (const json& b : ors) {
    conditions both = c;
    collect(b, "", both);
    out.push_back(std::move(both));
  }
  return out;
}

// The values a field's $in allows (sorted in collation order, no repeats), when it has one.
std::optional<std::vector<json>> in_values(const conditions& c, const std::string& field) {
  auto it = c.find(field);
  if (it == c.end()) return std::nullopt;
  for (const auto& [op, arg] : it->second) {
    if (op != "$in" || !arg.is_array()) continue;
    std::map<std::string, json> sorted;
    for (const json& v : arg) sorted.emplace(collation::sort_key(v), v);
    std::vector<json> out;
    for (auto& [key, v] : sorted) out.push_back(std::move(v));
    return out;
  }
  return std::nullopt;
}

struct candidate {
  const query_index* index;
  const branches* over;  // the conjunctions its ranges come from
  int eq = 0;            // leading fields held to one value (or a few: $in), the fewest of any branch
  bool ranged = false;   // and the next one narrowed, in every branch
  bool descending = false;
};

// The leading fields of `ix` that `c` holds to one value or a few ($in), and whether the next one
// is narrowed.
std::pair<int, bool> narrowing(const query_index& ix, const conditions& c) {
  int eq = 0;
  for (const auto& [f, desc] : ix.def.fields) {
    const field_range r = range_in(c, f);
    if ((r.equality() && !r.empty) || in_values(c, f)) {
      ++eq;
      continue;
    }
    return {eq, r.low.has_value() || r.high.has_value()};
  }
  return {eq, true};
}

// mango_idx_view's is_usable and can_use_sort, for every conjunction of `over`; nullopt when
// unusable.
// `why` says why not.
std::optional<candidate> usable(const query_index& ix, const branches& over, const find_query& q, rejected_index& why) {
  std::set<std::string> sort_fields;
  for (const auto& s : q.sort) sort_fields.insert(s.first);
  candidate out{&ix, &over, INT32_MAX, true};
  for (const conditions& c : over) {
    for (const auto& [f, desc] : ix.def.fields) {
      if (sort_fields.count(f) || f == "_id" || f == "_rev") continue;
      if (!required(c, f)) {
        why.reason = "field_mismatch";
        why.why = "the selector does not require field " + f + (over.size() > 1 ? " in every branch of its $or" : "") +
                  " (documents without it are not in the index)";
        return std::nullopt;
      }
    }
    auto [eq, ranged] = narrowing(ix, c);
    out.eq = std::min(out.eq, eq);
    out.ranged = out.ranged && ranged;
  }
  if (!q.sort.empty()) {
    // The index's fields after the ones held constant must start with the sort's (ranges of
    // several conjunctions, or of a $in, are in key order only from the index's first field).
    why.reason = "sort_order_mismatch";
    why.why = "its fields after the ones the selector holds to one value do not start with the sort's";
    size_t i = 0;
    while (i < ix.def.fields.size() && ix.def.fields[i].first != q.sort.front().first) {
      if (over.size() > 1 || !range_in(over.front(), ix.def.fields[i].first).equality()) return std::nullopt;
      ++i;
    }
    if (ix.def.fields.size() - i < q.sort.size()) return std::nullopt;
    for (size_t k = 0; k < q.sort.size(); ++k)
      if (ix.def.fields[i + k].first != q.sort[k].first) return std::nullopt;
    for (size_t k = 0; k < i; ++k)
      if (in_values(over.front(), ix.def.fields[k].first)) return std::nullopt;
    why.reason.clear();
    why.why.clear();
    out.descending = q.sort.front().second;
  }
  return out;
}

// `partial` (the index's partial filter) holds for every document the query's selector matches.
// Conservative: only when each of its conditions appears as such in every conjunction.
bool implied(const json& partial, const branches& over) {
  if (partial.empty()) return true;
  for (const conditions& c : over) {
    for (const auto& [field, conds] : conditions_of(partial)) {
      auto have = c.find(field);
      if (have == c.end()) return false;
      for (const auto& cond : conds)
        if (std::find(have->second.begin(), have->second.end(), cond) == have->second.end()) return false;
    }
  }
  return true;
}

// mango_cursor's "_design/<ddoc>[, <name>]" of use_index (its ddoc_name drops a given _design/).
std::string use_index_name(const find_query& q) {
  const std::string& d = q.use_index[0];
  std::string name = "_design/" + (d.rfind("_design/", 0) == 0 ? d.substr(8) : d);
  if (q.use_index.size() > 1) name += ", " + q.use_index[1];
  return name;
}

const json max_marker = "<MAX>";

// A range of an index's rows and CouchDB's start and end keys of it (for _explain).
struct key_range {
  std::string low, high;
  json start, end;
};

constexpr size_t max_ranges = 4096;  // a $in of more values (or their product) reads one range

// The rows of `ix` conjunction `c` can match from field `i` on, keys starting with `prefix` (its
// first fields' values, `start` as JSON): a range per value of a $in, one for a range.
void expand(const query_index& ix, const conditions& c, size_t i, const std::string& prefix, const json& start,
            std::vector<key_range>& out) {
  if (i == ix.def.fields.size()) {
    json end = start;
    end.push_back(max_marker);
    out.push_back({prefix, json_index::past(prefix), start, end});
    return;
  }
  const std::string& f = ix.def.fields[i].first;
  const field_range r = range_in(c, f);
  if (r.empty) return;  // nothing matches
  auto values = r.equality() ? std::optional<std::vector<json>>() : in_values(c, f);
  if (r.equality() || (values && out.size() + values->size() <= max_ranges)) {
    for (const json& v : values ? *values : std::vector<json>{*r.low}) {
      if ((r.low && (cmp(v, *r.low) < 0 || (cmp(v, *r.low) == 0 && !r.low_inclusive))) ||
          (r.high && (cmp(v, *r.high) > 0 || (cmp(v, *r.high) == 0 && !r.high_inclusive))))
        continue;  // outside the field's range: no match
      json next = start;
      next.push_back(v);
      expand(ix, c, i + 1, prefix + collation::sort_key(v), next, out);
    }
    // $in also matches an array holding one of its values (mango_selector's $in): every array.
    if (values) {
      json first = start, last = start;
      first.push_back(json::array());
      last.push_back(json::array({max_marker}));
      out.push_back({prefix + '\x60', prefix + '\x70', first, last});  // collation's array and object tags
    }
    return;
  }
  key_range k{prefix, json_index::past(prefix), start, start};
  if (r.low) {
    const std::string at = prefix + collation::sort_key(*r.low);
    k.low = r.low_inclusive ? at : json_index::past(at);
    k.start.push_back(*r.low);
  }
  if (r.high) {
    const std::string at = prefix + collation::sort_key(*r.high);
    k.high = r.high_inclusive ? json_index::past(at) : at;
    k.end.push_back(*r.high);
  } else {
    k.end.push_back(max_marker);
  }
  out.push_back(std::move(k));
}

// The rows of `ix` the selector can match: the ranges of every conjunction, in key order, those
// that overlap made one; CouchDB's start and end keys are the first's and the last's.
void ranges_of(const query_index& ix, const branches& over, query_plan& plan) {
  std::vector<key_range> all;
  for (const conditions& c : over) expand(ix, c, 0, std::string(1, '\x60'), json::array(), all);
  if (all.empty()) return;
  std::sort(all.begin(), all.end(), [](const key_range& a, const key_range& b) { return a.low < b.low; });
  plan.start_key = all.front().start;
  plan.end_key = all.back().end;
  for (const key_range& k : all) {
    if (!plan.ranges.empty() && k.low <= plan.ranges.back().second) {
      plan.ranges.back().second = std::max(plan.ranges.back().second, k.high);
      plan.end_key = k.end;
    } else {
      plan.ranges.emplace_back(k.low, k.high);
    }
  }
  // Sorted and disjoint: each copy reads them in order, and a bookmark's position orders across them.
  for (size_t i = 1; i < plan.ranges.size(); ++i) SETTEE_CHECK(plan.ranges[i - 1].second < plan.ranges[i].first);
}

// Whether `sel` is only fields under range operators ($eq $gt $gte $lt $lte $in), ANDed.
bool plain(const json& sel, bool in_field) {
  static const std::set<std::string> ranged = {"$eq", "$gt", "$gte", "$lt", "$lte", "$in"};
  for (auto it = sel.begin(); it != sel.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if (k == "$and") {
      if (!v.is_array()) return false;
      for (const json& e : v)
        if (!e.is_object() || !plain(e, in_field)) return false;
    } else if (!k.empty() && k[0] == '$') {
      if (!in_field || !ranged.count(k)) return false;
    } else if (v.is_object() && !v.empty() && !plain(v, true)) {
      return false;
    }
  }
  return true;
}

// Whether the ranges `expand` makes of `ix` for the selector hold exactly its matches: every
// condition is a range operator other than $in on a field the ranges encode (the leading fields
// held to one value, then at most one ranged field). Then the copies need not match the documents
// they read against the selector.
bool covers(const query_index& ix, const json& selector) {
  if (!selector.is_object() || !plain(selector, false)) return false;
  const conditions c = conditions_of(selector);
  size_t encoded = 0;  // the index's leading fields the ranges encode
  for (const auto& [f, desc] : ix.def.fields) {
    auto it = c.find(f);
    if (it == c.end()) break;
    if (in_values(c, f)) return false;  // its ranges also read every array (see expand)
    ++encoded;
    if (!range_in(c, f).equality()) break;  // the ranged field: the last encoded
  }
  for (const auto& [f, conds] : c) {
    bool found = false;
    for (size_t i = 0; i < encoded; ++i) found = found || ix.def.fields[i].first == f;
    if (!found) return false;
  }
  return true;
}

// One conjunction's best usable index, as a plan (the planner's order; nullopt: none).
std::optional<query_plan> best_for(const conditions& c, const find_query& q, const std::vector<query_index>& indexes) {
  const branches over{c};
  std::optional<candidate> best;
  for (const query_index& ix : indexes) {
    if (!implied(ix.def.partial_filter, over)) continue;
    rejected_index why;
    auto u = usable(ix, over, q, why);
    if (u && (!best || u->eq > best->eq || (u->eq == best->eq && u->ranged && !best->ranged))) best = u;
  }
  if (!best) return std::nullopt;
  query_plan p;
  p.index = *best->index;
  ranges_of(*best->index, over, p);
  return p;
}

// A top-level $or no one index serves, each branch served by its own: the union of their rows,
// made disjoint by matching each part's documents against the branches before it as well
// (part k: the selector and none of branches 1..k-1), answered part after part.
// mango_idx:get_usable_indexes' and mango_cursor:create's refusals: a sort that no index gives
// (the special index sorts by _id only); use_index naming no usable index, or no JSON index usable
// without one, when allow_fallback is false.
status refused(const find_query& q, bool no_json_index, bool chosen) {
  bool special_sorts = true;
  for (const auto& s : q.sort) special_sorts = special_sorts && s.first == "_id";
  if (no_json_index && !special_sorts)
    return {errc::mango_no_usable_index, "No index exists for this sort, try indexing by the sort fields."};
  if (chosen || q.allow_fallback || (q.use_index.empty() && !no_json_index)) return {};
  if (q.use_index.empty())
    return {errc::mango_invalid_index, "You must specify an index with the `use_index` parameter."};
  return {errc::mango_invalid_index,
          use_index_name(q) + " specified by `use_index` could not be found or it is not suitable."};
}

// The planner's order of usable indexes: the most leading fields held to one value, then a range
// on the next, then the fewest fields, then by name.
bool better(const candidate& a, const candidate& b) {
  if (a.eq != b.eq) return a.eq > b.eq;
  if (a.ranged != b.ranged) return a.ranged;
  if (a.index->def.fields.size() != b.index->def.fields.size())
    return a.index->def.fields.size() < b.index->def.fields.size();
  return std::tie(a.index->ddoc, a.index->name) < std::tie(b.index->ddoc, b.index->name);
}

std::optional<query_plan> union_plan(const find_query& q, const std::vector<query_index>& indexes) {
  std::vector<json> raw;
  const branches each = branches_of(q.selector, &raw);
  if (each.size() < 2) return std::nullopt;
  query_plan out;
  for (size_t k = 0; k < each.size(); ++k) {
    auto part = best_for(each[k], q, indexes);
    if (!part) return std::nullopt;
    part->filter = q.selector;
    if (k > 0) {
      json before = json::array();
      for (size_t j = 0; j < k; ++j) before.push_back(raw[j]);
      part->filter = json::array({q.selector, before});  // mango_selector::compile_part's form
    }
    out.parts.push_back(std::move(*part));
  }
  out.index = out.parts.front().index;
  out.start_key = out.parts.front().start_key;
  out.end_key = out.parts.front().end_key;
  return out;
}

}  // namespace

bool named_by(const query_index& ix, const find_query& q) {
  if (q.use_index.empty()) return false;
  const std::string ddoc = q.use_index[0].rfind("_design/", 0) == 0 ? q.use_index[0] : "_design/" + q.use_index[0];
  return ix.ddoc == ddoc && (q.use_index.size() < 2 || ix.name == q.use_index[1]);
}

bool field_range::equality() const {
  return low && high && low_inclusive && high_inclusive && cmp(*low, *high) == 0;
}

field_range range_of(const json& selector, const std::string& field) {
  return range_in(conditions_of(selector), field);
}

result<std::vector<query_plan>> plan_find(const find_query& q, const std::vector<query_index>& indexes) {
  // The selector's conjunction, and the conjunctions of its $or's branches: an index usable from
  // the first alone reads one set of ranges; one usable only in every branch, their union.
  const branches whole{conditions_of(q.selector)};
  const branches each = branches_of(q.selector);
  std::vector<candidate> usable_ones;
  std::vector<rejected_index> rejected;
  for (const query_index& ix : indexes) {
    rejected_index why{ix.ddoc + "/" + ix.name, "", ""};
    bool used = false;
    for (const branches* over : {&whole, &each}) {
      if (over->empty()) continue;
      if (!implied(ix.def.partial_filter, *over) && !named_by(ix, q)) {  // CouchDB uses one only when named
        why.reason = "is_partial";
        why.why = "the selector does not imply its partial_filter_selector";
        continue;
      }
      if (auto u = usable(ix, *over, q, why)) {
        usable_ones.push_back(*u);
        used = true;
        break;
      }
    }
    if (!used) rejected.push_back(std::move(why));
  }
  std::sort(usable_ones.begin(), usable_ones.end(), better);
  query_plan plan;
  plan.rejected = rejected;
  for (const candidate& u : usable_ones) plan.usable.push_back(u.index->ddoc + "/" + u.index->name);
  const candidate* chosen = nullptr;
  for (const candidate& u : usable_ones)
    if (named_by(*u.index, q)) chosen = &u;
  if (auto st = refused(q, usable_ones.empty(), chosen != nullptr); !st) return st;
  if (!q.use_index.empty() && !chosen)
    plan.warnings.push_back(use_index_name(q) + (q.use_index.size() > 1
                                                     ? " was not used because it is not a valid index for this query."
                                                     : " was not used because it does not contain a valid index for "
                                                       "this query."));
  if (!chosen && !usable_ones.empty()) chosen = &usable_ones.front();
  if (!chosen && q.use_index.empty() && q.sort.empty()) {
    if (auto u = union_plan(q, indexes)) {
      u->rejected = std::move(plan.rejected);
      return std::vector<query_plan>{std::move(*u)};
    }
  }
  if (!chosen) {  // the special index: documents in id order (refused() saw to the sort)
    plan.descending = !q.sort.empty() && q.sort.front().second;
    plan.warnings.push_back("No matching index found, create an index to optimize query time.");
    return std::vector<query_plan>{plan};
  }
  // The chosen index first, then (unless use_index named it) the other usable ones, best first:
  // the caller may pick one of them by what their ranges hold.
  std::vector<query_plan> plans;
  const bool named = !q.use_index.empty() && named_by(*chosen->index, q);
  auto plan_of = [&](const candidate& u) {
    query_plan p = plan;
    p.index = *u.index;
    p.descending = u.descending;
    ranges_of(*u.index, *u.over, p);
    p.covered = u.over == &whole && covers(*u.index, q.selector);
    return p;
  };
  plans.push_back(plan_of(*chosen));
  for (const candidate& u : usable_ones)
    if (!named && &u != chosen) plans.push_back(plan_of(u));
  return plans;
}

}  // namespace settee
