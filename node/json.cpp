#include "node/json.hpp"

#include "node/check.hpp"

#include <simdjson.h>

#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace settee {

namespace {

std::atomic<size_t> max_depth_{default_max_json_depth};

// Objects up to this size are searched for a repeated key linearly; larger ones get a hash index.
constexpr size_t index_from = 16;

// A SAX handler that builds the document (nlohmann's own DOM builder, but with a depth limit and
// a hash index for the keys of large objects).
class dom_builder {
 public:
  explicit dom_builder(size_t max_depth) : max_depth_(max_depth) {}

  bool null() { return put(json(nullptr)); }
  bool boolean(bool v) { return put(json(v)); }
  bool number_integer(json::number_integer_t v) { return put(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return put(json(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return put(json(v)); }
  bool string(std::string& v) { return put(json(std::move(v))); }
  bool binary(json::binary_t& v) { return put(json(std::move(v))); }
  // `n`: the members or elements that follow (simdjson's DOM knows them; nlohmann's lexer says -1).
  bool start_object(size_t n) {
    json v = json::object();
    if (n != unknown_size) v.get_ref<json::object_t&>().reserve(n);
    return open(std::move(v));
  }
  bool start_array(size_t n) {
    json v = json::array();
    if (n != unknown_size) v.get_ref<json::array_t&>().reserve(n);
    return open(std::move(v));
  }
  bool key(std::string& k) {
    key_ = std::move(k);
    return true;
  }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

  json root;
  bool too_deep = false;

 private:
  struct frame {
    json* value;
    std::unique_ptr<std::unordered_map<std::string, size_t>> index;  // key -> position, large objects only
  };

  // Adds `v` to the innermost open container (or makes it the root); returns where it is now.
  json* insert(json&& v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    frame& top = stack_.back();
    if (top.value->is_array()) {
      auto& arr = top.value->get_ref<json::array_t&>();
      arr.push_back(std::move(v));
      return &arr.back();
    }
    auto& obj = top.value->get_ref<json::object_t&>();
    if (!top.index && obj.size() >= index_from) {
      top.index = std::make_unique<std::unordered_map<std::string, size_t>>();
      for (size_t i = 0; i < obj.size(); ++i) (*top.index)[(obj.begin() + i)->first] = i;
    }
    if (top.index) {
      auto [it, fresh] = top.index->emplace(key_, obj.size());
      if (!fresh) return &((obj.begin() + it->second)->second = std::move(v));
    } else {
      for (auto& member : obj)
        if (member.first == key_) return &(member.second = std::move(v));
    }
    // json_members is a vector of members underneath: append without its linear key search.
    obj.std::vector<json::object_t::value_type>::emplace_back(std::move(key_), std::move(v));
    return &obj.back().second;
  }

  bool put(json&& v) {
    insert(std::move(v));
    return true;
  }
  bool open(json&& v) {
    if (stack_.size() >= max_depth_) {
      too_deep = true;
      return false;
    }
    json* at = insert(std::move(v));
    stack_.push_back({at, nullptr});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  static constexpr size_t unknown_size = static_cast<size_t>(-1);
  size_t max_depth_;
  std::string key_;
  std::vector<frame> stack_;
};

// simdjson's DOM, fed to a dom_builder as nlohmann's SAX events, without recursion: the builder
// keeps the key order, the last of a repeated key, and the depth limit. nlohmann's types are kept:
// an integer without a sign is unsigned, as its lexer makes it.
bool feed(simdjson::dom::element root, dom_builder& b) {
  using simdjson::dom::element_type;
  struct level {
    bool object;
    simdjson::dom::array::iterator ai, ae;
    simdjson::dom::object::iterator oi, oe;
  };
  static const std::string no_text;
  std::vector<level> stack;
  auto value = [&](simdjson::dom::element e) {
    switch (e.type()) {
      case element_type::ARRAY: {
        auto a = simdjson::dom::array(e);
        stack.push_back({false, a.begin(), a.end(), {}, {}});
        return b.start_array(a.size());
      }
      case element_type::OBJECT: {
        auto o = simdjson::dom::object(e);
        stack.push_back({true, {}, {}, o.begin(), o.end()});
        return b.start_object(o.size());
      }
      case element_type::INT64: {
        int64_t v = int64_t(e);
        return v >= 0 ? b.number_unsigned(static_cast<uint64_t>(v)) : b.number_integer(v);
      }
      case element_type::UINT64:
        return b.number_unsigned(uint64_t(e));
      case element_type::DOUBLE:
        return b.number_float(double(e), no_text);
      case element_type::STRING: {
        std::string v{std::string_view(e)};
        return b.string(v);
      }
      case element_type::BOOL:
        return b.boolean(bool(e));
      case element_type::NULL_VALUE:
        return b.null();
    }
    return false;
  };
  if (!value(root)) return false;
  while (!stack.empty()) {
    level& top = stack.back();
    if (top.object ? top.oi == top.oe : top.ai == top.ae) {
      bool object = top.object;
      stack.pop_back();
      object ? b.end_object() : b.end_array();
      continue;
    }
    simdjson::dom::element next;
    if (top.object) {
      simdjson::dom::key_value_pair kv = *top.oi;
      ++top.oi;
      std::string k(kv.key);
      b.key(k);
      next = kv.value;
    } else {
      next = *top.ai;
      ++top.ai;
    }
    if (!value(next)) return false;  // may grow `stack`: `top` is not used after
  }
  return true;
}

// simdjson parsers kept between calls. A parser keeps buffers of ~14 bytes per byte of the largest
// text it parsed: a few that parsed at most 1 MiB are kept (any thread takes one), the rest freed,
// so the memory kept does not grow with the number of threads that parse.
std::mutex parsers_mu;
std::vector<std::unique_ptr<simdjson::dom::parser>> idle_parsers;
constexpr size_t kept_parsers = 4;
constexpr size_t kept_capacity = 1 << 20;

std::unique_ptr<simdjson::dom::parser> take_parser() {
  {
    std::lock_guard<std::mutex> lock(parsers_mu);
    if (!idle_parsers.empty()) {
      auto p = std::move(idle_parsers.back());
      idle_parsers.pop_back();
      return p;
    }
  }
  return std::make_unique<simdjson::dom::parser>();
}

void give_parser(std::unique_ptr<simdjson::dom::parser> p) {
  if (p->capacity() > kept_capacity) return;
  std::lock_guard<std::mutex> lock(parsers_mu);
  if (idle_parsers.size() < kept_parsers) idle_parsers.push_back(std::move(p));
}

// Parses `text` with a kept simdjson parser and calls `use(root)` while the parse lives; false
// when simdjson refuses the text (or `use` gives up).
template <class F>
bool with_simdjson(std::string_view text, size_t max_depth, F&& use) {
  auto p = take_parser();
  if (p->max_depth() < max_depth + 1 && p->allocate(std::max(p->capacity(), text.size()), max_depth + 1)) {
    return false;
  }
  auto parsed = p->parse(text.data(), text.size(), /*realloc_if_needed=*/true);
  const bool ok = !parsed.error() && use(parsed.value_unsafe());
  give_parser(std::move(p));
  return ok;
}

// The fast path: simdjson validates and splits the text at gigabytes a second (nlohmann's lexer
// reads a character at a time: a third of a _bulk_docs request's CPU). std::nullopt for anything
// it refuses, which then goes through nlohmann's parser for the answer and the reason: simdjson
// refuses some text nlohmann takes (an integer beyond 64 bits, which nlohmann makes a double).
std::optional<json> parse_fast(std::string_view text, size_t max_depth) {
  std::optional<json> out;
  with_simdjson(text, max_depth, [&](simdjson::dom::element root) {
    dom_builder b(max_depth);
    if (!feed(root, b)) return false;
    out = std::move(b.root);
    return true;
  });
  return out;
}

}  // namespace

void set_max_json_depth(size_t depth) {
  max_depth_ = depth == 0 ? default_max_json_depth : depth;
}

size_t max_json_depth() {
  return max_depth_;
}

const json& member(const json& j, const char* key) {
  static const json null_value;
  if (!j.is_object()) return null_value;
  auto it = j.find(key);
  return it == j.end() ? null_value : *it;
}

bool within_json_depth(std::string_view text) {
  size_t depth = 0, limit = max_depth_;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

std::optional<json> parse_json(std::string_view text, std::string* why) {
  return parse_json(text, max_depth_, why);
}

std::optional<json> parse_json(std::string_view text, size_t max_depth, std::string* why) {
  if (auto fast = parse_fast(text, max_depth)) return fast;
  dom_builder b(max_depth);
  bool ok = json::sax_parse(text.begin(), text.end(), &b, nlohmann::detail::input_format_t::json, /*strict=*/true);
  if (ok) return std::move(b.root);
  if (why) {
    *why = b.too_deep ? "JSON nests deeper than " + std::to_string(max_depth) + " levels ([couchdb] max_json_depth)"
                      : std::string();
  }
  return std::nullopt;
}

void append_quoted(std::string& out, std::string_view s) {
  static const char hex[] = "0123456789abcdef";
  out.reserve(out.size() + s.size() + 2);
  out.push_back('"');
  size_t plain = 0;  // the start of the current run of characters written as they are
  for (size_t i = 0; i < s.size(); ++i) {
    // Eight characters at a time while none of them needs an escape (SWAR: a byte below 0x20, a
    // quote or a backslash sets its high bit in `special`).
    while (i + 8 <= s.size()) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      constexpr uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
      uint64_t quote = w ^ (ones * '"'), backslash = w ^ (ones * '\\');
      uint64_t special = ((w - ones * 0x20) | (quote - ones) | (backslash - ones)) & ~w & highs;
      if (special) break;
      i += 8;
    }
    if (i >= s.size()) break;
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + plain, i - plain);
    plain = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        out += "\\u00";
        out.push_back(hex[c >> 4]);
        out.push_back(hex[c & 15]);
    }
  }
  out.append(s.data() + plain, s.size() - plain);
  out.push_back('"');
}

std::string quote(std::string_view s) {
  std::string out;
  append_quoted(out, s);
  return out;
}

namespace {

// A float as Erlang's float_to_binary(F, [short]) writes it (erts/emulator/ryu/to_chars.h): the
// shortest digits that read back to the same double, in fixed notation when the exponent is within
// Erlang's bounds, else scientific; always a fraction ("100.0", "1.0e3") and a bare exponent.
void append_float(std::string& out, double v) {
  if (v == 0) {
    out += std::signbit(v) ? "-0.0" : "0.0";
    return;
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);  // shortest digits
  std::string_view text(buf, static_cast<size_t>(r.ptr - buf));
  if (text.front() == '-') {
    out += '-';
    text.remove_prefix(1);
  }
  size_t e = text.find('e');
  std::string digits;
  for (char ch : text.substr(0, e))
    if (ch != '.') digits += ch;
  const int32_t sci_exp = std::atoi(std::string(text.substr(e + 1)).c_str());
  const int32_t olength = static_cast<int32_t>(digits.size());
  const int32_t exp = sci_exp - (olength - 1);  // value = digits x 10^exp
  int32_t lower = -(olength + 2), upper = sci_exp >= 10 ? 2 : 1;
  if (olength == 1) lower = -4, upper = 2;
  const uint64_t mantissa = std::stoull(digits);
  bool fixed = lower <= exp && exp <= upper &&
               !((mantissa >= (1ull << 53) && exp == 0) || (mantissa > (1ull << 52) / 5 && exp == 1) ||
                 (mantissa > (1ull << 51) / 25 && exp == 2));
  if (fixed) {
    const int32_t whole = olength + exp;
    if (exp >= 0) {
      out += digits;
      out.append(static_cast<size_t>(exp), '0');
      out += ".0";
    } else if (whole > 0) {
      out.append(digits, 0, static_cast<size_t>(whole));
      out += '.';
      out.append(digits, static_cast<size_t>(whole), std::string::npos);
    } else {
      out += "0.";
      out.append(static_cast<size_t>(-whole), '0');
      out += digits;
    }
    return;
  }
  out += digits[0];
  out += '.';
  out += olength > 1 ? digits.substr(1) : "0";
  out += 'e';
  out += std::to_string(sci_exp);
}

void append_couch(std::string& out, const json& j) {
  using t = json::value_t;
  switch (j.type()) {
    case t::object: {
      out += '{';
      bool first = true;
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (!first) out += ',';
        first = false;
        append_quoted(out, it.key());
        out += ':';
        append_couch(out, it.value());
      }
      out += '}';
      return;
    }
    case t::array: {
      out += '[';
      bool first = true;
      for (const json& e : j) {
        if (!first) out += ',';
        first = false;
        append_couch(out, e);
      }
      out += ']';
      return;
    }
    case t::string:
      return append_quoted(out, j.get_ref<const std::string&>());
    case t::boolean:
      out += j.get<bool>() ? "true" : "false";
      return;
    case t::number_integer:
      out += std::to_string(j.get<int64_t>());
      return;
    case t::number_unsigned:
      out += std::to_string(j.get<uint64_t>());
      return;
    case t::number_float:
      return append_float(out, j.get<double>());
    default:  // null (binary and discarded never come from parsing)
      out += "null";
      return;
  }
}

}  // namespace

std::string couch_dump(const json& j) {
  std::string out;
  append_couch(out, j);
  return out;
}

// Documents taken apart as they are parsed (parse_docs_body, parse_split_doc).
namespace {

using simdjson::dom::element_type;

// `e` as parse_json makes it, nesting at most `depth` levels (nullopt: deeper).
std::optional<json> to_json(simdjson::dom::element e, size_t depth) {
  dom_builder b(depth);
  if (!feed(e, b)) return std::nullopt;
  return std::move(b.root);
}

// Whether no two members of `o` share a name (parse_json keeps the last value of a repeated one,
// at the first one's place: a body written member by member would differ).
bool unique_keys(simdjson::dom::object o) {
  constexpr size_t small = 16;
  std::string_view seen[small];
  size_t n = 0;
  std::unique_ptr<std::unordered_map<std::string_view, bool>> many;
  for (auto kv : o) {
    if (many) {
      if (!many->emplace(kv.key, true).second) return false;
      continue;
    }
    for (size_t i = 0; i < n; ++i)
      if (seen[i] == kv.key) return false;
    if (n < small) {
      seen[n++] = kv.key;
      continue;
    }
    many = std::make_unique<std::unordered_map<std::string_view, bool>>();
    for (size_t i = 0; i < n; ++i) many->emplace(seen[i], true);
    many->emplace(kv.key, true);
  }
  return true;
}

template <class T>
void append_integer(std::string& out, T v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<size_t>(r.ptr - buf));
}

// Appends couch_dump() of what parse_json makes of `e`, nesting at most `depth` levels; false at an
// object with a repeated name, or deeper (then `too_deep`).
bool append_couch(std::string& out, simdjson::dom::element e, size_t depth, bool& too_deep) {
  switch (e.type()) {
    case element_type::OBJECT: {
      if (depth == 0) return !(too_deep = true);
      auto o = simdjson::dom::object(e);
      if (!unique_keys(o)) return false;
      out += '{';
      bool first = true;
      for (auto kv : o) {
        if (!first) out += ',';
        first = false;
        append_quoted(out, kv.key);
        out += ':';
        if (!append_couch(out, kv.value, depth - 1, too_deep)) return false;
      }
      out += '}';
      return true;
    }
    case element_type::ARRAY: {
      if (depth == 0) return !(too_deep = true);
      out += '[';
      bool first = true;
      for (simdjson::dom::element v : simdjson::dom::array(e)) {
        if (!first) out += ',';
        first = false;
        if (!append_couch(out, v, depth - 1, too_deep)) return false;
      }
      out += ']';
      return true;
    }
    case element_type::INT64:  // parse_json makes the ones >= 0 unsigned: the same digits
      append_integer(out, int64_t(e));
      return true;
    case element_type::UINT64:
      append_integer(out, uint64_t(e));
      return true;
    case element_type::DOUBLE:
      append_float(out, double(e));
      return true;
    case element_type::STRING:
      append_quoted(out, std::string_view(e));
      return true;
    case element_type::BOOL:
      out += bool(e) ? "true" : "false";
      return true;
    case element_type::NULL_VALUE:
      out += "null";
      return true;
  }
  return false;
}

// Appends the member (known to be new: its object's names are unique) without nlohmann's search.
void append_member(json& object, std::string_view name, json value) {
  object.get_ref<json::object_t&>().std::vector<json::object_t::value_type>::emplace_back(std::string(name),
                                                                                          std::move(value));
}

// `e` split by `pick`, nesting at most `depth` levels (nullopt: deeper); `scratch` is where bodies
// are written first (one allocation of the right size a document, not one per doubling).
std::optional<split_doc> split_element(simdjson::dom::element e, member_picker pick, size_t depth,
                                       std::string& scratch) {
  if (e.type() == element_type::OBJECT && depth > 0 && unique_keys(simdjson::dom::object(e))) {
    json doc = json::object();
    scratch.assign(1, '{');
    bool ok = true, too_deep = false;
    for (auto kv : simdjson::dom::object(e)) {
      const member_use use = pick(kv.key);
      if (use == member_use::whole) {
        ok = false;
        break;
      }
      if (use == member_use::doc) {
        auto value = to_json(kv.value, depth - 1);
        if (!value) return std::nullopt;
        append_member(doc, kv.key, std::move(*value));
        continue;
      }
      if (scratch.size() > 1) scratch += ',';
      append_quoted(scratch, kv.key);
      scratch += ':';
      if (!(ok = append_couch(scratch, kv.value, depth - 1, too_deep))) break;
    }
    if (too_deep) return std::nullopt;
    if (ok) {
      scratch += '}';
      return split_doc{std::move(doc), scratch};
    }
  }
  auto whole = to_json(e, depth);
  if (!whole) return std::nullopt;
  return split_doc{std::move(*whole), std::nullopt};
}

}  // namespace

json rejoin(split_doc d) {
  if (!d.body) return std::move(d.doc);
  std::optional<json> whole = parse_json(*d.body, max_json_depth() + 8, nullptr);
  SETTEE_CHECK(whole && whole->is_object());  // text couch_dump wrote, within the depth it was parsed at
  // Names apart from the body's (each member went one way), unique (split only such objects): appended.
  for (auto& [name, value] : d.doc.items()) append_member(*whole, name, std::move(value));
  return std::move(*whole);
}

std::optional<docs_body> parse_docs_body(std::string_view text, std::string_view array, member_picker pick,
                                         size_t max_depth, std::string* why) {
  docs_body out;
  std::string scratch;
  // A request of a few members around its documents (a large one goes the general way: its
  // members are looked up by name as they are added).
  constexpr size_t max_top_members = 64;
  const bool split = with_simdjson(text, max_depth, [&](simdjson::dom::element root) {
    if (root.type() != element_type::OBJECT) return false;
    auto top = simdjson::dom::object(root);
    if (top.size() > max_top_members || !unique_keys(top)) return false;
    if (max_depth < 2) return false;
    out.top = json::object();
    for (auto kv : top) {
      if (kv.key != array || kv.value.type() != element_type::ARRAY) {
        auto value = to_json(kv.value, max_depth - 1);
        if (!value) return false;
        append_member(out.top, kv.key, std::move(*value));
        continue;
      }
      out.listed = true;
      auto docs = simdjson::dom::array(kv.value);
      out.docs.reserve(docs.size());
      for (simdjson::dom::element d : docs) {
        auto split = split_element(d, pick, max_depth - 2, scratch);
        if (!split) return false;
        out.docs.push_back(std::move(*split));
      }
    }
    return true;
  });
  if (split) return out;
  out = docs_body{};
  auto j = parse_json(text, max_depth, why);
  if (!j) return std::nullopt;
  out.top = std::move(*j);
  if (!out.top.is_object()) return out;
  auto it = out.top.find(std::string(array));
  if (it == out.top.end() || !it->is_array()) return out;
  out.listed = true;
  for (json& d : *it) out.docs.push_back({std::move(d), std::nullopt});
  out.top.erase(it);
  return out;
}

std::optional<split_doc> parse_split_doc(std::string_view text, member_picker pick, size_t max_depth,
                                         std::string* why) {
  std::optional<split_doc> out;
  std::string scratch;
  with_simdjson(text, max_depth, [&](simdjson::dom::element root) {
    out = split_element(root, pick, max_depth, scratch);
    return out.has_value();
  });
  if (out) return out;
  auto j = parse_json(text, max_depth, why);
  if (!j) return std::nullopt;
  return split_doc{std::move(*j), std::nullopt};
}

}  // namespace settee
