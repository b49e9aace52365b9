#include "cluster/clustered_seq.hpp"

#include "node/crypto.hpp"
#include "storage/codec.hpp"

namespace settee {

namespace {

constexpr uint8_t payload_version = 1;

status malformed() {
  return {errc::bad_request, "Malformed sequence supplied in 'since' parameter."};
}

}  // namespace

std::string encode_seq(const std::vector<seq_entry>& entries) {
  codec::writer w;
  w.byte(payload_version);
  w.varint(entries.size());
  uint64_t sum = 0;
  for (auto& e : entries) {
    w.varint(e.range.begin);
    w.varint(e.range.end);
    w.str(e.node);
    w.str(e.uuid_prefix);
    w.varint(e.seq);
    sum += e.seq;
  }
  return std::to_string(sum) + "-" + crypto::base64_encode(w.data(), /*url=*/true);
}

result<std::vector<seq_entry>> decode_seq(std::string_view token) {
  if (token.size() >= 2 && token.front() == '"' && token.back() == '"') token = token.substr(1, token.size() - 2);
  if (token == "0") return std::vector<seq_entry>{};
  size_t dash = token.find('-');
  if (dash == std::string_view::npos || dash == 0 || token.size() > 64 * 1024) return malformed();
  for (size_t i = 0; i < dash; ++i)
    if (token[i] < '0' || token[i] > '9') return malformed();
  std::string payload;
  if (!crypto::base64_decode(std::string(token.substr(dash + 1)), payload)) return malformed();
  codec::reader r(payload);
  uint8_t version = 0;
  uint64_t count = 0;
  if (!r.byte(version) || version != payload_version || !r.varint(count) || count > 4096) return malformed();
  std::vector<seq_entry> out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    seq_entry e;
    uint64_t begin = 0, end = 0;
    if (!r.varint(begin) || !r.varint(end) || begin > end || end > 0xffffffffull || !r.str(e.node) ||
        !r.str(e.uuid_prefix) || !r.varint(e.seq)) {
      return malformed();
    }
    e.range = {static_cast<uint32_t>(begin), static_cast<uint32_t>(end)};
    out.push_back(std::move(e));
  }
  if (!r.done()) return malformed();
  return out;
}

}  // namespace settee
