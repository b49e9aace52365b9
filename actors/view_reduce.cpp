#include "actors/view_reduce.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "node/collation.hpp"

namespace settee {
namespace {

const char* sum_error =
    "The _sum function requires that map values be numbers, arrays of numbers, or objects. Objects cannot be mixed "
    "with other data structures. Objects can be arbitrarily nested, provided that the values for all fields are "
    "themselves numbers, arrays of numbers, or objects.";

struct cannot_add {
  json cause;
};

json sum_values(const json& value, const json& acc);

json add_numbers(const json& a, const json& b) {
  // Integers stay integers (CouchDB's Erlang arithmetic); a float anywhere makes a float.
  if (a.is_number_float() || b.is_number_float()) return a.get<double>() + b.get<double>();
  return a.get<int64_t>() + b.get<int64_t>();
}

// sum_arrays(Xs, Ys): element by element; the longer one's rest as it is.
json sum_arrays(const json& xs, const json& ys) {
  json out = json::array();
  const size_t n = std::max(xs.size(), ys.size());
  for (size_t i = 0; i < n; ++i) {
    if (i >= xs.size()) {
      out.push_back(ys[i]);
    } else if (i >= ys.size()) {
      out.push_back(xs[i]);
    } else if (xs[i].is_number() && ys[i].is_number()) {
      out.push_back(add_numbers(xs[i], ys[i]));
    } else {
      throw cannot_add{json(xs.begin() + static_cast<std::ptrdiff_t>(i), xs.end())};
    }
  }
  return out;
}

// sum_objects: member by member, in member-name order; members of one side only kept.
json sum_objects(const json& value, const json& acc) {
  std::map<std::string, json> out;
  for (const auto& [k, v] : acc.items()) out[k] = v;
  for (const auto& [k, v] : value.items()) out[k] = out.count(k) ? sum_values(v, out[k]) : v;
  json sorted = json::object();
  for (auto& [k, v] : out) sorted[k] = std::move(v);
  return sorted;
}

// couch_query_servers:sum_values(Value, Acc).
json sum_values(const json& value, const json& acc) {
  if (value.is_number() && acc.is_number()) return add_numbers(value, acc);
  if (value.is_array() && acc.is_array()) return sum_arrays(acc, value);
  if (value.is_number() && acc.is_array()) return sum_arrays(acc, json::array({value}));
  if (value.is_array() && acc.is_number()) return sum_arrays(json::array({acc}), value);
  if (value.is_object()) {
    if (acc.is_number_integer() && acc.get<int64_t>() == 0) return value;  // the start (Erlang's 0)
    if (acc.is_object()) return sum_objects(value, acc);
  }
  throw cannot_add{value};
}

// {sum, count, min, max, sumsqr}: integers while every value is one (CouchDB's Erlang arithmetic).
struct stats {
  double sum = 0, min = 0, max = 0, sumsqr = 0;
  int64_t isum = 0, imin = 0, imax = 0, isumsqr = 0;
  uint64_t count = 0;
  bool integers = true;
  void add(const json& v) {
    const double d = v.get<double>();
    if (v.is_number_float()) integers = false;
    if (integers) {
      const int64_t i = v.get<int64_t>();
      imin = count ? std::min(imin, i) : i;
      imax = count ? std::max(imax, i) : i;
      isum += i;
      isumsqr += i * i;
    }
    min = count ? std::min(min, d) : d;
    max = count ? std::max(max, d) : d;
    sum += d;
    sumsqr += d * d;
    ++count;
  }
  // Another partial's {sum, count, min, max, sumsqr} (CouchDB's stat_values on a pre-reduced value).
  bool merge(const json& o) {
    if (!o.is_object()) return false;
    for (const char* f : {"sum", "count", "min", "max", "sumsqr"})
      if (!o.contains(f) || !o[f].is_number()) return false;
    const uint64_t n = o["count"].get<uint64_t>();
    if (n == 0) return true;
    const bool ints = o["sum"].is_number_integer() && o["min"].is_number_integer() && o["max"].is_number_integer() &&
                      o["sumsqr"].is_number_integer();
    if (!ints) integers = false;
    if (integers) {
      imin = count ? std::min(imin, o["min"].get<int64_t>()) : o["min"].get<int64_t>();
      imax = count ? std::max(imax, o["max"].get<int64_t>()) : o["max"].get<int64_t>();
      isum += o["sum"].get<int64_t>();
      isumsqr += o["sumsqr"].get<int64_t>();
    }
    min = count ? std::min(min, o["min"].get<double>()) : o["min"].get<double>();
    max = count ? std::max(max, o["max"].get<double>()) : o["max"].get<double>();
    sum += o["sum"].get<double>();
    sumsqr += o["sumsqr"].get<double>();
    count += n;
    return true;
  }
  json packed() const {
    if (integers) return json{{"sum", isum}, {"count", count}, {"min", imin}, {"max", imax}, {"sumsqr", isumsqr}};
    return json{{"sum", sum}, {"count", count}, {"min", min}, {"max", max}, {"sumsqr", sumsqr}};
  }
};

}  // namespace

result<builtin_reduce> builtin_of(const std::string& source) {
  if (source.empty() || source[0] != '_') return builtin_reduce::none;
  for (const auto& [name, b] : std::initializer_list<std::pair<const char*, builtin_reduce>>{
           {"_approx_count_distinct", builtin_reduce::approx_count_distinct},
           {"_count", builtin_reduce::count},
           {"_stats", builtin_reduce::stats},
           {"_sum", builtin_reduce::sum}})
    if (source.compare(0, std::char_traits<char>::length(name), name) == 0) return b;
  return status{errc::invalid_design_doc, "Reduce function `" + source +
                                              "` is not a built-in (_count, _sum, _stats, "
                                              "_approx_count_distinct)"};
}

result<json> reduce_rows(builtin_reduce how, const std::vector<std::pair<const json*, const json*>>& rows) {
  switch (how) {
    case builtin_reduce::count:
      return json(static_cast<uint64_t>(rows.size()));
    case builtin_reduce::sum: {
      json acc = 0;
      try {
        for (const auto& [key, value] : rows) acc = sum_values(*value, acc);
      } catch (const cannot_add& e) {
        return json{
            {"error", error_name_of(errc::builtin_reduce_error)}, {"reason", sum_error}, {"caused_by", e.cause}};
      }
      return acc;
    }
    case builtin_reduce::stats: {
      std::vector<stats> per;  // one for a number, one per element for arrays
      bool arrays = false;
      for (const auto& [key, value] : rows) {
        const bool is_array = value->is_array();
        if (!value->is_number() && !is_array)
          return status{errc::builtin_reduce_error,
                        "The _stats function requires that map values be numbers or arrays of numbers, not '" +
                            value->dump() + "'"};
        if (per.empty()) arrays = is_array;
        if (arrays != is_array)
          return status{errc::builtin_reduce_error,
                        "The _stats function requires that map values be numbers or arrays of numbers, not '" +
                            value->dump() + "'"};
        const size_t n = is_array ? value->size() : 1;
        // Arrays of one length (CouchDB's lists:zipwith fails on others).
        if (!per.empty() && per.size() != n)
          return status{
              errc::builtin_reduce_error,
              "The _stats function requires that map value arrays be of the same length, not '" + value->dump() + "'"};
        if (per.empty()) per.resize(n);
        for (size_t i = 0; i < n; ++i) {
          const json& v = is_array ? (*value)[i] : *value;
          if (!v.is_number())
            return status{errc::builtin_reduce_error,
                          "The _stats function requires that map values be numbers or arrays of numbers, not '" +
                              value->dump() + "'"};
          per[i].add(v);
        }
      }
      if (!arrays) return per.empty() ? json(0) : per.front().packed();
      json out = json::array();
      for (const auto& s : per) out.push_back(s.packed());
      return out;
    }
    case builtin_reduce::approx_count_distinct: {
      std::set<std::string> keys;
      for (const auto& [key, value] : rows) keys.insert(collation::sort_key(*key));
      return json(static_cast<uint64_t>(keys.size()));
    }
    case builtin_reduce::none:
      break;
  }
  return status{errc::internal, "not a built-in reduce"};
}

namespace {

// A row's value as JSON: an integer of up to 18 digits (the usual emit(k, 1)) without the parser.
json value_of(const std::string& text) {
  const char* p = text.data();
  const char* end = p + text.size();
  const bool minus = p != end && *p == '-';
  const size_t digits = text.size() - (minus ? 1 : 0);
  if (digits == 0 || digits > 18 || (digits > 1 && p[minus ? 1 : 0] == '0')) return json::parse(text, nullptr, false);
  int64_t n = 0;
  for (const char* d = p + (minus ? 1 : 0); d != end; ++d) {
    if (*d < '0' || *d > '9') return json::parse(text, nullptr, false);
    n = n * 10 + (*d - '0');
  }
  return minus ? json(-n) : json(n);
}

}  // namespace

result<json> reduce_view_rows(builtin_reduce how, const std::vector<view_row>& rows) {
  if (how == builtin_reduce::count) return json(static_cast<uint64_t>(rows.size()));
  // The keys matter to _approx_count_distinct alone; the others read the values.
  const bool keyed = how == builtin_reduce::approx_count_distinct;
  const json no_key;
  std::vector<json> keys, values;
  keys.reserve(keyed ? rows.size() : 0);
  values.reserve(rows.size());
  for (const auto& row : rows) {
    if (keyed) keys.push_back(json::parse(row.key_json, nullptr, false));
    values.push_back(value_of(row.value_json));
  }
  std::vector<std::pair<const json*, const json*>> pairs;
  pairs.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) pairs.emplace_back(keyed ? &keys[i] : &no_key, &values[i]);
  return reduce_rows(how, pairs);
}

result<json> rereduce(builtin_reduce how, const std::vector<json>& partials) {
  switch (how) {
    case builtin_reduce::count: {
      uint64_t n = 0;
      for (const json& p : partials) n += p.is_number_unsigned() || p.is_number_integer() ? p.get<uint64_t>() : 0;
      return json(n);
    }
    case builtin_reduce::sum: {
      json acc = 0;
      try {
        for (const json& p : partials) {
          // A partial that is CouchDB's error object is the answer (couch_query_servers:sum_values).
          if (p.is_object() && p.value("error", json()) == error_name_of(errc::builtin_reduce_error)) return p;
          acc = sum_values(p, acc);
        }
      } catch (const cannot_add& e) {
        return json{
            {"error", error_name_of(errc::builtin_reduce_error)}, {"reason", sum_error}, {"caused_by", e.cause}};
      }
      return acc;
    }
    case builtin_reduce::stats: {
      std::vector<stats> per;
      bool arrays = false, first = true;
      for (const json& p : partials) {
        if (p.is_number() && p == 0) continue;  // an empty partial
        const bool is_array = p.is_array();
        if (first) arrays = is_array;
        first = false;
        if (arrays != is_array) return status{errc::builtin_reduce_error, "_stats partials of different shapes"};
        const size_t n = is_array ? p.size() : 1;
        if (!per.empty() && per.size() != n)
          return status{errc::builtin_reduce_error, "_stats partials of different lengths"};
        if (per.empty()) per.resize(n);
        for (size_t i = 0; i < n; ++i)
          if (!per[i].merge(is_array ? p[i] : p))
            return status{errc::builtin_reduce_error, "a _stats partial is malformed: " + p.dump()};
      }
      if (!arrays) return per.empty() ? json(0) : per.front().packed();
      json out = json::array();
      for (const auto& st : per) out.push_back(st.packed());
      return out;
    }
    default:
      break;
  }
  return status{errc::internal, "this reduce has no partials"};
}

}  // namespace settee
