// clustered_seq: the opaque sequence tokens of _changes, "<sum>-<base64url(payload)>".
//
// The payload names, for each shard range, the copy a position refers to (node and the first 7 hex
// digits of the shard file's uuid) and the seq on that copy. <sum> is the sum of the seqs, checked
// on input (a token that does not add up is corrupt). Clients treat tokens as opaque; any token
// from an earlier response is a valid `since`.
//
// Payload, version 1 (codec.hpp encodings):
//   byte 1, byte pad, varint node count, node names (str), varint entry count,
//   per entry: varint begin, varint end, varint node index, str uuid prefix,
//   `pad` zero bytes (so the header is a multiple of 3 bytes), then per entry: varint seq.
// From release 0.4 the first node name is a check, "~", 8 hex digits of the CRC-32 of the payload
// without that name, and up to two '~' that make the header up to it a multiple of 3 bytes: a
// corrupted token is a 400, never another position. Releases before 0.4 read it as a node no entry
// names and pass over it; their tokens (without it) are still taken.
// The header up to the check, the rest of the header and the seqs are each a multiple of 3 bytes
// (but the seqs), so a feed encodes the rest once and each token only the check and the seqs.
// Pure functions, no I/O.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actors/shard_map.hpp"
#include "node/error.hpp"

namespace settee {

constexpr size_t uuid_prefix_length = 7;

struct seq_entry {
  shard_range range;
  std::string node;
  std::string uuid_prefix;
  uint64_t seq = 0;
};

// Encodes tokens for a fixed set of (range, node, uuid prefix) with changing seqs.
class seq_token_builder {
 public:
  explicit seq_token_builder(const std::vector<seq_entry>& layout);
  std::string token(const std::vector<uint64_t>& seqs) const;

 private:
  std::string before_check_;  // version, pad, node count
  size_t check_length_ = 0;   // of the check name
  std::string after_base64_;  // the header after the check node: other nodes, entries, pad
  uint32_t fixed_crc_ = 0;    // CRC-32 of the header without the check node
  size_t entries_ = 0;        // the layout's entries: token() takes one seq each
};

std::string encode_seq(const std::vector<seq_entry>& entries);

// The payload of a "<digits>-<base64url>" token (optionally wrapped in double quotes, at most 64 KB),
// and its digits in `sum` when asked; false when it is not shaped so. Shared by _changes' and
// _db_updates' tokens.
bool unwrap_token(std::string_view token, std::string& payload, std::string_view* sum = nullptr);

// Decodes a token (optionally wrapped in double quotes). "0" decodes to no entries (the start).
// Anything malformed is errc::bad_request "Malformed sequence supplied in 'since' parameter.".
result<std::vector<seq_entry>> decode_seq(std::string_view token);

}  // namespace settee
