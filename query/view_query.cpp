#include "query/view_query.hpp"

#include <strings.h>

#include <cerrno>
#include <cstdlib>

#include "wire/json_util.hpp"

namespace settee {

namespace {

status parse_error(std::string reason) {
  return {errc::query_parse_error, std::move(reason)};
}

// A value as CouchDB's ~p shows it in a reason: text quoted, JSON as it was sent.
std::string shown(const json& v) {
  return v.is_string() ? "\"" + v.get<std::string>() + "\"" : v.dump();
}

// parse_boolean: JSON booleans, or text "true"/"false" in any case.
result<bool> boolean_of(const json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (strcasecmp(s.c_str(), "true") == 0) return true;
    if (strcasecmp(s.c_str(), "false") == 0) return false;
  }
  return parse_error("Invalid boolean parameter: " + shown(v));
}

// parse_pos_int: JSON integers, or text that is one.
result<int64_t> pos_int_of(const json& v) {
  int64_t n = 0;
  if (v.is_number_integer()) {
    n = v.get<int64_t>();
  } else if (v.is_string() && !v.get_ref<const std::string&>().empty()) {
    const std::string& s = v.get_ref<const std::string&>();
    char* end = nullptr;
    errno = 0;
    long long parsed = std::strtoll(s.c_str(), &end, 10);
    if (errno != 0 || *end != '\0' || s[0] == ' ') return parse_error("Invalid value for integer: " + shown(v));
    n = parsed;
  } else {
    return parse_error("Invalid value for integer: " + shown(v));
  }
  if (n < 0) return parse_error("Invalid value for positive integer: " + shown(v));
  return n;
}

// One option. `decoded`: the value is JSON already (a body); else text, JSON-encoded for keys.
status apply_one(view_query& q, const std::string& key, const json& value, bool decoded, const char* keys_refusal) {
  auto key_value = [&]() -> result<json> {
    if (decoded) return value;
    return parse_client_json(value.get<std::string>(), parse_error("Invalid JSON in the `" + key + "` parameter"));
  };
  auto set_bool = [&](bool& slot) -> status {
    auto b = boolean_of(value);
    if (!b) return b.error();
    slot = *b;
    return {};
  };
  auto set_text = [&](const char* name, const char* allowed[], size_t n, std::string& slot) -> status {
    std::string v = value.is_string() ? value.get<std::string>() : value.dump();
    for (size_t i = 0; i < n; ++i)
      if (v == allowed[i]) {
        slot = v;
        return {};
      }
    return parse_error(std::string("Invalid value for `") + name + "`.");
  };
  if (key == "key" || key == "startkey" || key == "start_key" || key == "endkey" || key == "end_key" || key == "keys") {
    auto k = key_value();
    if (!k) return k.error();
    if (key == "keys") {
      if (!k->is_array()) return {errc::bad_request, keys_refusal};
      q.keys = std::move(*k);
    } else if (key == "key") {
      q.start_key = q.end_key = std::move(*k);
    } else if (key[0] == 's') {
      q.start_key = std::move(*k);
    } else {
      q.end_key = std::move(*k);
    }
    return {};
  }
  if (key == "startkey_docid" || key == "start_key_doc_id" || key == "endkey_docid" || key == "end_key_doc_id") {
    if (decoded && !value.is_string()) {
      return parse_error(std::string(key[0] == 's' ? "`start_key_docid`" : "`end_key_docid`") + " must be a string.");
    }
    (key[0] == 's' ? q.start_key_docid : q.end_key_docid) = value.get<std::string>();
    return {};
  }
  if (key == "limit" || key == "skip" || key == "group_level") {
    auto n = pos_int_of(value);
    if (!n) return n.error();
    if (key == "limit")
      q.limit = *n;
    else if (key == "skip")
      q.skip = *n;
    else
      q.group_level = *n;
    return {};
  }
  if (key == "reduce" || key == "group") {
    auto b = boolean_of(value);
    if (!b) return b.error();
    (key == "reduce" ? q.reduce : q.group) = *b;
    return {};
  }
  if (key == "stale") {
    std::string v = value.is_string() ? value.get<std::string>() : "";
    if (v == "ok")
      q.update = "false";
    else if (v == "update_after")
      q.update = "lazy";
    else
      return parse_error("Invalid value for `stale`.");
    q.stable = true;
    return {};
  }
  if (key == "stable") {
    auto b = boolean_of(value);
    if (!b) return parse_error("Invalid value for `stable`.");
    q.stable = *b;
    return {};
  }
  if (key == "update") {
    static const char* allowed[] = {"true", "false", "lazy"};
    return set_text("update", allowed, 3, q.update);
  }
  if (key == "descending") return set_bool(q.descending);
  if (key == "inclusive_end") return set_bool(q.inclusive_end);
  if (key == "include_docs") return set_bool(q.include_docs);
  if (key == "conflicts") return set_bool(q.conflicts);
  if (key == "update_seq") return set_bool(q.update_seq);
  if (key == "sorted") return set_bool(q.sorted);
  if (key == "attachments") return set_bool(q.attachments);
  if (key == "att_encoding_info") return set_bool(q.att_encoding_info);
  return {};  // CouchDB keeps anything else as `extra`, unused here
}

}  // namespace

status apply_view_options(view_query& q, const json& options, const char* keys_refusal) {
  for (auto it = options.begin(); it != options.end(); ++it) {
    if (auto st = apply_one(q, it.key(), it.value(), true, keys_refusal); !st) return st;
  }
  return {};
}

status apply_view_params(view_query& q, const query_list& params) {
  for (const auto& [k, v] : params) {
    if (auto st = apply_one(q, k, json(v), false, "`keys` parameter must be an array."); !st) return st;
  }
  return {};
}

status validate_map_query(const view_query& q) {
  // determine_group_level, then validate_args for a map view.
  if (q.group == false && q.group_level && *q.group_level > 0)
    return parse_error("Can't specify group=false and group_level>0 at the same time");
  if (q.reduce == true) return parse_error("Reduce is invalid for map-only views.");
  if ((q.group == true && !q.group_level) || (q.group_level && *q.group_level > 0))
    return parse_error("Invalid use of grouping on a map view.");
  if (q.keys && !q.keys->empty() && (q.start_key || q.end_key))
    return parse_error("`keys` is incompatible with `key`, `start_key` and `end_key`");
  return {};
}

status validate_reduce_query(const view_query& q) {
  // determine_group_level, then validate_args for a reduce view queried with its reduce.
  if (q.group == false && q.group_level && *q.group_level > 0)
    return parse_error("Can't specify group=false and group_level>0 at the same time");
  const bool exact = q.group == true && !q.group_level;
  if (q.keys && !exact) return parse_error("Multi-key fetchs for reduce views must use `group=true`");
  if (q.include_docs) return parse_error("`include_docs` is invalid for reduce");
  if (q.conflicts) return parse_error("`conflicts` is invalid for reduce");
  if (q.keys && !q.keys->empty() && (q.start_key || q.end_key))
    return parse_error("`keys` is incompatible with `key`, `start_key` and `end_key`");
  return {};
}

}  // namespace settee
