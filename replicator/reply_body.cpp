#include "replicator/reply_body.hpp"
#include "node/check.hpp"

#include <strings.h>
#include <zlib.h>

namespace settee {
namespace {
// The ratio bound applies past this many decoded bytes (small answers compress as they like).
constexpr uint64_t ratio_grace = 1u << 20;
constexpr size_t chunk = 64u << 10;
}  // namespace

struct reply_body::inflater {
  z_stream z{};
  bool ended = false;                        // a member ended; more input starts another
  inflater() { inflateInit2(&z, 15 + 32); }  // gzip or zlib, by its header
  ~inflater() { inflateEnd(&z); }
};

reply_body::reply_body(uint64_t max_bytes, uint64_t max_ratio, std::string limit_name,
                       std::function<bool(std::string_view)> sink)
    : max_bytes_(max_bytes), max_ratio_(max_ratio), limit_name_(std::move(limit_name)), sink_(std::move(sink)) {}

reply_body::~reply_body() = default;

bool reply_body::fail(std::string reason, errc code) {
  if (error_) error_ = status{code, std::move(reason)};
  return false;
}

status reply_body::begin(const std::string& content_encoding, std::optional<uint64_t> content_length) {
  const std::string& ce = content_encoding;
  if (!ce.empty() && strcasecmp(ce.c_str(), "identity") != 0) {
    if (strcasecmp(ce.c_str(), "gzip") != 0 && strcasecmp(ce.c_str(), "x-gzip") != 0 &&
        strcasecmp(ce.c_str(), "deflate") != 0)
      return status{errc::internal, "the answer's Content-Encoding `" + ce + "` is not supported"};
    z_ = std::make_unique<inflater>();
  }
  // Encoded, the bytes on the wire are fewer than the decoded ones: the decoded bound applies.
  if (content_length && *content_length > max_bytes_)
    fail("the answer is larger than " + std::to_string(max_bytes_) + " bytes (" + limit_name_ + "): Content-Length " +
             std::to_string(*content_length),
         errc::too_large);
  return error_;
}

bool reply_body::deliver(const char* data, size_t n) {
  SETTEE_CHECK(error_ && !sink_done_);  // nothing reaches the sink after a refusal or its own stop
  if (n == 0) return true;
  decoded_ += n;
  if (decoded_ > max_bytes_)
    return fail("the answer is larger than " + std::to_string(max_bytes_) + " bytes (" + limit_name_ + ")",
                errc::too_large);
  if (z_ && decoded_ > ratio_grace && decoded_ / std::max<uint64_t>(received_, 1) > max_ratio_)
    return fail("the answer inflates more than " + std::to_string(max_ratio_) + " times (" + std::to_string(received_) +
                " bytes received, " + std::to_string(decoded_) + " decoded): refused as a compression bomb");
  if (!sink_(std::string_view(data, n))) {
    sink_done_ = true;
    return false;
  }
  return true;
}

bool reply_body::feed(const char* data, size_t n) {
  if (!error_ || sink_done_) return false;
  received_ += n;
  if (!z_) return deliver(data, n);
  z_stream& z = z_->z;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
  z.avail_in = static_cast<uInt>(n);
  char out[chunk];
  while (z.avail_in > 0) {
    if (z_->ended) {  // another gzip member follows the last one
      inflateReset(&z);
      z_->ended = false;
    }
    z.next_out = reinterpret_cast<Bytef*>(out);
    z.avail_out = sizeof out;
    int rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
      return fail(std::string("the answer's compressed body is corrupt: ") + (z.msg ? z.msg : "zlib error"));
    if (!deliver(out, sizeof out - z.avail_out)) return false;
    if (rc == Z_STREAM_END) z_->ended = true;
    if (rc == Z_BUF_ERROR && z.avail_out != 0) break;  // needs more input
  }
  // Output still held inside zlib (avail_in spent, window full) comes out on the next call.
  for (;;) {
    if (z_->ended) break;
    z.next_out = reinterpret_cast<Bytef*>(out);
    z.avail_out = sizeof out;
    int rc = inflate(&z, Z_NO_FLUSH);
    size_t got = sizeof out - z.avail_out;
    if (rc == Z_STREAM_END) z_->ended = true;
    if (got == 0) break;
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
      return fail(std::string("the answer's compressed body is corrupt: ") + (z.msg ? z.msg : "zlib error"));
    if (!deliver(out, got)) return false;
  }
  return true;
}

status reply_body::finish() {
  if (!error_ || sink_done_) return error_;
  if (z_ && !z_->ended && received_ > 0) fail("the answer's compressed body ends early");
  return error_;
}

}  // namespace settee
