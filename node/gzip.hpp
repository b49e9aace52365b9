// gzip: the gzip framing of deflate (RFC 1952), for attachments stored or sent encoded (CouchDB's
// `Content-Encoding: gzip` uploads and its `compressible_types`).
#pragma once
#include <string>

#include "node/error.hpp"

namespace settee::gzip {

// `in` compressed at `level` (1 fastest .. 9 smallest; zlib's default for anything else).
std::string compress(const std::string& in, int level);

// The bytes `in` encodes. Errors (400 bad_request): not gzip, truncated, trailing garbage, or more
// than `max_out` bytes decoded (a small body must not inflate into gigabytes: 413).
result<std::string> decompress(const std::string& in, size_t max_out);

}  // namespace settee::gzip
