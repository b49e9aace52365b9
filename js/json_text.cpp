#include "js/json_text.hpp"

namespace settee::js {
namespace {

void put_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

int hex_digit(char16_t c) {
  if (c >= u'0' && c <= u'9') return c - u'0';
  if (c >= u'a' && c <= u'f') return c - u'a' + 10;
  if (c >= u'A' && c <= u'F') return c - u'A' + 10;
  return -1;
}

// The code unit of a \uXXXX escape at text[i] (i at the backslash), or -1.
long escaped_unit(const std::u16string& text, size_t i) {
  if (i + 6 > text.size() || text[i] != u'\\' || text[i + 1] != u'u') return -1;
  long v = 0;
  for (size_t k = i + 2; k < i + 6; ++k) {
    int h = hex_digit(text[k]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

bool high(long u) {
  return u >= 0xD800 && u <= 0xDBFF;
}
bool low(long u) {
  return u >= 0xDC00 && u <= 0xDFFF;
}

}  // namespace

std::string utf16_to_utf8_json(const std::u16string& text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (size_t i = 0; i < text.size(); ++i) {
    char16_t c = text[i];
    if (c == u'\\' && i + 1 < text.size()) {
      long u = escaped_unit(text, i);
      if (u >= 0 && (high(u) || low(u))) {
        long next = escaped_unit(text, i + 6);
        if (high(u) && low(next)) {  // a pair written as two escapes: kept
          for (size_t k = i; k < i + 12; ++k) out += static_cast<char>(text[k]);
          i += 11;
        } else {
          out += "\\ufffd";
          i += 5;
        }
        continue;
      }
      out += '\\';  // any other escape: both characters as they are
      put_utf8(out, text[++i]);
      continue;
    }
    if (high(c) && i + 1 < text.size() && low(text[i + 1])) {
      put_utf8(out, 0x10000 + ((static_cast<char32_t>(c) - 0xD800) << 10) + (text[i + 1] - 0xDC00));
      ++i;
    } else if (high(c) || low(c)) {
      put_utf8(out, 0xFFFD);
    } else {
      put_utf8(out, c);
    }
  }
  return out;
}

}  // namespace settee::js
