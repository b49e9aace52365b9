// clustered_seq: the opaque sequence tokens of _changes, "<sum>-<base64url(payload)>".
//
// The payload names, for each shard range, the copy a position refers to (node and the first 7 hex
// digits of the shard file's uuid) and the seq on that copy. <sum> is the sum of the seqs: cosmetic,
// ignored on input. Clients treat tokens as opaque; any token from an earlier response is a valid
// `since`.
//
// Payload, version 1 (codec.hpp encodings):
//   byte 1, byte pad, varint node count, node names (str), varint entry count,
//   per entry: varint begin, varint end, varint node index, str uuid prefix,
//   `pad` zero bytes (so the header is a multiple of 3 bytes), then per entry: varint seq.
// Because the header is a multiple of 3 bytes, its base64 never changes with the seqs: a feed
// encodes it once and appends base64 of a few seq bytes per row (seq_token_builder).
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
  std::string header_base64_;
};

std::string encode_seq(const std::vector<seq_entry>& entries);

// The payload of a "<digits>-<base64url>" token (optionally wrapped in double quotes, at most 64 KB);
// false when it is not shaped so. Shared by _changes' and _db_updates' tokens.
bool unwrap_token(std::string_view token, std::string& payload);

// Decodes a token (optionally wrapped in double quotes). "0" decodes to no entries (the start).
// Anything malformed is errc::bad_request "Malformed sequence supplied in 'since' parameter.".
result<std::vector<seq_entry>> decode_seq(std::string_view token);

}  // namespace settee
