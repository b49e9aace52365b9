#include "wire/json_util.hpp"

namespace settee {

namespace {

// `parsed`, or `refusal` with the parser's reason when it gave one (the nesting limit).
template <class T>
result<T> client_parse(std::optional<T> parsed, status refusal, const std::string& why) {
  if (parsed) return std::move(*parsed);
  if (!why.empty()) refusal.reason = why;
  return refusal;
}

}  // namespace

result<json> parse_client_json(std::string_view text, status refusal, size_t wrapping) {
  std::string why;
  auto j = parse_json(text, max_json_depth() + wrapping, &why);
  return client_parse(std::move(j), std::move(refusal), why);
}

result<split_doc> parse_client_doc(std::string_view text, member_picker pick, status refusal) {
  std::string why;
  auto d = parse_split_doc(text, pick, max_json_depth(), &why);
  return client_parse(std::move(d), std::move(refusal), why);
}

result<docs_body> parse_client_docs(std::string_view text, std::string_view array, member_picker pick, status refusal,
                                    size_t wrapping) {
  std::string why;
  auto b = parse_docs_body(text, array, pick, max_json_depth() + wrapping, &why);
  return client_parse(std::move(b), std::move(refusal), why);
}

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    size_t n;  // continuation bytes
    if (c < 0x80)
      n = 0;
    else if (c >= 0xc2 && c <= 0xdf)
      n = 1;
    else if (c >= 0xe0 && c <= 0xef)
      n = 2;
    else if (c >= 0xf0 && c <= 0xf4)
      n = 3;
    else
      return false;
    if (i + n >= s.size() + (n == 0 ? 1 : 0)) return false;
    for (size_t k = 1; k <= n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    i += n + 1;
  }
  return true;
}

void add_error(json& obj, const status& st) {
  obj["error"] = error_name_of(st.code);
  obj["reason"] = st.reason;
}

json error_json(const status& st) {
  json out = json::object();
  add_error(out, st);
  return out;
}

namespace {

void erlang_binary(std::string& out, const std::string& s, bool as_text) {
  out += "<<";
  if (as_text) {
    out += '"';
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  } else {
    for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(static_cast<unsigned char>(s[i]));
  }
  out += ">>";
}

void erlang_print(std::string& out, const json& v, bool as_text) {
  if (v.is_string()) {
    erlang_binary(out, v.get_ref<const std::string&>(), as_text);
  } else if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ',';
      erlang_print(out, v[i], as_text);
    }
    out += ']';
  } else if (v.is_object()) {
    out += "{[";
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      out += first ? "{" : ",{";
      first = false;
      erlang_binary(out, it.key(), as_text);
      out += ',';
      erlang_print(out, it.value(), as_text);
      out += '}';
    }
    out += "]}";
  } else {
    out += v.dump();  // null, true, false and numbers print alike
  }
}

}  // namespace

std::string erlang_w(const json& v) {
  std::string out;
  erlang_print(out, v, false);
  return out;
}

std::string erlang_p(const json& v) {
  std::string out;
  erlang_print(out, v, true);
  return out;
}

}  // namespace settee
