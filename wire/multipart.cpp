#include "wire/multipart.hpp"

#include <algorithm>
#include <cctype>

namespace settee::multipart {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return std::string(s);
}

// Parameter `name` of a header value "type; a=b; name=\"v\"" (case-insensitive name), or "".
std::string parameter(const std::string& value, const std::string& name) {
  size_t i = value.find(';');
  while (i != std::string::npos) {
    size_t next = value.find(';', i + 1);
    std::string item =
        trim(std::string_view(value).substr(i + 1, next == std::string::npos ? std::string::npos : next - i - 1));
    auto eq = item.find('=');
    if (eq != std::string::npos && lower(trim(item.substr(0, eq))) == name) {
      std::string v = trim(item.substr(eq + 1));
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
    i = next;
  }
  return "";
}

status bad(const std::string& why) {
  return {errc::bad_request, "Invalid multipart body: " + why};
}

}  // namespace

std::string part::header(std::string_view name) const {
  for (auto& [k, v] : headers)
    if (k == name) return v;
  return "";
}

std::string part::filename() const {
  return parameter(header("content-disposition"), "filename");
}

std::string boundary_of(const std::string& content_type) {
  return parameter(content_type, "boundary");
}

std::string media_type_of(const std::string& content_type) {
  return lower(trim(std::string_view(content_type).substr(0, content_type.find(';'))));
}

namespace {

constexpr uint64_t npos = UINT64_MAX;
constexpr size_t window = 1u << 20;        // bytes searched per read
constexpr size_t max_headers = 64u << 10;  // a part's header block

// Searches a source a window at a time (windows overlap by the needle's length, less one).
class scanner {
 public:
  explicit scanner(const source& s) : s_(s) {}
  status error;
  uint64_t find(std::string_view needle, uint64_t from) {
    std::string buf;
    for (uint64_t at = from; at < s_.size;) {
      if (status st = s_.read(at, window + needle.size(), buf); !st) {
        error = st;
        return npos;
      }
      if (auto i = buf.find(needle); i != std::string::npos) return at + i;
      if (at + buf.size() >= s_.size || buf.size() < needle.size()) return npos;
      at += buf.size() - needle.size() + 1;
    }
    return npos;
  }
  std::string get(uint64_t at, size_t n) {
    std::string out;
    if (status st = s_.read(at, n, out); !st) error = st;
    return out;
  }

 private:
  const source& s_;
};

}  // namespace

result<std::vector<located>> locate(const source& body, const std::string& boundary) {
  if (boundary.empty() || boundary.size() > 70) return bad("missing or too long boundary");
  const std::string delimiter = "--" + boundary;
  const std::string next_delimiter = "\r\n" + delimiter;
  scanner scan(body);
  auto failed = [&](const char* why) -> status { return scan.error ? bad(why) : scan.error; };
  // The first delimiter may open the body; later ones follow a CRLF.
  uint64_t pos;
  if (scan.get(0, delimiter.size()) == delimiter) {
    pos = delimiter.size();
  } else {
    pos = scan.find(next_delimiter, 0);
    if (pos == npos) return failed("no opening boundary");
    pos += next_delimiter.size();
  }
  std::vector<located> parts;
  for (;;) {
    if (scan.get(pos, 2) == "--") return parts;  // the closing delimiter
    uint64_t eol = scan.find("\r\n", pos);       // the rest of the delimiter line (transport padding)
    if (eol == npos) return failed("the body ends inside a boundary line");
    pos = eol + 2;
    located p;
    const std::string head = scan.get(pos, max_headers);
    size_t headers_end = head.find("\r\n\r\n");
    if (head.substr(0, 2) == "\r\n") {
      headers_end = 0;  // no headers at all
    } else if (headers_end == std::string::npos) {
      return failed("a part's headers do not end");
    } else {
      for (size_t line = 0; line < headers_end + 2;) {
        size_t end = head.find("\r\n", line);
        std::string_view h = std::string_view(head).substr(line, end - line);
        auto colon = h.find(':');
        if (colon == std::string_view::npos) return bad("a part header without ':'");
        p.headers.headers.emplace_back(lower(trim(h.substr(0, colon))), trim(h.substr(colon + 1)));
        line = end + 2;
      }
      headers_end += 2;
    }
    p.offset = pos + headers_end + 2;
    uint64_t end = scan.find(next_delimiter, p.offset);
    if (end == npos) return failed("the body ends before its closing boundary");
    p.length = end - p.offset;
    parts.push_back(std::move(p));
    pos = end + next_delimiter.size();
  }
}

source in_memory(std::string_view body) {
  return {body.size(), [body](uint64_t at, size_t n, std::string& out) {
            out.assign(at >= body.size() ? std::string_view() : body.substr(at, n));
            return status{};
          }};
}

result<std::vector<part>> parse(std::string_view body, const std::string& boundary) {
  auto spans = locate(in_memory(body), boundary);
  if (!spans) return spans.error();
  std::vector<part> parts;
  for (auto& l : *spans) {
    parts.push_back(std::move(l.headers));
    parts.back().body.assign(body.substr(l.offset, l.length));
  }
  return parts;
}

uint64_t size_of(const segments& body) {
  uint64_t n = 0;
  for (auto& s : body) n += s.key.empty() ? s.text.size() : s.length;
  return n;
}

std::string& writer::text() {
  if (out_.empty() || !out_.back().key.empty()) out_.emplace_back();
  return out_.back().text;
}

void writer::open(const headers& h) {
  std::string& o = text();
  o += empty_ ? "--" : "\r\n--";
  empty_ = false;
  o += boundary_;
  for (auto& [k, v] : h) o += "\r\n" + k + ": " + v;
  o += "\r\n\r\n";
}

void writer::add(const headers& h, std::string_view body) {
  open(h);
  text().append(body.data(), body.size());
}

void writer::add_blob(const headers& h, const std::string& key, uint64_t length) {
  open(h);
  out_.push_back({"", key, length});
}

void writer::add(const headers& h, const segments& body) {
  open(h);
  for (auto& s : body) {
    if (s.key.empty())
      text() += s.text;
    else
      out_.push_back(s);
  }
}

segments writer::finish_segments() {
  std::string& o = text();
  o += empty_ ? "--" : "\r\n--";
  o += boundary_ + "--";
  return std::move(out_);
}

std::string writer::finish() {
  segments all = finish_segments();
  std::string out;
  for (auto& s : all) out += s.text;  // holes have no text: a caller with holes uses finish_segments
  return out;
}

std::string writer::content_type(const char* subtype) const {
  return std::string("multipart/") + subtype + "; boundary=\"" + boundary_ + "\"";
}

}  // namespace settee::multipart
