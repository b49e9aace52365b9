// codec: the byte encodings of settee's LMDB keys and values (see FORMAT.md).
// writer appends LEB128 varints and length-prefixed strings; reader consumes them and reports
// truncated or malformed input by returning false (never reads past the end). Pure, no I/O.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace settee::codec {

class writer {
 public:
  void varint(uint64_t v);
  void str(std::string_view s);
  void byte(uint8_t b) { out_.push_back(static_cast<char>(b)); }
  std::string& data() { return out_; }

 private:
  std::string out_;
};

class reader {
 public:
  explicit reader(std::string_view in) : in_(in) {}
  bool varint(uint64_t& v);
  bool str(std::string& s);
  bool skip_str();  // passes over a string without copying it
  bool byte(uint8_t& b);
  bool done() const { return pos_ == in_.size(); }
  size_t pos() const { return pos_; }  // bytes read so far

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

// Appends `id` with 0x00 -> 01 01 and 0x01 -> 01 02: the same byte order, and no 0x00 inside, so a
// 0x00 after it ends it (index positions: storage/view_store, storage/json_index).
void put_escaped(std::string& out, std::string_view id);

// Big-endian 8-byte sequence keys sort numerically under LMDB's default byte comparison.
std::string seq_key(uint64_t seq);
bool parse_seq_key(std::string_view key, uint64_t& seq);

}  // namespace settee::codec
