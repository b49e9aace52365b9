#include "storage/codec.hpp"

namespace settee::codec {

void writer::varint(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void writer::str(std::string_view s) {
  varint(s.size());
  out_.append(s.data(), s.size());
}

bool reader::varint(uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= in_.size()) return false;
    uint8_t b = static_cast<uint8_t>(in_[pos_++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;  // more than 10 bytes: malformed
}

bool reader::str(std::string& s) {
  uint64_t n = 0;
  if (!varint(n) || n > in_.size() - pos_) return false;
  s.assign(in_.data() + pos_, n);
  pos_ += n;
  return true;
}

bool reader::skip_str() {
  uint64_t n = 0;
  if (!varint(n) || n > in_.size() - pos_) return false;
  pos_ += n;
  return true;
}

bool reader::byte(uint8_t& b) {
  if (pos_ >= in_.size()) return false;
  b = static_cast<uint8_t>(in_[pos_++]);
  return true;
}

std::string seq_key(uint64_t seq) {
  std::string k(8, '\0');
  for (int i = 7; i >= 0; --i) {
    k[i] = static_cast<char>(seq & 0xff);
    seq >>= 8;
  }
  return k;
}

bool parse_seq_key(std::string_view key, uint64_t& seq) {
  if (key.size() != 8) return false;
  seq = 0;
  for (char c : key) seq = (seq << 8) | static_cast<uint8_t>(c);
  return true;
}

void put_escaped(std::string& out, std::string_view id) {
  for (char c : id) {
    if (c == 0x00 || c == 0x01) {
      out.push_back(0x01);
      out.push_back(static_cast<char>(c + 1));
    } else {
      out.push_back(c);
    }
  }
}

}  // namespace settee::codec
