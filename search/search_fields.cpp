#include "search/search_fields.hpp"

namespace settee {

namespace {

status thrown(const std::string& name, const std::string& message) {
  return {errc::bad_request, name + ": " + message};
}

// JavaScript's typeof of a JSON value (what the worker wrote: undefined became null).
std::string type_of(const json& v) {
  if (v.is_string()) return "string";
  if (v.is_number()) return "number";
  if (v.is_boolean()) return "boolean";
  return "object";
}

bool yes(const json& v) {
  return v == json(true) || v == json("yes") || v == json("YES") || v == json("true");
}

// Nouveau's index(type, name, value, options).
result<text_field> nouveau_field(const json& args) {
  const json type = args.size() > 0 ? args[0] : json(), name = args.size() > 1 ? args[1] : json();
  const json value = args.size() > 2 ? args[2] : json(), options = args.size() > 3 ? args[3] : json();
  if (!type.is_string()) return thrown("TypeError", "type of type must be a string not " + type_of(type));
  if (!name.is_string()) return thrown("TypeError", "type of name must be a string not " + type_of(name));
  text_field f;
  f.name = name.get<std::string>();
  if (!f.name.empty() && f.name[0] == '_') return thrown("ReservedName", "name must not start with an underscore");
  const std::string t = type.get<std::string>();
  f.store = options.is_object() && yes(options.value("store", json(false)));
  if (t == "double" || t == "string" || t == "text") {
    const bool number = t == "double";
    if (number ? !value.is_number() : !value.is_string())
      return thrown("TypeError",
                    "type of value must be a " + std::string(number ? "number" : "string") + " not " + type_of(value));
    f.type = t == "double"   ? text_field::kind::number
             : t == "string" ? text_field::kind::string
                             : text_field::kind::text;
    if (number)
      f.number = value.get<double>();
    else
      f.text = value.get<std::string>();
    return f;
  }
  if (t == "stored") {
    if (!value.is_number() && !value.is_string())
      return thrown("TypeError", "type of " + value.dump() + " must be a string or number");
    f.type = text_field::kind::stored;
    f.store = true;
    f.is_number = value.is_number();
    if (f.is_number)
      f.number = value.get<double>();
    else
      f.text = value.get<std::string>();
    return f;
  }
  return thrown("TypeError", t + " not supported");
}

// Clouseau's index(name, value, options): a string analyzed (options.index "not_analyzed": one
// term; false or "no": not searchable), a number as a number, a boolean as the string
// "true"/"false"; options.store keeps it for the hits.
result<text_field> clouseau_field(const json& args) {
  const json name = args.size() > 0 ? args[0] : json(), value = args.size() > 1 ? args[1] : json();
  const json options = args.size() > 2 ? args[2] : json::object();
  if (!name.is_string()) return thrown("TypeError", "name must be a string not " + type_of(name));
  text_field f;
  f.name = name.get<std::string>();
  if (!f.name.empty() && f.name[0] == '_') return thrown("ReservedName", "name must not start with an underscore");
  if (!value.is_string() && !value.is_number() && !value.is_boolean())
    return thrown("TypeError", "value must be a string, a number or boolean not " + type_of(value));
  if (!options.is_object() && !options.is_null())
    return thrown("TypeError", "options must be an object not " + type_of(options));
  const json index = options.is_object() ? options.value("index", json(true)) : json(true);
  f.store = options.is_object() && yes(options.value("store", json(false)));
  if (value.is_number()) {
    f.type = text_field::kind::number;
    f.number = value.get<double>();
  } else if (value.is_boolean()) {
    f.type = text_field::kind::string;
    f.text = value.get<bool>() ? "true" : "false";
  } else {
    f.text = value.get<std::string>();
    const std::string how = index.is_string() ? index.get<std::string>() : "";
    f.type = how.rfind("not_analyzed", 0) == 0 ? text_field::kind::string : text_field::kind::text;
  }
  if (index == json(false) || index == json("no") || index == json("NO")) {
    if (!f.store) return text_field{text_field::kind::stored, f.name, "", 0, false, false};  // dropped below
    f.type = text_field::kind::stored;
    f.is_number = value.is_number();
  }
  return f;
}

}  // namespace

result<std::vector<text_field>> fields_of(search_api api, const json& calls) {
  std::vector<text_field> out;
  if (!calls.is_array()) return out;
  for (const json& args : calls) {
    if (!args.is_array()) continue;
    auto f = api == search_api::nouveau ? nouveau_field(args) : clouseau_field(args);
    if (!f) return f.error();
    if (f->type == text_field::kind::stored && !f->store) continue;  // neither searched nor kept
    out.push_back(std::move(*f));
  }
  return out;
}

}  // namespace settee
