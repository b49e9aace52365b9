#include "query/mango_selector.hpp"

#include <cmath>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "node/collation.hpp"
#include "node/user_regex.hpp"

namespace settee {

struct mango_selector::node {
  enum class kind { all_of, any_of, none_of, negate, field, op } what = kind::all_of;
  std::vector<node> children;
  std::vector<std::string> path;  // kind::field
  bool raw = false;               // kind::field `_id`: compared below by bytes, not collation
  std::string op;                 // kind::op
  json arg;
  std::string arg_key;                             // comparisons with a string: its ICU sort key, made once
  std::optional<user_regex> re;                    // $regex
  std::unordered_multimap<size_t, size_t> values;  // $in, $nin: hash of each value -> its index in arg
};

namespace {

using node = mango_selector::node;

// mango_selector's errors for a selector it cannot normalize (mango_error's texts).
status bad_arg(const std::string& op, const json& arg) {
  return {errc::mango_bad_arg, "Bad argument for operator " + op + ": " + erlang_w(arg)};
}

status selector_error(const std::string& what) {
  return {errc::bad_request, "Selector error: " + what};
}

int type_rank(const json& v) {
  if (v.is_null()) return 0;
  if (v.is_boolean()) return v.get<bool>() ? 2 : 1;
  if (v.is_number()) return 3;
  if (v.is_string()) return 4;
  if (v.is_array()) return 5;
  return 6;
}

// A hash under which values that collate equal (1 and 1.0 too) are equal.
size_t hash_value(const json& v) {
  auto mix = [](size_t h, size_t x) { return h ^ (x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); };
  size_t h = static_cast<size_t>(type_rank(v));
  if (v.is_number()) {
    double d = v.get<double>();
    if (d == 0) d = 0;  // -0.0 collates equal to 0
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    return mix(h, std::hash<uint64_t>{}(bits));
  }
  if (v.is_string()) return mix(h, std::hash<std::string>{}(collation::sort_key(v)));  // ICU-equal, equal
  if (v.is_array()) {
    for (auto& e : v) h = mix(h, hash_value(e));
  } else if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it)
      h = mix(mix(h, std::hash<std::string_view>{}(it.key())), hash_value(it.value()));
  }
  return h;
}

}  // namespace

std::vector<std::string> split_field(const std::string& field) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '.' && (i == 0 || field[i - 1] != '\\')) {
      out.emplace_back();
    } else if (field[i] != '\\') {
      out.back() += field[i];
    }
  }
  return out;
}

namespace {

result<node> compile_value(const json& value);
result<node> compile_object(const json& obj);

// An operator and its argument (mango_selector:norm_ops' checks).
result<node> compile_op(const std::string& k, const json& v) {
  node op;
  op.what = node::kind::op;
  op.op = k;
  op.arg = v;
  if (k == "$eq" || k == "$ne" || k == "$gt" || k == "$gte" || k == "$lt" || k == "$lte") {
    if (v.is_string()) op.arg_key = collation::sort_key(v);
  } else if (k == "$in" || k == "$nin" || k == "$all") {
    if (!v.is_array()) return bad_arg(k, v);
    for (size_t i = 0; i < v.size(); ++i) op.values.emplace(hash_value(v[i]), i);
  } else if (k == "$exists") {
    if (!v.is_boolean()) return bad_arg(k, v);
  } else if (k == "$type") {
    if (!v.is_string()) return bad_arg(k, v);  // a name of no JSON type matches nothing
  } else if (k == "$size") {
    if (!v.is_number_integer() || v.get<int64_t>() < 0) return bad_arg(k, v);
  } else if (k == "$mod") {
    // Any divisor but 0 (CouchDB takes 0 too and fails the request when a document is matched).
    if (!v.is_array() || v.size() != 2 || !v[0].is_number_integer() || !v[1].is_number_integer() ||
        v[0].get<int64_t>() == 0) {
      return bad_arg(k, v);
    }
  } else if (k == "$regex") {
    if (!v.is_string()) return bad_arg(k, v);
    auto re = user_regex::compile(v.get<std::string>());
    if (!re) return bad_arg(k, v);
    op.re = std::move(*re);
  } else if (k == "$beginsWith") {
    if (!v.is_string()) return bad_arg(k, v);
  } else if (k == "$text") {
    if (!v.is_string() && !v.is_number() && !v.is_boolean()) return bad_arg(k, v);
  } else if (k == "$default") {
    // {"$text": q} as normalized: answered by a text index (query/mango_text); here it holds for
    // every document (mango_selector's match of $default): a condition of no conditions.
    node always;
    always.what = node::kind::all_of;
    return always;
  } else if (k == "$elemMatch" || k == "$allMatch" || k == "$keyMapMatch") {
    if (!v.is_object()) return bad_arg(k, v);
    auto c = compile_object(v);
    if (!c) return c.error();
    op.children.push_back(std::move(*c));
  } else {
    return status{errc::mango_invalid_operator, "Invalid operator: " + k};
  }
  return op;
}

// An object of operators and/or fields: all of them must hold.
result<node> compile_object(const json& obj) {
  node all;
  all.what = node::kind::all_of;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if (k == "$and" || k == "$or" || k == "$nor") {
      if (!v.is_array()) return bad_arg(k, v);
      node combo;
      combo.what = k == "$and" ? node::kind::all_of : k == "$or" ? node::kind::any_of : node::kind::none_of;
      for (auto& sub : v) {
        if (!sub.is_object()) return bad_arg(k, v);
        auto c = compile_object(sub);
        if (!c) return c.error();
        combo.children.push_back(std::move(*c));
      }
      all.children.push_back(std::move(combo));
    } else if (k == "$not") {
      if (!v.is_object()) return bad_arg(k, v);
      auto c = compile_value(v);
      if (!c) return c.error();
      node neg;
      neg.what = node::kind::negate;
      neg.children.push_back(std::move(*c));
      all.children.push_back(std::move(neg));
    } else if (!k.empty() && k[0] == '$') {
      auto op = compile_op(k, v);
      if (!op) return op.error();
      all.children.push_back(std::move(*op));
    } else {
      auto c = compile_value(v);
      if (!c) return c.error();
      node f;
      f.what = node::kind::field;
      if (!k.empty()) f.path = split_field(k);  // "": the value itself (a normalized $elemMatch's operators)
      f.raw = k == "_id";
      f.children.push_back(std::move(*c));
      all.children.push_back(std::move(f));
    }
  }
  return all;
}

// A field's condition: an object of operators/fields, or a value meaning {"$eq": value}.
result<node> compile_value(const json& value) {
  if (value.is_object()) return compile_object(value);
  node eq;
  eq.what = node::kind::op;
  eq.op = "$eq";
  eq.arg = value;
  if (value.is_string()) eq.arg_key = collation::sort_key(value);
  return eq;
}

// One evaluation against one document: linear in the sizes of the selector and the document
// (object fields and $in/$nin/$all values are found through hashes, not scans), and bounded by a
// step budget besides, for the shapes that multiply ($elemMatch of a long $or over a long array).
struct evaluation {
  static constexpr uint64_t budget = 10'000'000;
  static constexpr size_t indexed_object = 16;  // objects with more fields are looked up by a hash

  uint64_t steps = 0;
  status error;
  std::unordered_map<const json*, std::unordered_map<std::string_view, const json*>> fields;
  bool raw = false;  // below `_id`: raw_compare

  bool spend(uint64_t n = 1) {
    steps += n;
    if (steps <= budget || !error.is_ok()) return error.is_ok();
    error = selector_error("the selector needs more than " + std::to_string(budget) +
                           " steps for one document; simplify it");
    return false;
  }

  const json* field(const json& object, const std::string& name) {
    if (object.size() <= indexed_object) {
      spend(object.size());
      auto it = object.find(name);
      return it == object.end() ? nullptr : &*it;
    }
    auto [index, made] = fields.try_emplace(&object);
    if (made) {
      spend(object.size());
      for (auto it = object.begin(); it != object.end(); ++it) index->second.emplace(it.key(), &it.value());
    }
    auto it = index->second.find(name);
    return it == index->second.end() ? nullptr : it->second;
  }

  const json* lookup(const json& value, const std::vector<std::string>& path, bool* bad_path) {
    return walk_path(
        value, path, [this](const json& object, const std::string& name) { return field(object, name); }, bad_path);
  }

  // Whether `v` collates equal to one of the op's values.
  bool in_values(const node& n, const json& v) {
    spend();
    if (raw) {
      for (const json& x : n.arg)
        if (spend() && erlang_compare(v, x) == 0) return true;
      return false;
    }
    auto [lo, hi] = n.values.equal_range(hash_value(v));
    for (auto it = lo; it != hi; ++it) {
      if (!spend()) return false;
      if (collate(v, n.arg[it->second]) == 0) return true;
    }
    return false;
  }

  bool match_op(const node& n, const json& v);
  bool match_all(const node& n, const json& v);
  bool match(const node& n, const json& v);
};

bool is_exists_false(const node& n) {
  if (n.what == node::kind::op) return n.op == "$exists" && !n.arg.get<bool>();
  return n.what == node::kind::all_of && n.children.size() == 1 && is_exists_false(n.children[0]);
}

// $all: every value of the op among the array's elements (mango_selector:match).
bool evaluation::match_all(const node& n, const json& v) {
  const json& a = n.arg;
  if (!v.is_array() || a.empty()) return false;  // $all of nothing matches nothing (mango_selector:match)
  if (a.size() == 1 && a[0].is_array() && collate(a[0], v) == 0) return true;  // {"$all":[[1,2]]} is [1,2]
  // Every value of the op among the array's elements: the elements by hash, once.
  std::unordered_multimap<size_t, const json*> elements;
  if (!spend(v.size())) return false;
  for (auto& e : v) elements.emplace(hash_value(e), &e);
  for (auto& x : a) {
    bool has = false;
    auto [lo, hi] = elements.equal_range(hash_value(x));
    for (auto it = lo; it != hi && !has; ++it) {
      if (!spend()) return false;
      has = collate(*it->second, x) == 0;
    }
    if (!has) return false;
  }
  return true;
}

bool evaluation::match_op(const node& n, const json& v) {
  const std::string& op = n.op;
  const json& a = n.arg;
  // A string against a string argument: one sort key to make, the argument's is kept.
  auto cmp = [&] {
    if (raw) return erlang_compare(v, a);
    return v.is_string() && !n.arg_key.empty() ? collation::sort_key(v).compare(n.arg_key) : collate(v, a);
  };
  if (op == "$eq") return cmp() == 0;
  if (op == "$ne") return cmp() != 0;
  if (op == "$gt") return cmp() > 0;
  if (op == "$gte") return cmp() >= 0;
  if (op == "$lt") return cmp() < 0;
  if (op == "$lte") return cmp() <= 0;
  if (op == "$in" || op == "$nin") {
    bool found = in_values(n, v);
    if (v.is_array()) {
      for (auto& e : v) {
        if (found || !error.is_ok()) break;
        found = in_values(n, e);
      }
    }
    return op == "$in" ? found : !found;
  }
  if (op == "$exists") return a.get<bool>();  // reached only when the field exists
  if (op == "$type") {
    const std::string& t = a.get_ref<const std::string&>();
    return (t == "null" && v.is_null()) || (t == "boolean" && v.is_boolean()) || (t == "number" && v.is_number()) ||
           (t == "string" && v.is_string()) || (t == "array" && v.is_array()) || (t == "object" && v.is_object());
  }
  if (op == "$size") return v.is_array() && a.get<int64_t>() >= 0 && v.size() == a.get<uint64_t>();
  if (op == "$mod") {
    if (!v.is_number_integer()) return false;
    return v.get<int64_t>() % a[0].get<int64_t>() == a[1].get<int64_t>();
  }
  if (op == "$regex") {
    if (!v.is_string()) return false;
    auto found = n.re->search(v.get_ref<const std::string&>());
    if (!found) {
      if (error.is_ok()) error = selector_error(found.error().reason);
      return false;
    }
    return *found;
  }
  if (op == "$all") return match_all(n, v);
  if (op == "$beginsWith") {
    if (!v.is_string()) return false;
    const std::string& s = v.get_ref<const std::string&>();
    const std::string& prefix = a.get_ref<const std::string&>();
    return s.compare(0, prefix.size(), prefix) == 0;
  }
  if (op == "$keyMapMatch") {  // some key of the object matches
    if (!v.is_object()) return false;
    for (auto it = v.begin(); it != v.end(); ++it)
      if (match(n.children[0], json(it.key()))) return true;
    return false;
  }
  if (op == "$elemMatch") {
    if (!v.is_array()) return false;
    for (auto& e : v)
      if (match(n.children[0], e)) return true;
    return false;
  }
  if (op == "$allMatch") {
    if (!v.is_array() || v.empty()) return false;
    for (auto& e : v)
      if (!match(n.children[0], e)) return false;
    return true;
  }
  return false;
}

bool evaluation::match(const node& n, const json& v) {
  if (!spend()) return false;
  switch (n.what) {
    case node::kind::all_of:
      for (auto& c : n.children)
        if (!match(c, v)) return false;
      return true;
    case node::kind::any_of:
      for (auto& c : n.children)
        if (match(c, v)) return true;
      return false;
    case node::kind::none_of:
      for (auto& c : n.children)
        if (match(c, v)) return false;
      return error.is_ok();
    case node::kind::negate:
      return !match(n.children[0], v) && error.is_ok();
    case node::kind::field: {
      bool bad_path = false;
      const json* sub = lookup(v, n.path, &bad_path);
      if (!sub) return !bad_path && is_exists_false(n.children[0]);  // only a missing member
      const bool was_raw = std::exchange(raw, raw || n.raw);
      const bool matched = match(n.children[0], *sub);
      raw = was_raw;
      return matched;
    }
    case node::kind::op:
      return match_op(n, v);
  }
  return false;
}

}  // namespace

int collate(const json& a, const json& b) {
  int ra = type_rank(a), rb = type_rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 3: {
      double x = a.get<double>(), y = b.get<double>();
      if (a.is_number_integer() && b.is_number_integer()) {
        int64_t i = a.get<int64_t>(), j = b.get<int64_t>();
        return i < j ? -1 : i > j ? 1 : 0;
      }
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 4:
      return collation::compare(a, b);  // ICU's root collator, as views
    case 5: {
      for (size_t i = 0; i < a.size() && i < b.size(); ++i)
        if (int c = collate(a[i], b[i])) return c;
      return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
    }
    case 6: {
      auto ia = a.begin(), ib = b.begin();
      for (; ia != a.end() && ib != b.end(); ++ia, ++ib) {
        if (int k = collation::compare(json(ia.key()), json(ib.key()))) return k;
        if (int c = collate(ia.value(), ib.value())) return c;
      }
      return ia == a.end() ? (ib == b.end() ? 0 : -1) : 1;
    }
    default:
      return 0;
  }
}

int erlang_compare(const json& a, const json& b) {
  auto rank = [](const json& v) {
    return v.is_number() ? 0 : v.is_boolean() || v.is_null() ? 1 : v.is_object() ? 2 : v.is_array() ? 3 : 4;
  };
  const int ra = rank(a), rb = rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  if (ra == 4) {
    const int c = a.get_ref<const std::string&>().compare(b.get_ref<const std::string&>());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (ra == 1) {
    auto name = [](const json& v) { return v.is_null() ? "null" : v.get<bool>() ? "true" : "false"; };
    const int c = std::strcmp(name(a), name(b));
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (ra == 3) {
    for (size_t i = 0; i < a.size() && i < b.size(); ++i)
      if (int c = erlang_compare(a[i], b[i])) return c;
    return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
  }
  return collate(a, b);  // numbers (an integer equals its float), and objects
}

namespace {

// mango_util:parse_field's refusal of a field name with an empty part ("a..b", ".a"), at any depth.
// Only where field names are (fields' conditions, $and/$or/$nor/$not and the $elemMatch family's
// arguments): an operator's value ({"$eq": {"x.": 1}}) is a value.
status check_field_names(const json& v) {
  if (v.is_array()) {
    for (const json& e : v)
      if (auto st = check_field_names(e); !st) return st;
  }
  if (!v.is_object()) return {};
  static const std::set<std::string> holding_fields = {"$and",       "$or",       "$nor",        "$not",
                                                       "$elemMatch", "$allMatch", "$keyMapMatch"};
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string& k = it.key();
    const bool op = !k.empty() && k[0] == '$';
    if (!op) {
      for (const std::string& part : split_field(k))
        if (part.empty()) return {errc::mango_invalid_field_name, "Invalid field name: " + k};
    }
    if (op && !holding_fields.count(k)) continue;
    if (auto st = check_field_names(it.value()); !st) return st;
  }
  return {};
}

// $text is a condition on the whole document (the text index's $default field): only where no
// field name is above it (mango_selector:norm_fields' bad_field).
status check_text(const json& v, bool top) {
  if (v.is_array()) {
    for (const json& e : v)
      if (auto st = check_text(e, top); !st) return st;
  }
  if (!v.is_object()) return {};
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string& k = it.key();
    if ((k == "$text" || k == "$default") && !top)
      return {errc::mango_bad_field, "Invalid field normalization on selector: " + erlang_w(v)};
    const bool keeps_top = k == "$and" || k == "$or" || k == "$nor" || k == "$not";
    if (auto st = check_text(it.value(), top && keeps_top); !st) return st;
  }
  return {};
}

}  // namespace

// Matched as CouchDB matches: the selector checked as given (its errors), then its normalized form
// (mango_selector:normalize) evaluated, so that $not and $nor reach the fields ({"$not":{"a":1}} is
// {"a":{"$ne":1}}: only documents that have `a`), {"a":{}} is {"a":{"$eq":{}}}, and an operator
// at the top ({"$gt":1}) is a condition without a field name.
result<mango_selector> mango_selector::compile(const json& selector) {
  if (!selector.is_object()) return selector_error("expected a JSON object");
  if (auto given = compile_object(selector); !given) return given.error();
  if (auto st = check_field_names(selector); !st) return st;
  if (auto st = check_text(selector, true); !st) return st;
  const json normal = normalize_selector(selector);
  for (auto it = normal.begin(); it != normal.end(); ++it)
    if (it.key().empty()) return status{errc::mango_missing_field, "One or more conditions is missing a field name."};
  auto root = compile_object(normal);
  if (!root) return root.error();
  mango_selector s;
  s.root_ = std::make_shared<const node>(std::move(*root));
  return s;
}

result<mango_selector> mango_selector::compile_part(const json& filter) {
  if (!filter.is_array()) return compile(filter);
  if (filter.size() != 2 || !filter[1].is_array()) return selector_error("expected a JSON object");
  auto selector = compile(filter[0]);
  if (!selector) return selector.error();
  node all, none;
  all.what = node::kind::all_of;
  none.what = node::kind::none_of;
  all.children.push_back(*selector->root_);
  for (const json& branch : filter[1]) {
    auto b = compile(branch);
    if (!b) return b.error();
    none.children.push_back(*b->root_);
  }
  all.children.push_back(std::move(none));
  mango_selector s;
  s.root_ = std::make_shared<const node>(std::move(all));
  return s;
}

result<bool> mango_selector::matches(const json& doc) const {
  evaluation e;
  bool matched = e.match(*root_, doc);
  if (!e.error.is_ok()) return e.error;
  return matched;
}

namespace {

bool is_op(const std::string& k) {
  return !k.empty() && k[0] == '$';
}

bool one_of(const std::string& k, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (k == n) return true;
  return false;
}

json single(const std::string& k, json v) {
  json o = json::object();
  o[k] = std::move(v);
  return o;
}

// mango_selector's norm_ops: implicit $and and $eq made explicit.
json norm_ops(const json& v) {
  if (!v.is_object() || v.empty()) return single("$eq", v);
  if (v.size() > 1) {
    json all = json::array();
    for (auto it = v.begin(); it != v.end(); ++it) all.push_back(norm_ops(single(it.key(), it.value())));
    return single("$and", std::move(all));
  }
  const std::string& k = v.begin().key();
  const json& a = v.begin().value();
  if (one_of(k, {"$and", "$or", "$nor"}) && a.is_array()) {
    json out = json::array();
    for (const json& e : a) out.push_back(norm_ops(e));
    return single(k, std::move(out));
  }
  if (one_of(k, {"$not", "$elemMatch", "$allMatch", "$keyMapMatch"}) && a.is_object()) return single(k, norm_ops(a));
  if (k == "$text") return single("$default", v);  // the text index's default field
  if (is_op(k)) return v;
  return single(k, norm_ops(a));
}

json norm_fields(const json& v, const std::string& path);

json norm_fields_top(const json& v) {
  return v.is_object() && v.empty() ? json::object() : norm_fields(v, "");
}

// mango_selector's norm_fields: field names pushed down to the operators as dotted paths.
json norm_fields(const json& v, const std::string& path) {
  if (!v.is_object() || v.size() != 1) return single(path, v);
  const std::string& k = v.begin().key();
  const json& a = v.begin().value();
  if (one_of(k, {"$and", "$or", "$nor"}) && a.is_array()) {
    json out = json::array();
    for (const json& e : a) out.push_back(norm_fields(e, path));
    return single(k, std::move(out));
  }
  if (k == "$not") return single(k, norm_fields(a, path));
  if (k == "$default") return path.empty() ? v : single(path, v);  // below a field: refused by check_text
  if (one_of(k, {"$elemMatch", "$allMatch", "$keyMapMatch"})) return single(path, single(k, norm_fields_top(a)));
  if (is_op(k)) return single(path, v);
  return norm_fields(a, path.empty() ? k : path + "." + k);
}

json negate(const json& v);

// mango_selector's norm_negations: $not and $nor pushed down to the leaves.
json norm_negations(const json& v) {
  if (!v.is_object() || v.size() != 1) return v;
  const std::string& k = v.begin().key();
  const json& a = v.begin().value();
  if (k == "$not") return negate(a);
  if (k == "$nor" && a.is_array()) {
    json out = json::array();
    for (const json& e : a) out.push_back(negate(e));
    return single("$and", std::move(out));
  }
  if (one_of(k, {"$and", "$or"}) && a.is_array()) {
    json out = json::array();
    for (const json& e : a) out.push_back(norm_negations(e));
    return single(k, std::move(out));
  }
  if (one_of(k, {"$elemMatch", "$allMatch", "$keyMapMatch"})) return single(k, norm_negations(a));
  return v;
}

json negate(const json& v) {
  if (!v.is_object() || v.size() != 1) return single("$not", v);
  const std::string& k = v.begin().key();
  const json& a = v.begin().value();
  auto each = [&](const char* op, bool negated) {
    json out = json::array();
    for (const json& e : a) out.push_back(negated ? negate(e) : norm_negations(e));
    return single(op, std::move(out));
  };
  if (k == "$not") return norm_negations(a);
  if (k == "$default") return v;  // a text query is not negated (mango_selector:negate)
  if (k == "$nor" && a.is_array()) return each("$or", false);
  if (k == "$and" && a.is_array()) return each("$or", true);
  if (k == "$or" && a.is_array()) return each("$and", true);
  static const std::pair<const char*, const char*> flips[] = {{"$lt", "$gte"}, {"$lte", "$gt"}, {"$eq", "$ne"},
                                                              {"$ne", "$eq"},  {"$gte", "$lt"}, {"$gt", "$lte"},
                                                              {"$in", "$nin"}, {"$nin", "$in"}};
  for (const auto& [from, to] : flips)
    if (k == from) return single(to, a);
  if (k == "$exists" && a.is_boolean()) return single(k, !a.get<bool>());
  if (is_op(k)) return single("$not", v);
  return single(k, negate(a));
}

}  // namespace

json normalize_selector(const json& selector) {
  if (!selector.is_object() || selector.empty()) return json::object();
  return norm_negations(norm_fields_top(norm_ops(selector)));
}

}  // namespace settee
