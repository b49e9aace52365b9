#include "cluster/db_updates_seq.hpp"

#include "cluster/clustered_seq.hpp"
#include "node/crypto.hpp"
#include "storage/codec.hpp"

namespace settee {

namespace {
constexpr uint8_t payload_tag = 'U';
constexpr uint8_t payload_version = 1;

status not_ours() {
  return {errc::bad_request, "`since` is not a _db_updates sequence issued by this cluster"};
}
}  // namespace

std::string encode_db_updates_seq(const std::vector<node_updates_pos>& nodes) {
  codec::writer w;
  w.byte(payload_tag);
  w.byte(payload_version);
  w.varint(nodes.size());
  uint64_t sum = 0;
  for (const auto& n : nodes) {
    w.str(n.node);
    w.str(n.dbs_uuid);
    w.varint(n.dbs_seq);
    w.varint(n.dbs_index);
    w.varint(n.dbs_time > 0 ? static_cast<uint64_t>(n.dbs_time) : 0);
    w.str(n.log_uuid);
    w.varint(n.log_seq);
    sum += n.dbs_seq + n.log_seq;
  }
  return std::to_string(sum) + "-" + crypto::base64_encode(w.data(), /*url=*/true);
}

result<std::vector<node_updates_pos>> decode_db_updates_seq(std::string_view token) {
  std::string payload;
  if (!unwrap_token(token, payload)) return not_ours();
  codec::reader r(payload);
  uint8_t tag = 0, version = 0;
  uint64_t count = 0;
  if (!r.byte(tag) || tag != payload_tag || !r.byte(version) || version != payload_version || !r.varint(count) ||
      count == 0 || count > 4096) {
    return not_ours();
  }
  std::vector<node_updates_pos> out(count);
  for (auto& n : out) {
    uint64_t index = 0, time = 0;
    if (!r.str(n.node) || n.node.empty() || !r.str(n.dbs_uuid) || !r.varint(n.dbs_seq) || !r.varint(index) ||
        index > UINT32_MAX || !r.varint(time) || time > INT64_MAX || !r.str(n.log_uuid) || !r.varint(n.log_seq)) {
      return not_ours();
    }
    n.dbs_index = static_cast<uint32_t>(index);
    n.dbs_time = static_cast<int64_t>(time);
  }
  if (!r.done()) return not_ours();
  return out;
}

}  // namespace settee
