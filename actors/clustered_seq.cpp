#include "actors/clustered_seq.hpp"

#include <algorithm>

#include "node/check.hpp"
#include "node/crypto.hpp"
#include "storage/codec.hpp"

namespace settee {

namespace {

constexpr uint8_t payload_version = 1;

status malformed() {
  return {errc::bad_request, "Malformed sequence supplied in 'since' parameter."};
}

// A check node: "~", the CRC-32 of the rest of the payload in 8 hex digits, and up to two more '~'
// so that everything up to it is a multiple of 3 bytes (no member's name starts with '~'). It is
// the first node; releases before 0.4 read it as a node no entry names, and pass over it.
constexpr size_t check_name_length = 9;

std::string check_name(uint32_t crc, size_t length) {
  static const char* hex = "0123456789abcdef";
  std::string name(length, '~');
  for (size_t i = 0; i < 8; ++i) name[1 + i] = hex[(crc >> (28 - 4 * i)) & 0xf];
  return name;
}

bool parse_check_name(const std::string& name, uint32_t& crc) {
  if (name.size() < check_name_length || name.size() > check_name_length + 2 || name[0] != '~') return false;
  crc = 0;
  for (size_t i = 1; i < check_name_length; ++i) {
    char ch = name[i];
    int v = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    if (v < 0) return false;
    crc = crc << 4 | static_cast<uint32_t>(v);
  }
  return name.find_first_not_of('~', check_name_length) == std::string::npos;
}

}  // namespace

seq_token_builder::seq_token_builder(const std::vector<seq_entry>& layout) : entries_(layout.size()) {
  std::vector<std::string> nodes;
  for (auto& e : layout)
    if (std::find(nodes.begin(), nodes.end(), e.node) == nodes.end()) nodes.push_back(e.node);
  codec::writer count, rest;
  count.varint(nodes.size() + 1);  // and the check node, first
  for (auto& n : nodes) rest.str(n);
  rest.varint(layout.size());
  for (auto& e : layout) {
    rest.varint(e.range.begin);
    rest.varint(e.range.end);
    rest.varint(1 + (std::find(nodes.begin(), nodes.end(), e.node) - nodes.begin()));
    rest.str(e.uuid_prefix);
  }
  // Up to and with the check node, and after it, each a multiple of 3 bytes: the base64 of what
  // follows the check never changes, and a token encodes only the check and the seqs anew.
  const size_t prefix = 2 + count.data().size() + 1;  // version, pad, node count, the name's length
  check_length_ = check_name_length + (3 - (prefix + check_name_length) % 3) % 3;
  const size_t pad = (3 - rest.data().size() % 3) % 3;
  before_check_.push_back(static_cast<char>(payload_version));
  before_check_.push_back(static_cast<char>(pad));
  before_check_ += count.data();
  std::string after(rest.data());
  after.append(pad, '\0');
  after_base64_ = crypto::base64_encode(after, /*url=*/true);
  fixed_crc_ = crypto::crc32(after, crypto::crc32(before_check_));
}

std::string seq_token_builder::token(const std::vector<uint64_t>& seqs) const {
  SETTEE_CHECK(seqs.size() == entries_);  // a token another reader could not decode is never made
  codec::writer w, head;
  uint64_t sum = 0;
  for (uint64_t s : seqs) {
    w.varint(s);
    sum += s;
  }
  head.str(check_name(crypto::crc32(w.data(), fixed_crc_), check_length_));
  return std::to_string(sum) + "-" + crypto::base64_encode(before_check_ + std::string(head.data()), true) +
         after_base64_ + crypto::base64_encode(w.data(), /*url=*/true);
}

std::string encode_seq(const std::vector<seq_entry>& entries) {
  std::vector<uint64_t> seqs;
  for (auto& e : entries) seqs.push_back(e.seq);
  return seq_token_builder(entries).token(seqs);
}

bool unwrap_token(std::string_view token, std::string& payload, std::string_view* sum) {
  if (token.size() >= 2 && token.front() == '"' && token.back() == '"') token = token.substr(1, token.size() - 2);
  size_t dash = token.find('-');
  if (dash == std::string_view::npos || dash == 0 || token.size() > 64 * 1024) return false;
  for (size_t i = 0; i < dash; ++i)
    if (token[i] < '0' || token[i] > '9') return false;
  if (sum) *sum = token.substr(0, dash);
  return crypto::base64_decode(std::string(token.substr(dash + 1)), payload);
}

result<std::vector<seq_entry>> decode_seq(std::string_view token) {
  if (token == "0" || token == "\"0\"") return std::vector<seq_entry>{};
  std::string payload;
  std::string_view sum_text;
  if (!unwrap_token(token, payload, &sum_text)) return malformed();
  codec::reader r(payload);
  uint8_t version = 0, pad = 0;
  uint64_t node_count = 0, count = 0;
  if (!r.byte(version) || version != payload_version || !r.byte(pad) || pad > 2 || !r.varint(node_count) ||
      node_count > 4096) {
    return malformed();
  }
  std::vector<std::string> nodes(node_count);
  size_t check_at = 0, check_end = 0;  // where the check node is in the payload (0.4 on: first)
  uint32_t check = 0;
  for (auto& n : nodes) {
    size_t at = r.pos();
    if (!r.str(n)) return malformed();
    if (&n == &nodes.front() && parse_check_name(n, check)) check_at = at, check_end = r.pos();
  }
  if (!r.varint(count) || count > 4096) return malformed();
  std::vector<seq_entry> out(count);
  // Every node but the check is some entry's (a corrupted check is not); the check is nobody's.
  std::vector<bool> named(nodes.size());
  if (check_end) named[0] = true;
  for (auto& e : out) {
    uint64_t begin = 0, end = 0, node = 0;
    if (!r.varint(begin) || !r.varint(end) || begin > end || end > 0xffffffffull || !r.varint(node) ||
        node >= nodes.size() || (check_end && node == 0) || !r.str(e.uuid_prefix)) {
      return malformed();
    }
    e.range = {static_cast<uint32_t>(begin), static_cast<uint32_t>(end)};
    e.node = nodes[node];
    named[node] = true;
  }
  if (std::find(named.begin(), named.end(), false) != named.end()) return malformed();
  for (uint8_t i = 0; i < pad; ++i) {
    uint8_t zero = 1;
    if (!r.byte(zero) || zero != 0) return malformed();
  }
  uint64_t sum = 0;
  for (auto& e : out) {
    if (!r.varint(e.seq)) return malformed();
    sum += e.seq;
  }
  if (!r.done()) return malformed();
  // Corruption is a 400, never another position: the sum every release writes before the dash,
  // and (tokens of 0.4 on) the CRC of the payload.
  if (sum_text != std::to_string(sum)) return malformed();
  if (check_end) {
    std::string_view p = payload;
    if (crypto::crc32(p.substr(check_end), crypto::crc32(p.substr(0, check_at))) != check) return malformed();
  }
  return out;
}

}  // namespace settee
