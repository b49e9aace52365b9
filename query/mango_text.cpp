#include "query/mango_text.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "query/mango_selector.hpp"
#include "wire/json_util.hpp"

namespace settee {

namespace {

// mango_util:lucene_escape_field: every byte but [A-Za-z0-9] as "_" and two hex digits.
std::string escape_field(const std::string& s) {
  static const char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (unsigned char ch : s) {
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')) {
      out += static_cast<char>(ch);
    } else {
      out += '_';
      out += hex[ch >> 4];
      out += hex[ch & 15];
    }
  }
  return out;
}

// An index field's name: the path's parts escaped and joined by dots, `suffix` (":string") part
// of the last one (mango_native_proc:make_text_field_name, mango_util:lucene_escape_user).
std::string field_name(const std::vector<std::string>& parts, const std::string& suffix) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += '.';
    out += escape_field(i + 1 == parts.size() ? parts[i] + suffix : parts[i]);
  }
  return out;
}

// mango_util:lucene_escape_query_value: Lucene's special characters and white space escaped.
std::string escape_value(const std::string& s) {
  static const std::string special = "+-(){}[]!^~*?:/\\\" \t\r\n&|";
  std::string out;
  for (char ch : s) {
    if (special.find(ch) != std::string::npos) out += '\\';
    out += ch;
  }
  return out;
}

const char* type_of(const json& v) {
  if (v.is_number()) return "number";
  if (v.is_boolean()) return "boolean";
  if (v.is_string()) return "string";
  return "null";
}

std::string number_text(const json& v) {
  return v.is_number_integer() ? v.dump() : json(v.get<double>()).dump();
}

// mango_selector_text:value_str: a string quoted, a number as written (its sign escaped), a
// boolean, and null as true (a null field is indexed as true).
std::string value_str(const json& v) {
  if (v.is_string()) return "\"" + escape_value(v.get<std::string>()) + "\"";
  if (v.is_number()) return escape_value(number_text(v));
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return "true";
}

// The abstract query (mango_selector_text's tuples).
struct tq {
  enum class op { all, any, negate, not_exists, field, null, fieldname, regex, deflt } what = op::all;
  std::vector<tq> args;           // all, any; negate: {exists, condition}; not_exists: {exists}
  std::vector<std::string> path;  // field, null, fieldname, regex: the field's parts
  std::string suffix;             // field, null: ":type" or ":length"; fieldname: ":" or ""
  std::string value;              // field, null, deflt: the query's text; fieldname: "*", ".*" or a type
  bool array_part = false;        // field: the path holds "[]" (an $in's or an index's second field)
};

tq combo(tq::op what, std::vector<tq> args) {
  tq t;
  t.what = what;
  t.args = std::move(args);
  return t;
}

tq field(const std::vector<std::string>& path, const std::string& suffix, std::string value) {
  tq t;
  t.what = tq::op::field;
  t.path = path;
  t.suffix = suffix;
  t.value = std::move(value);
  t.array_part = std::find(path.begin(), path.end(), "[]") != path.end();
  return t;
}

tq fieldname(const std::vector<std::string>& path, const std::string& suffix, const std::string& wildcard) {
  tq t;
  t.what = tq::op::fieldname;
  t.path = path;
  t.suffix = suffix;
  t.value = wildcard;
  return t;
}

// field_exists_query: "path:*" or "path.*" (a prefix alone would take path_first for path).
tq exists(const std::vector<std::string>& path) {
  return combo(tq::op::any, {fieldname(path, ":", "*"), fieldname(path, "", ".*")});
}

std::vector<std::string> plus(std::vector<std::string> path, const std::string& part) {
  path.push_back(part);
  return path;
}

result<tq> convert(const std::vector<std::string>& path, const json& v);

tq value_field(const std::vector<std::string>& path, const json& v) {
  return field(path, std::string(":") + type_of(v), value_str(v));
}

// $in's values: each one as the field or as an element of it (mango_selector_text:convert_in).
result<std::vector<tq>> convert_in(const std::vector<std::string>& path, const json& values) {
  std::vector<tq> out;
  const auto elements = plus(path, "[]");
  for (const json& v : values) {
    if (v.is_object()) {
      std::vector<tq> parts;
      for (auto it = v.begin(); it != v.end(); ++it) {
        json one = json::object();
        one[it.key()] = it.value();
        auto a = convert(path, one), b = convert(elements, one);
        if (!a) return a.error();
        if (!b) return b.error();
        parts.push_back(combo(tq::op::any, {std::move(*a), std::move(*b)}));
      }
      out.push_back(combo(tq::op::any, std::move(parts)));
    } else if (v.is_array()) {
      out.push_back(exists(path));  // matched against the selector afterwards
    } else {
      out.push_back(combo(tq::op::any, {value_field(path, v), value_field(elements, v)}));
    }
  }
  return out;
}

// A range open on one side (Lucene 3's parser takes no mixed brackets): numbers to infinity,
// strings from "" or to the last code point, an excluded bound of those taken out by NOT.
std::string range(const std::string& op, const json& v) {
  const std::string at = value_str(v);
  if (v.is_number()) {
    if (op == "$lt") return "{* TO " + at + "}";
    if (op == "$lte") return "[* TO " + at + "]";
    if (op == "$gte") return "[" + at + " TO *]";
    return "{" + at + " TO *}";
  }
  const std::string below = "[\"\" TO " + at + "]", above = "[" + at + " TO \"\xf4\x8f\xbf\xbf\"]";
  if (op == "$lt") return "(" + below + " AND NOT " + at + ")";
  if (op == "$lte") return below;
  if (op == "$gte") return above;
  return "(" + above + " AND NOT " + at + ")";
}

// {"$eq": a}: null as the field's null entry, an array as its length and each element, an object
// as its own conditions.
result<tq> convert_eq(const std::vector<std::string>& path, const json& a) {
  if (a.is_null()) {
    tq t = field(path, ":null", "true");
    t.what = tq::op::null;
    return t;
  }
  if (a.is_array()) {
    const auto elements = plus(path, "[]");
    std::vector<tq> parts{field(elements, ":length", std::to_string(a.size()))};
    for (const json& e : a) {
      auto p = convert_eq(elements, e);
      if (!p) return p.error();
      parts.push_back(std::move(*p));
    }
    return combo(tq::op::all, std::move(parts));
  }
  if (a.is_object()) return convert(path, a);
  return value_field(path, a);
}

result<tq> convert_op(const std::vector<std::string>& path, const std::string& k, const json& a) {
  auto each = [&](tq::op what, const json& args, const std::vector<std::string>& at) -> result<tq> {
    std::vector<tq> parts;
    for (const json& e : args) {
      auto p = convert(at, e);
      if (!p) return p.error();
      parts.push_back(std::move(*p));
    }
    return combo(what, std::move(parts));
  };
  auto negated = [&](result<tq> inner) -> result<tq> {
    if (!inner) return inner.error();
    return combo(tq::op::negate, {exists(path), std::move(*inner)});
  };
  if (k == "$and" && a.is_array()) return each(tq::op::all, a, path);
  if (k == "$or" && a.is_array()) return each(tq::op::any, a, path);
  if (k == "$not") return negated(convert(path, a));
  if (k == "$default") {
    tq t;
    t.what = tq::op::deflt;
    t.value = value_str(a.is_object() && a.contains("$text") ? a["$text"] : a);
    return t;
  }
  if (k == "$text") return value_field(path, a);
  if (k == "$all" && a.is_array()) {
    if (a.size() == 1 && a[0].is_array()) {
      auto whole = convert_eq(path, a[0]), inner = convert_eq(plus(path, "[]"), a[0]);
      if (!whole) return whole.error();
      if (!inner) return inner.error();
      return combo(tq::op::any, {std::move(*whole), std::move(*inner)});
    }
    return each(tq::op::all, a, plus(path, "[]"));
  }
  if (k == "$elemMatch" || k == "$allMatch") return convert(plus(path, "[]"), a);
  if (k == "$lt" || k == "$lte" || k == "$gt" || k == "$gte") {
    if (a.is_array() || a.is_object() || a.is_null()) return exists(path);
    return field(path, std::string(":") + type_of(a), range(k, a));
  }
  if (k == "$eq") return convert_eq(path, a);
  if (k == "$ne") return negated(convert_eq(path, a));
  if (k == "$in" || k == "$nin") {
    auto values = convert_in(path, a.is_array() ? a : json::array());
    if (!values) return values.error();
    tq any = combo(tq::op::any, std::move(*values));
    return k == "$in" ? any : combo(tq::op::negate, {exists(path), std::move(any)});
  }
  if (k == "$exists") return a == json(false) ? combo(tq::op::not_exists, {exists(path)}) : exists(path);
  if (k == "$beginsWith" && a.is_string()) return field(path, ":string", escape_value(a.get<std::string>()) + "*");
  if (k == "$type") return exists(path);
  if (k == "$mod") return fieldname(path, ":", "number");
  if (k == "$regex") {
    tq t;
    t.what = tq::op::regex;
    t.path = path;
    return t;
  }
  if (k == "$size") return field(plus(path, "[]"), ":length", value_str(a));
  return status{errc::mango_invalid_operator, "Invalid text operator: " + k};
}

// mango_selector_text:convert over a normalized selector: one member an object.
result<tq> convert(const std::vector<std::string>& path, const json& v) {
  if (!v.is_object()) return value_field(path, v);  // $in's and $all's values
  if (v.empty()) return exists(path);
  if (v.size() > 1) {
    std::vector<tq> parts;
    for (auto it = v.begin(); it != v.end(); ++it) {
      json one = json::object();
      one[it.key()] = it.value();
      auto p = convert(path, one);
      if (!p) return p.error();
      parts.push_back(std::move(*p));
    }
    return combo(tq::op::all, std::move(parts));
  }
  const std::string& k = v.begin().key();
  const json& a = v.begin().value();
  if (!k.empty() && k[0] == '$') return convert_op(path, k, a);
  if (k.empty()) return convert(path, a);  // a normalized $elemMatch's conditions on the element itself
  // A field: its parts, an array position also as any element ("a.0.b" or "a.[].b").
  std::vector<std::string> parts = path, elements = path;
  bool positional = false;
  for (const std::string& p : split_field(k)) {
    parts.push_back(p);
    const bool digits = !p.empty() && p.find_first_not_of("0123456789") == std::string::npos;
    positional |= digits;
    elements.push_back(digits ? "[]" : p);
  }
  if (!positional) return convert(parts, a);
  auto as_given = convert(parts, a), as_element = convert(elements, a);
  if (!as_given) return as_given.error();
  if (!as_element) return as_element.error();
  return combo(tq::op::any, {std::move(*as_given), std::move(*as_element)});
}

std::string to_query(const tq& t) {
  switch (t.what) {
    case tq::op::all:
    case tq::op::any: {
      std::string out;
      for (const tq& a : t.args) {
        std::string q = to_query(a);
        if (q.empty() || q == "()") continue;
        out += (out.empty() ? "" : t.what == tq::op::all ? " AND " : " OR ") + q;
      }
      return out.empty() ? "" : "(" + out + ")";
    }
    case tq::op::negate: {
      const std::string q = to_query(t.args[1]);
      if (q.empty()) return "(" + to_query(t.args[0]) + ")";
      return "(" + to_query(t.args[0]) + " AND NOT (" + q + "))";
    }
    case tq::op::not_exists:  // every document but those with the field (CouchDB: $fieldnames:/.*/)
      return "(*:* AND NOT (" + to_query(t.args[0]) + "))";
    case tq::op::field:
    case tq::op::null:
      return "(" + field_name(t.path, t.suffix) + ":" + t.value + ")";
    case tq::op::fieldname:
      return "($fieldnames:" + field_name(t.path, t.suffix) + t.value + ")";
    case tq::op::regex:
      return "($fieldnames:" + field_name(t.path, ":") + "string)";
    case tq::op::deflt:
      return "($default:" + t.value + ")";
  }
  return "";
}

// A field's name as an index definition lists it: the path's parts joined by dots ("a.b:string").
std::string plain_name(const tq& t, const std::string& suffix) {
  std::string out;
  for (const std::string& p : t.path) out += (out.empty() ? "" : ".") + p;
  return out + suffix;
}

void indexable(const tq& t, std::vector<std::string>& out) {
  switch (t.what) {
    case tq::op::any:
      // An $in's (or positional) pair: the field as given and as an element; an index defines one.
      if (t.args.size() == 2 && t.args[0].what == tq::op::field && t.args[1].what == tq::op::field &&
          t.args[1].array_part) {
        indexable(t.args[0], out);
        return;
      }
      [[fallthrough]];
    case tq::op::all:
      for (const tq& a : t.args) indexable(a, out);
      return;
    case tq::op::negate:
      indexable(t.args[0], out);
      indexable(t.args[1], out);
      return;
    case tq::op::not_exists:
      out.clear();  // mango_idx_text: "$exists": false may use any text index
      return;
    case tq::op::field:
      if (t.suffix != ":length") out.push_back(plain_name(t, t.suffix));
      return;
    case tq::op::regex:
      out.push_back(plain_name(t, ":string"));
      return;
    case tq::op::deflt:
      out.push_back("$default");
      return;
    case tq::op::fieldname:
    case tq::op::null:
      return;
  }
}

bool default_enabled(const json& def) {
  const json d = def.value("default_field", json::object());
  if (d.is_boolean()) return d.get<bool>();
  return !d.is_object() || d.value("enabled", json(true)) != json(false);
}

std::string default_field_analyzer(const json& def) {
  const json d = def.value("default_field", json::object());
  return d.is_object() && d.contains("analyzer") && d["analyzer"].is_string() ? d["analyzer"].get<std::string>()
                                                                              : "standard";
}

status fields_error(const json& fields) {
  return {errc::mango_invalid_index_fields,
          "Text Index field definitions must be of the form\n            {\"name\": \"non-empty fieldname\", "
          "\"type\":\n                \"boolean,number, or string\"}. Def: " +
              erlang_p(fields)};
}

// An analyzer name the engine knows (Clouseau's names are among them).
status check_analyzer(const json& name) {
  if (!name.is_string()) return {errc::mango_invalid_index, "Invalid analyzer: " + erlang_w(name)};
  const auto& known = text_analyzers();
  if (std::find(known.begin(), known.end(), name.get<std::string>()) == known.end())
    return {errc::bad_request, name.get<std::string>() + " not a valid analyzer"};
  return {};
}

}  // namespace

result<json> parse_text_index(const json& index) {
  if (!index.is_object())
    return status{errc::mango_invalid_index, "Text indexes must be an object, not: " + erlang_w(index)};
  static const std::set<std::string> known = {"default_analyzer", "default_field", "partial_filter_selector",
                                              "selector",         "fields",        "index_array_lengths"};
  for (auto it = index.begin(); it != index.end(); ++it)
    if (!known.count(it.key()))
      return status{errc::mango_invalid_key, "Invalid key " + it.key() + " for this request."};
  json def = json::object();
  def["default_analyzer"] = index.value("default_analyzer", json("keyword"));
  if (auto st = check_analyzer(def["default_analyzer"]); !st) return st;
  const json df = index.value("default_field", json::object());
  if (!df.is_boolean() && !df.is_object())
    return status{errc::mango_invalid_index, "Invalid default_field: " + erlang_w(df)};
  if (df.is_object()) {
    if (df.contains("enabled") && !df["enabled"].is_boolean())
      return status{errc::mango_invalid_boolean, "Invalid boolean value: " + erlang_w(df["enabled"])};
    if (df.contains("analyzer"))
      if (auto st = check_analyzer(df["analyzer"]); !st) return st;
  }
  def["default_field"] = df;
  for (const char* key : {"partial_filter_selector", "selector"}) {
    const json s = index.value(key, json::object());
    if (!s.is_object())
      return status{errc::mango_invalid_selector, "Selector must be a JSON object, not: " + erlang_w(s)};
    if (auto compiled = mango_selector::compile(s); !compiled) return compiled.error();
    def[key] = normalize_selector(s);
  }
  const json fields = index.value("fields", json::array());
  if (fields == json("all_fields") || (fields.is_array() && fields.empty())) {
    def["fields"] = "all_fields";
  } else {
    if (!fields.is_array()) return fields_error(fields);
    for (const json& f : fields) {
      if (!f.is_object() || f.size() != 2 || !f.contains("name") || !f.contains("type")) return fields_error(fields);
      const json& name = f["name"];
      const json& type = f["type"];
      if (!name.is_string() || name.get<std::string>().empty()) return fields_error(fields);
      if (type != "string" && type != "number" && type != "boolean") return fields_error(fields);
    }
    def["fields"] = fields;
  }
  const json lengths = index.value("index_array_lengths", json(true));
  if (!lengths.is_boolean()) return status{errc::mango_invalid_boolean, "Invalid boolean value: " + erlang_w(lengths)};
  def["index_array_lengths"] = lengths;
  return def;
}

json text_index_entry(const json& def) {
  const std::string deflt = def.value("default_analyzer", json("keyword")).is_string()
                                ? def.value("default_analyzer", std::string("keyword"))
                                : "keyword";
  json analyzer = "keyword";
  if (default_enabled(def))
    analyzer =
        json{{"name", "perfield"}, {"default", deflt}, {"fields", json{{"$default", default_field_analyzer(def)}}}};
  return json{{"index", def}, {"analyzer", analyzer}};
}

json with_text_index(const json& ddoc, const std::string& ddoc_id, const std::string& name, const json& def,
                     bool& changed) {
  json out = ddoc.is_object() ? ddoc : json{{"_id", ddoc_id}, {"language", "query"}};
  const json entry = text_index_entry(def);
  changed = !(out.contains("indexes") && out["indexes"].is_object() && out["indexes"].value(name, json()) == entry);
  if (!out.contains("indexes") || !out["indexes"].is_object()) out["indexes"] = json::object();
  out["indexes"][name] = entry;
  return out;
}

std::vector<std::pair<std::string, json>> text_indexes_of(const json& ddoc) {
  std::vector<std::pair<std::string, json>> out;
  if (!ddoc.is_object() || ddoc.value("language", "") != "query") return out;
  auto all = ddoc.find("indexes");
  if (all == ddoc.end() || !all->is_object()) return out;
  for (auto it = all->begin(); it != all->end(); ++it)
    if (it->is_object() && it->contains("index") && (*it)["index"].is_object())
      if (auto def = parse_text_index((*it)["index"]))  // an invalid one is left out (from_ddoc)
        out.emplace_back(it.key(), std::move(*def));
  return out;
}

json text_index_def_json(const json& def) {
  json out = json::object();
  for (auto it = def.begin(); it != def.end(); ++it) {
    if (it.key() == "fields") {
      json fields = json::array();
      if (it->is_array())
        for (const json& f : *it) fields.push_back(json{{f["name"].get<std::string>(), f["type"]}});
      out["fields"] = std::move(fields);
    } else if (it.key() == "partial_filter_selector" && it->is_object() && it->empty()) {
      continue;
    } else {
      out[it.key()] = *it;
    }
  }
  return out;
}

text_document_fields::text_document_fields(const json& def)
    : lengths_(def.value("index_array_lengths", json(true)) != json(false)),
      keyword_(def.value("default_analyzer", json("keyword")) == json("keyword")),
      with_default_(default_enabled(def)) {
  json filter = def.value("partial_filter_selector", json::object());
  if (filter.is_object() && filter.empty()) filter = def.value("selector", json::object());
  if (filter.is_object() && !filter.empty()) {
    auto s = mango_selector::compile(filter);
    if (s)
      filter_ = std::move(*s);
    else
      refuses_all_ = true;
  }
  const json fields = def.value("fields", json("all_fields"));
  if (fields.is_array())
    for (const json& f : fields)
      wanted_.insert(field_name(split_field(f["name"].get<std::string>()), ":" + f["type"].get<std::string>()));
}

bool text_document_fields::indexed(const json& doc) const {
  if (refuses_all_ || doc.value("_id", std::string()).rfind("_design/", 0) == 0) return false;
  if (!filter_) return true;
  auto m = filter_->matches(doc);
  return m && *m;
}

std::vector<text_field> text_document_fields::operator()(const json& doc) const {
  std::vector<text_field> out;
  if (!indexed(doc)) return out;
  std::set<std::string> names;
  auto add = [&](text_field f) {
    names.insert(f.name);
    out.push_back(std::move(f));
  };
  auto value = [&](const std::vector<std::string>& path, const char* type, const json& v) {
    const std::string name = field_name(path, std::string(":") + type);
    if (!wanted_.empty() && !wanted_.count(name)) return;
    text_field f;
    f.name = name;
    if (v.is_number()) {
      f.type = text_field::kind::number;
      f.number = v.get<double>();
    } else if (v.is_string()) {
      f.type = keyword_ ? text_field::kind::string : text_field::kind::text;
      f.text = v.get<std::string>();
    } else {  // a boolean, and null as true
      f.type = text_field::kind::string;
      f.text = v.is_boolean() && !v.get<bool>() ? "false" : "true";
    }
    add(std::move(f));
  };
  std::vector<std::string> path;
  std::function<void(const json&)> walk = [&](const json& v) {
    if (v.is_object()) {
      for (auto it = v.begin(); it != v.end(); ++it) {
        path.push_back(it.key());
        walk(*it);
        path.pop_back();
      }
    } else if (v.is_array()) {
      path.push_back("[]");
      if (lengths_) {
        text_field f;
        f.type = text_field::kind::number;
        f.name = field_name(path, ":length");
        f.number = static_cast<double>(v.size());
        add(std::move(f));
      }
      for (const json& e : v) walk(e);
      path.pop_back();
    } else if (!path.empty()) {
      value(path, type_of(v), v);
    }
  };
  walk(doc);
  if (with_default_) {
    const size_t n = out.size();
    for (size_t i = 0; i < n; ++i)
      if (out[i].type != text_field::kind::number && out[i].name.size() > 9 &&
          out[i].name.compare(out[i].name.size() - 9, 9, "_3astring") == 0)
        add(text_field{text_field::kind::text, "$default", out[i].text, 0, false, false});
  }
  for (const std::string& name : names)
    out.push_back(text_field{text_field::kind::string, "$fieldnames", name, 0, false, false});
  return out;
}

std::vector<text_field> text_fields_of(const json& def, const json& doc) {
  return text_document_fields(def)(doc);
}

result<std::string> text_query_of(const json& normal) {
  auto t = convert({}, normal);
  if (!t) return t.error();
  return to_query(*t);
}

std::vector<std::string> text_indexable_fields(const json& normal) {
  std::vector<std::string> out;
  if (!normal.is_object() || normal.empty()) return out;
  auto t = convert({}, normal);
  if (!t) return out;
  indexable(*t, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool text_index_usable(const json& def, const json& normal) {
  if (!normal.is_object() || normal.empty()) return false;
  const json fields = def.value("fields", json("all_fields"));
  if (!fields.is_array()) return true;
  std::set<std::string> columns;
  if (default_enabled(def)) columns.insert("$default");
  for (const json& f : fields) columns.insert(f["name"].get<std::string>() + ":" + f["type"].get<std::string>());
  for (const std::string& f : text_indexable_fields(normal))
    if (!columns.count(f)) return false;
  return true;
}

namespace {

// The types the selector's conditions on `field` give it (mango_selector_text:get_sort_types).
void sort_types(const std::string& field, const json& v, std::set<std::string>& types) {
  if (v.is_array()) {
    for (const json& e : v) sort_types(field, e, types);
    return;
  }
  if (!v.is_object() || v.size() != 1) return;
  const std::string& k = v.begin().key();
  const json& a = v.begin().value();
  if (k == field && a.is_object() && a.size() == 1 && a.begin().key().rfind('$', 0) == 0) {
    const json& cond = a.begin().value();
    if (cond.is_string()) types.insert("string");
    if (cond.is_number()) types.insert("number");
    return;
  }
  sort_types(field, a, types);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

result<std::vector<std::string>> text_sort(const std::vector<std::pair<std::string, bool>>& sort, const json& normal) {
  std::vector<std::string> out;
  for (const auto& [given, descending] : sort) {
    std::string key = field_name(split_field(given), "");
    if (!ends_with(key, "_3astring") && !ends_with(key, "_3anumber")) {
      std::set<std::string> types;
      sort_types(given, normal, types);
      if (types.size() != 1)
        return status{
            errc::mango_text_sort,
            "Unspecified or ambiguous sort type. Try appending :number or :string to the sort field. " + given};
      key += "_3a" + *types.begin();
    }
    out.push_back((descending ? "-" : "") + key);
  }
  return out;
}

}  // namespace settee
