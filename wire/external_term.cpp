#include "wire/external_term.hpp"

#include <algorithm>
#include <cstring>

namespace settee {
namespace {

// Tags of the external term format (erts/emulator/beam/external.h).
enum tag : unsigned char {
  new_float_ext = 70,
  atom_ext = 100,
  small_integer_ext = 97,
  integer_ext = 98,
  small_tuple_ext = 104,
  large_tuple_ext = 105,
  nil_ext = 106,
  string_ext = 107,
  list_ext = 108,
  binary_ext = 109,
  small_big_ext = 110,
};

void put_u16(std::string& out, size_t n) {
  out += static_cast<char>((n >> 8) & 0xff);
  out += static_cast<char>(n & 0xff);
}

void put_u32(std::string& out, uint64_t n) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((n >> shift) & 0xff);
}

void encode_integer(std::string& out, int64_t n) {
  if (n >= 0 && n <= 255) {
    out += static_cast<char>(small_integer_ext);
    out += static_cast<char>(n);
  } else if (n >= INT32_MIN && n <= INT32_MAX) {
    out += static_cast<char>(integer_ext);
    put_u32(out, static_cast<uint32_t>(static_cast<int32_t>(n)));
  } else {  // a bignum: sign byte, then the magnitude's bytes, least significant first
    uint64_t mag = n < 0 ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
    std::string digits;
    for (; mag; mag >>= 8) digits += static_cast<char>(mag & 0xff);
    out += static_cast<char>(small_big_ext);
    out += static_cast<char>(digits.size());
    out += static_cast<char>(n < 0 ? 1 : 0);
    out += digits;
  }
}

// A list of bytes: STRING_EXT up to 65535 of them, as term_to_binary writes any such list.
void encode_string(std::string& out, const std::string& text) {
  if (text.empty()) {
    out += static_cast<char>(nil_ext);
  } else if (text.size() <= 0xffff) {
    out += static_cast<char>(string_ext);
    put_u16(out, text.size());
    out += text;
  } else {
    out += static_cast<char>(list_ext);
    put_u32(out, text.size());
    for (unsigned char c : text) {
      out += static_cast<char>(small_integer_ext);
      out += static_cast<char>(c);
    }
    out += static_cast<char>(nil_ext);
  }
}

void encode(std::string& out, const eterm& t) {
  switch (t.k) {
    case eterm::kind::atom:
      // term_to_binary(T, [{minor_version, 1}]) (couch_db.hrl's ?term_to_bin) writes a latin-1 atom
      // as ATOM_EXT on every OTP release; ours are ASCII.
      out += static_cast<char>(atom_ext);
      put_u16(out, t.text.size());
      out += t.text;
      return;
    case eterm::kind::binary:
      out += static_cast<char>(binary_ext);
      put_u32(out, t.text.size());
      out += t.text;
      return;
    case eterm::kind::integer:
      return encode_integer(out, t.number);
    case eterm::kind::floating: {
      out += static_cast<char>(new_float_ext);
      uint64_t bits;
      std::memcpy(&bits, &t.real, sizeof bits);
      put_u32(out, bits >> 32);
      put_u32(out, bits & 0xffffffffu);
      return;
    }
    case eterm::kind::string:
      return encode_string(out, t.text);
    case eterm::kind::list:
      // A list of small integers only is a string to term_to_binary ([1,2] as STRING_EXT).
      if (!t.items.empty() && t.items.size() <= 0xffff &&
          std::all_of(t.items.begin(), t.items.end(),
                      [](const eterm& e) { return e.k == eterm::kind::integer && e.number >= 0 && e.number <= 255; })) {
        out += static_cast<char>(string_ext);
        put_u16(out, t.items.size());
        for (const eterm& e : t.items) out += static_cast<char>(e.number);
        return;
      }
      if (!t.items.empty()) {
        out += static_cast<char>(list_ext);
        put_u32(out, t.items.size());
        for (const eterm& e : t.items) encode(out, e);
      }
      out += static_cast<char>(nil_ext);
      return;
    case eterm::kind::tuple:
      if (t.items.size() < 256) {
        out += static_cast<char>(small_tuple_ext);
        out += static_cast<char>(t.items.size());
      } else {
        out += static_cast<char>(large_tuple_ext);
        put_u32(out, t.items.size());
      }
      for (const eterm& e : t.items) encode(out, e);
      return;
  }
}

}  // namespace

eterm ejson(const json& v) {
  switch (v.type()) {
    case json::value_t::object: {
      std::vector<eterm> props;
      for (auto& [k, x] : v.items()) props.push_back(eterm::tuple({eterm::binary(k), ejson(x)}));
      return eterm::tuple({eterm::list(std::move(props))});
    }
    case json::value_t::array: {
      std::vector<eterm> items;
      for (const json& x : v) items.push_back(ejson(x));
      return eterm::list(std::move(items));
    }
    case json::value_t::string:
      return eterm::binary(v.get<std::string>());
    case json::value_t::boolean:
      return eterm::atom(v.get<bool>() ? "true" : "false");
    case json::value_t::number_integer:
      return eterm::integer(v.get<int64_t>());
    case json::value_t::number_unsigned:
      return eterm::integer(static_cast<int64_t>(v.get<uint64_t>()));
    case json::value_t::number_float:
      return eterm::floating(v.get<double>());
    default:
      return eterm::atom("null");
  }
}

std::string term_to_binary(const eterm& t) {
  std::string out(1, static_cast<char>(131));
  encode(out, t);
  return out;
}

}  // namespace settee
