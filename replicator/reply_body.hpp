// reply_body: a remote endpoint's answer body as it arrives, decoded and bounded, so that what a
// node holds never depends on what the endpoint sends. `Content-Encoding` gzip or deflate is
// inflated here (concatenated members too; any other coding is refused); at most `max_bytes`
// decoded bytes reach the sink, a `Content-Length` above that is refused before a byte is read,
// and past the first MiB the decoded bytes may be at most `max_ratio` times the bytes received
// (a gzip bomb fails after ~1 MiB, whatever it would inflate to). Pure: the client feeds it what
// it reads (rep_client), so unit tests drive it byte by byte.
//
//   reply_body b(64 << 20, 100, "[chttpd] max_http_request_size", sink);
//   if (auto st = b.begin(res.get_header_value("Content-Encoding"), length); !st) ...
//   while (...) if (!b.feed(data, n)) break;   // then b.finish(): the error, if any (too_large: the size)
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "node/error.hpp"

namespace settee {

class reply_body {
 public:
  // `sink` gets the decoded bytes in order; it returns false when it has what it needs (reading
  // stops without an error). `limit_name` names the setting in the error.
  reply_body(uint64_t max_bytes, uint64_t max_ratio, std::string limit_name,
             std::function<bool(std::string_view)> sink);
  ~reply_body();
  reply_body(const reply_body&) = delete;
  reply_body& operator=(const reply_body&) = delete;

  // The answer's `Content-Encoding` ("" none) and `Content-Length` (nullopt: none, or chunked).
  status begin(const std::string& content_encoding, std::optional<uint64_t> content_length);
  // Bytes as received; false: stop reading (an error, see error(), or the sink had enough).
  bool feed(const char* data, size_t n);
  // After the last byte: the error that stopped it, or a gzip stream cut short.
  status finish();

  const status& error() const { return error_; }
  bool sink_done() const { return sink_done_; }
  uint64_t received() const { return received_; }
  uint64_t decoded() const { return decoded_; }

 private:
  bool deliver(const char* data, size_t n);
  // Keeps the first error (too_large for the size limit, internal for the rest).
  bool fail(std::string reason, errc code = errc::internal);

  uint64_t max_bytes_, max_ratio_;
  std::string limit_name_;
  std::function<bool(std::string_view)> sink_;
  struct inflater;
  std::unique_ptr<inflater> z_;  // set for gzip and deflate
  uint64_t received_ = 0, decoded_ = 0;
  bool sink_done_ = false;
  status error_;
};

}  // namespace settee
