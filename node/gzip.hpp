// gzip: the gzip framing of deflate (RFC 1952), for attachments stored or sent encoded (CouchDB's
// `Content-Encoding: gzip` uploads and its `compressible_types`).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "node/error.hpp"

namespace settee::gzip {

// `in` compressed at `level` (1 fastest .. 9 smallest; zlib's default for anything else).
std::string compress(const std::string& in, int level);

// The bytes `in` encodes. Errors (400 bad_request): not gzip, truncated, trailing garbage, or more
// than `max_out` bytes decoded (a small body must not inflate into gigabytes: 413).
result<std::string> decompress(const std::string& in, size_t max_out);

// The same, for bytes too large to hold at once (a large attachment): feed pieces in order, then
// finish(). Output is appended to `out`. A decoder's errors are decompress's (`max_out` counts the
// whole output); bytes after the end of the gzip stream are an error too.
class stream {
 public:
  enum class mode { compress, decompress };
  explicit stream(mode m, int level = 6, uint64_t max_out = UINT64_MAX);
  ~stream();
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  status feed(std::string_view in, std::string& out);
  status finish(std::string& out);
  uint64_t total_out() const { return total_out_; }

 private:
  status run(std::string_view in, bool last, std::string& out);
  mode mode_;
  void* z_;  // z_stream
  bool ended_ = false;
  uint64_t total_out_ = 0;
  uint64_t max_out_;
};

}  // namespace settee::gzip
