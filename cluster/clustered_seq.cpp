#include "cluster/clustered_seq.hpp"

#include <algorithm>

#include "node/crypto.hpp"
#include "storage/codec.hpp"

namespace settee {

namespace {

constexpr uint8_t payload_version = 1;

status malformed() {
  return {errc::bad_request, "Malformed sequence supplied in 'since' parameter."};
}

std::string header_bytes(const std::vector<seq_entry>& layout) {
  std::vector<std::string> nodes;
  for (auto& e : layout)
    if (std::find(nodes.begin(), nodes.end(), e.node) == nodes.end()) nodes.push_back(e.node);
  codec::writer body;
  body.varint(nodes.size());
  for (auto& n : nodes) body.str(n);
  body.varint(layout.size());
  for (auto& e : layout) {
    body.varint(e.range.begin);
    body.varint(e.range.end);
    body.varint(std::find(nodes.begin(), nodes.end(), e.node) - nodes.begin());
    body.str(e.uuid_prefix);
  }
  size_t pad = (3 - (2 + body.data().size()) % 3) % 3;
  std::string out;
  out.push_back(static_cast<char>(payload_version));
  out.push_back(static_cast<char>(pad));
  out += body.data();
  out.append(pad, '\0');
  return out;
}

}  // namespace

seq_token_builder::seq_token_builder(const std::vector<seq_entry>& layout)
    : header_base64_(crypto::base64_encode(header_bytes(layout), /*url=*/true)) {}

std::string seq_token_builder::token(const std::vector<uint64_t>& seqs) const {
  codec::writer w;
  uint64_t sum = 0;
  for (uint64_t s : seqs) {
    w.varint(s);
    sum += s;
  }
  return std::to_string(sum) + "-" + header_base64_ + crypto::base64_encode(w.data(), /*url=*/true);
}

std::string encode_seq(const std::vector<seq_entry>& entries) {
  std::vector<uint64_t> seqs;
  for (auto& e : entries) seqs.push_back(e.seq);
  return seq_token_builder(entries).token(seqs);
}

bool unwrap_token(std::string_view token, std::string& payload) {
  if (token.size() >= 2 && token.front() == '"' && token.back() == '"') token = token.substr(1, token.size() - 2);
  size_t dash = token.find('-');
  if (dash == std::string_view::npos || dash == 0 || token.size() > 64 * 1024) return false;
  for (size_t i = 0; i < dash; ++i)
    if (token[i] < '0' || token[i] > '9') return false;
  return crypto::base64_decode(std::string(token.substr(dash + 1)), payload);
}

result<std::vector<seq_entry>> decode_seq(std::string_view token) {
  if (token == "0" || token == "\"0\"") return std::vector<seq_entry>{};
  std::string payload;
  if (!unwrap_token(token, payload)) return malformed();
  codec::reader r(payload);
  uint8_t version = 0, pad = 0;
  uint64_t node_count = 0, count = 0;
  if (!r.byte(version) || version != payload_version || !r.byte(pad) || pad > 2 || !r.varint(node_count) ||
      node_count > 4096) {
    return malformed();
  }
  std::vector<std::string> nodes(node_count);
  for (auto& n : nodes)
    if (!r.str(n)) return malformed();
  if (!r.varint(count) || count > 4096) return malformed();
  std::vector<seq_entry> out(count);
  for (auto& e : out) {
    uint64_t begin = 0, end = 0, node = 0;
    if (!r.varint(begin) || !r.varint(end) || begin > end || end > 0xffffffffull || !r.varint(node) ||
        node >= node_count || !r.str(e.uuid_prefix)) {
      return malformed();
    }
    e.range = {static_cast<uint32_t>(begin), static_cast<uint32_t>(end)};
    e.node = nodes[node];
  }
  for (uint8_t i = 0; i < pad; ++i) {
    uint8_t zero = 1;
    if (!r.byte(zero) || zero != 0) return malformed();
  }
  for (auto& e : out)
    if (!r.varint(e.seq)) return malformed();
  if (!r.done()) return malformed();
  return out;
}

}  // namespace settee
