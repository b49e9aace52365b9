#include "node/collation.hpp"

#include <unicode/ucol.h>
#include <unicode/ustring.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace settee::collation {
namespace {

// Type tags, in the collation's order; 0x00 ends an array or an object (before any element).
enum : char {
  end_of_list = 0x00,
  tag_null = 0x10,
  tag_false = 0x20,
  tag_true = 0x30,
  tag_number = 0x40,
  tag_string = 0x50,
  tag_array = 0x60,
  tag_object = 0x70,
};

__extension__ typedef __int128 int128;  // every int64 and uint64, and their differences

const UCollator* root_collator() {
  static const UCollator* collator = [] {
    UErrorCode status = U_ZERO_ERROR;
    UCollator* c = ucol_open("", &status);  // root, default attributes: CouchDB's
    return U_SUCCESS(status) ? c : nullptr;
  }();
  return collator;
}

void put_u64(std::string& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

// A double as 8 bytes that memcmp in numeric order: the sign bit flipped for positives, every bit
// for negatives. -0.0 is 0.0 (CouchDB holds them equal).
void put_double(std::string& out, double d) {
  if (d == 0) d = 0;
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  bits = (bits & (uint64_t{1} << 63)) ? ~bits : bits | (uint64_t{1} << 63);
  put_u64(out, bits);
}

// An integer: the greatest double not above it, then what remains (0 <= r < its ulp). A double
// is followed by 0x00, an integer no double holds by 0x01 and r: 2^53 + 1 sorts after 2^53 and
// before the next double, and 1 and 1.0 get the same key.
void put_integer(std::string& out, int128 v) {
  double d = static_cast<double>(v);
  if (static_cast<int128>(d) > v) d = std::nextafter(d, -INFINITY);
  const int128 rest = v - static_cast<int128>(d);
  put_double(out, d);
  if (rest == 0) {
    out.push_back(0x00);
  } else {
    out.push_back(0x01);
    put_u64(out, static_cast<uint64_t>(rest));
  }
}

void put_string(std::string& out, const std::string& s) {
  out.push_back(tag_string);
  std::vector<UChar> text(s.size() + 1);
  int32_t length = 0;
  UErrorCode status = U_ZERO_ERROR;
  u_strFromUTF8WithSub(text.data(), static_cast<int32_t>(text.size()), &length, s.data(),
                       static_cast<int32_t>(s.size()), 0xFFFD, nullptr, &status);
  const UCollator* c = root_collator();
  if (U_FAILURE(status) || !c) {  // cannot happen for a buffer this size; bytes keep an order
    out += s;
    out.push_back(0x00);
    return;
  }
  // The sort key ends with its own 0x00 and holds no other: it is its own terminator.
  std::vector<uint8_t> key(3 * static_cast<size_t>(length) + 16);
  int32_t n = ucol_getSortKey(c, text.data(), length, key.data(), static_cast<int32_t>(key.size()));
  if (n > static_cast<int32_t>(key.size())) {
    key.resize(static_cast<size_t>(n));
    n = ucol_getSortKey(c, text.data(), length, key.data(), n);
  }
  out.append(reinterpret_cast<const char*>(key.data()), static_cast<size_t>(n));
}

void put(std::string& out, const json& v) {
  switch (v.type()) {
    case json::value_t::null:
    case json::value_t::discarded:
      out.push_back(tag_null);
      return;
    case json::value_t::boolean:
      out.push_back(v.get<bool>() ? tag_true : tag_false);
      return;
    case json::value_t::number_integer:
      out.push_back(tag_number);
      return put_integer(out, v.get<int64_t>());
    case json::value_t::number_unsigned:
      out.push_back(tag_number);
      return put_integer(out, v.get<uint64_t>());
    case json::value_t::number_float:
      out.push_back(tag_number);
      put_double(out, v.get<double>());
      out.push_back(0x00);
      return;
    case json::value_t::string:
      return put_string(out, v.get_ref<const std::string&>());
    case json::value_t::array:
    case json::value_t::binary:
      out.push_back(tag_array);
      for (const auto& e : v) put(out, e);
      out.push_back(end_of_list);
      return;
    case json::value_t::object:
      out.push_back(tag_object);
      for (const auto& [k, e] : v.items()) {
        put_string(out, k);
        put(out, e);
      }
      out.push_back(end_of_list);
      return;
  }
}

}  // namespace

std::string sort_key(const json& v) {
  std::string out;
  put(out, v);
  return out;
}

int compare(const json& a, const json& b) {
  const int c = sort_key(a).compare(sort_key(b));
  return c < 0 ? -1 : c > 0 ? 1 : 0;
}

size_t value_length(std::string_view key) {
  size_t i = 0;
  uint64_t depth = 0;  // arrays and objects open at i
  do {
    if (i >= key.size()) return std::string_view::npos;
    switch (key[i]) {
      case end_of_list:
        if (depth == 0) return std::string_view::npos;
        --depth;
        ++i;
        break;
      case tag_null:
      case tag_false:
      case tag_true:
        ++i;
        break;
      case tag_number:  // 8 bytes, then 0x00, or 0x01 and 8 more
        i += 9;
        if (i >= key.size() || (key[i] != 0x00 && key[i] != 0x01)) return std::string_view::npos;
        i += key[i] == 0x00 ? 1 : 9;
        break;
      case tag_string: {  // ICU's sort key, ended by its only 0x00
        const size_t end = key.find('\0', i + 1);
        if (end == std::string_view::npos) return end;
        i = end + 1;
        break;
      }
      case tag_array:
      case tag_object:  // an object's member names are strings among its values
        ++depth;
        ++i;
        break;
      default:
        return std::string_view::npos;
    }
  } while (depth > 0);
  return i <= key.size() ? i : std::string_view::npos;
}

size_t group_length(std::string_view key, int64_t level) {
  if (level == 0) return 0;
  if (level < 0 || key.empty() || key[0] != tag_array) return value_length(key);
  size_t i = 1;
  for (int64_t e = 0; e < level; ++e) {
    if (i >= key.size()) return std::string_view::npos;
    if (key[i] == end_of_list) break;
    const size_t n = value_length(key.substr(i));
    if (n == std::string_view::npos) return n;
    i += n;
  }
  return i;
}

std::string collator_version() {
  const UCollator* c = root_collator();
  if (!c) return "";
  UVersionInfo v;
  ucol_getVersion(c, v);
  char text[U_MAX_VERSION_STRING_LENGTH];
  u_versionToString(v, text);
  return text;
}

}  // namespace settee::collation
