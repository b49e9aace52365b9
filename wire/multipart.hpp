// multipart: MIME multipart bodies (RFC 2046) as CouchDB reads and writes them for documents with
// attachments: `multipart/related` (the document's JSON, then one part per attachment that
// "follows") and `multipart/mixed` (one part per revision of an open_revs answer).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "node/error.hpp"

namespace settee::multipart {

struct part {
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;
  // The value of header `name` (lower case), or "".
  std::string header(std::string_view name) const;
  // The `filename` parameter of Content-Disposition, or "".
  std::string filename() const;
};

// The `boundary` parameter of a Content-Type value (quoted or not), "" when there is none.
std::string boundary_of(const std::string& content_type);
// The media type of a Content-Type value, lower-cased, without parameters.
std::string media_type_of(const std::string& content_type);

// The parts of `body` delimited by `boundary`. Errors (400): no opening delimiter, a part without
// the blank line ending its headers (within 64 KiB), a body that ends before the closing delimiter.
result<std::vector<part>> parse(std::string_view body, const std::string& boundary);

// The same for a body too large to hold (a spooled upload): `size` bytes that `read(at, n, out)`
// gives a piece at a time; each part is located (its headers, where its body is) but not copied.
struct source {
  uint64_t size = 0;
  std::function<status(uint64_t at, size_t n, std::string& out)> read;
};
struct located {
  part headers;  // the part's headers (its body stays empty)
  uint64_t offset = 0, length = 0;
};
result<std::vector<located>> locate(const source& body, const std::string& boundary);
// A source over bytes in memory (which must outlive it).
source in_memory(std::string_view body);

// A body to send: text, and holes for attachment bytes that are read as it is sent (so a large
// attachment never sits in memory). A segment with a `key` stands for `length` bytes of that blob.
struct segment {
  std::string text;
  std::string key;
  uint64_t length = 0;
};
using segments = std::vector<segment>;
// The bytes a body will have.
uint64_t size_of(const segments& body);

// Builds a multipart body part by part, in CouchDB's layout ("--B\r\n<headers>\r\n\r\n<body>",
// parts joined by "\r\n--B\r\n", closed by "\r\n--B--").
class writer {
 public:
  using headers = std::vector<std::pair<std::string, std::string>>;
  explicit writer(std::string boundary) : boundary_(std::move(boundary)) {}
  void add(const headers& h, std::string_view body);
  // A part whose body is `length` bytes of blob `key`, or another body with holes.
  void add_blob(const headers& h, const std::string& key, uint64_t length);
  void add(const headers& h, const segments& body);
  // The finished body (no part: just the closing delimiter); finish() when it has no holes.
  segments finish_segments();
  std::string finish();
  // `multipart/<subtype>; boundary="B"`.
  std::string content_type(const char* subtype) const;

 private:
  void open(const headers& h);
  std::string& text();  // the text segment at the end
  std::string boundary_;
  segments out_;
  bool empty_ = true;
};

}  // namespace settee::multipart
