#include "actors/db_updates_seq.hpp"

#include <cstdio>

#include "actors/clustered_seq.hpp"
#include "node/crypto.hpp"
#include "storage/codec.hpp"

namespace settee {

namespace {
constexpr uint8_t payload_tag = 'U';
constexpr uint8_t payload_version = 1;
// The name of the entry that carries the `seen` list and `marks` of the entry before it (no node
// name lacks an '@').
constexpr std::string_view seen_entry = "~seen";
// The last entry (0.4 on): the CRC-32 of the payload before it, in 8 hex digits in its log uuid.
constexpr std::string_view check_entry = "~check";
constexpr uint64_t max_seen_in_token = 1024;
constexpr uint64_t max_marks_in_token = 256;

// The check entry's value: the CRC-32 of `bytes` in 8 lowercase hex digits.
std::string crc_hex(std::string_view bytes) {
  char crc[9];
  std::snprintf(crc, sizeof crc, "%08x", crypto::crc32(bytes));
  return crc;
}

status not_ours() {
  return {errc::bad_request, "`since` is not a _db_updates sequence issued by this cluster"};
}

void write_entry(codec::writer& w, std::string_view node, std::string_view dbs_uuid, uint64_t dbs_seq, uint64_t index,
                 int64_t time, std::string_view log_uuid, uint64_t log_seq) {
  w.str(node);
  w.str(dbs_uuid);
  w.varint(dbs_seq);
  w.varint(index);
  w.varint(time > 0 ? static_cast<uint64_t>(time) : 0);
  w.str(log_uuid);
  w.varint(log_seq);
}

// The blob: varint count, then per seen event 8 bytes of id and varint age (dbs_time - time); then
// varint count, then per catalog mark str node, str uuid, varint seq, varint index.
std::string encode_blob(const node_updates_pos& n) {
  codec::writer w;
  w.varint(n.seen.size());
  for (const seen_event& e : n.seen) {
    for (int shift = 56; shift >= 0; shift -= 8) w.byte(static_cast<uint8_t>(e.id >> shift));
    w.varint(n.dbs_time > e.time_s ? static_cast<uint64_t>(n.dbs_time - e.time_s) : 0);
  }
  w.varint(n.marks.size());
  for (const catalog_mark& m : n.marks) {
    w.str(m.node);
    w.str(m.dbs_uuid);
    w.varint(m.dbs_seq);
    w.varint(m.dbs_index);
  }
  return std::string(w.data());
}

bool decode_blob(const std::string& blob, node_updates_pos& n) {
  codec::reader r(blob);
  uint64_t count = 0;
  if (!r.varint(count) || count > max_seen_in_token) return false;
  n.seen.resize(count);
  for (seen_event& e : n.seen) {
    for (int i = 0; i < 8; ++i) {
      uint8_t b = 0;
      if (!r.byte(b)) return false;
      e.id = e.id << 8 | b;
    }
    uint64_t age = 0;
    if (!r.varint(age) || age > static_cast<uint64_t>(n.dbs_time)) return false;
    e.time_s = n.dbs_time - static_cast<int64_t>(age);
  }
  if (!r.varint(count) || count > max_marks_in_token) return false;
  n.marks.resize(count);
  for (catalog_mark& m : n.marks) {
    uint64_t index = 0;
    if (!r.str(m.node) || m.node.empty() || !r.str(m.dbs_uuid) || !r.varint(m.dbs_seq) || !r.varint(index) ||
        index > UINT32_MAX) {
      return false;
    }
    m.dbs_index = static_cast<uint32_t>(index);
  }
  return r.done();
}
}  // namespace

std::string encode_db_updates_seq(const std::vector<node_updates_pos>& nodes) {
  codec::writer w;
  w.byte(payload_tag);
  w.byte(payload_version);
  size_t count = nodes.size() + 1;  // and the check entry
  auto has_blob = [](const node_updates_pos& n) { return !n.seen.empty() || !n.marks.empty(); };
  for (const auto& n : nodes) count += has_blob(n) ? 1 : 0;
  w.varint(count);
  uint64_t sum = 0;
  for (const auto& n : nodes) {
    write_entry(w, n.node, n.dbs_uuid, n.dbs_seq, n.dbs_index, n.dbs_time, n.log_uuid, n.log_seq);
    // Releases before 0.4 read this entry as a member they do not know, and pass over it.
    if (has_blob(n)) write_entry(w, seen_entry, "", 0, 0, 0, encode_blob(n), 0);
    sum += n.dbs_seq + n.log_seq;
  }
  // A corrupted token is a 400, never another position; releases before 0.4 pass over this entry.
  write_entry(w, check_entry, "", 0, 0, 0, crc_hex(w.data()), 0);
  return std::to_string(sum) + "-" + crypto::base64_encode(w.data(), /*url=*/true);
}

result<std::vector<node_updates_pos>> decode_db_updates_seq(std::string_view token) {
  std::string payload;
  std::string_view sum_text;
  if (!unwrap_token(token, payload, &sum_text)) return not_ours();
  codec::reader r(payload);
  uint8_t tag = 0, version = 0;
  uint64_t count = 0;
  if (!r.byte(tag) || tag != payload_tag || !r.byte(version) || version != payload_version || !r.varint(count) ||
      count == 0 || count > 4096) {
    return not_ours();
  }
  std::vector<node_updates_pos> out;
  bool blob_taken = false;  // the entry before has its blob already
  uint64_t sum = 0;
  for (uint64_t k = 0; k < count; ++k) {
    const size_t entry_at = r.pos();
    node_updates_pos n;
    uint64_t index = 0, time = 0;
    if (!r.str(n.node) || n.node.empty() || !r.str(n.dbs_uuid) || !r.varint(n.dbs_seq) || !r.varint(index) ||
        index > UINT32_MAX || !r.varint(time) || time > INT64_MAX || !r.str(n.log_uuid) || !r.varint(n.log_seq)) {
      return not_ours();
    }
    sum += n.dbs_seq + n.log_seq;
    // The check entry is known by its shape as well as its name (a log uuid of 8 hex digits, where
    // a member's is a 7-digit prefix, and zeros), so that a corrupted name is not read as a member.
    const bool check_shaped = n.dbs_uuid.empty() && n.dbs_seq == 0 && index == 0 && time == 0 && n.log_seq == 0 &&
                              n.log_uuid.size() == 8 &&
                              n.log_uuid.find_first_not_of("0123456789abcdef") == std::string::npos;
    if (n.node == check_entry || check_shaped) {  // last, over everything before it
      if (n.node != check_entry || !check_shaped || k + 1 != count ||
          n.log_uuid != crc_hex(std::string_view(payload).substr(0, entry_at)))
        return not_ours();
      continue;
    }
    if (n.node == seen_entry) {
      if (out.empty() || blob_taken || !decode_blob(n.log_uuid, out.back())) return not_ours();
      blob_taken = true;
      continue;
    }
    blob_taken = false;
    n.dbs_index = static_cast<uint32_t>(index);
    n.dbs_time = static_cast<int64_t>(time);
    out.push_back(std::move(n));
  }
  if (!r.done() || out.empty() || sum_text != std::to_string(sum)) return not_ours();
  return out;
}

}  // namespace settee
