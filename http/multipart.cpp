#include "http/multipart.hpp"

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

result<std::vector<part>> parse(std::string_view body, const std::string& boundary) {
  if (boundary.empty() || boundary.size() > 70) return bad("missing or too long boundary");
  const std::string delimiter = "--" + boundary;
  // The first delimiter may open the body; later ones follow a CRLF.
  size_t pos;
  if (body.substr(0, delimiter.size()) == delimiter) {
    pos = delimiter.size();
  } else {
    pos = body.find("\r\n" + delimiter);
    if (pos == std::string_view::npos) return bad("no opening boundary");
    pos += 2 + delimiter.size();
  }
  std::vector<part> parts;
  const std::string next_delimiter = "\r\n" + delimiter;
  for (;;) {
    if (body.substr(pos, 2) == "--") return parts;  // the closing delimiter
    size_t eol = body.find("\r\n", pos);            // the rest of the delimiter line (transport padding)
    if (eol == std::string_view::npos) return bad("the body ends inside a boundary line");
    pos = eol + 2;
    part p;
    size_t headers_end = body.find("\r\n\r\n", pos);
    if (body.substr(pos, 2) == "\r\n") {
      headers_end = pos - 2;  // no headers at all
    } else if (headers_end == std::string_view::npos) {
      return bad("a part's headers do not end");
    }
    for (size_t line = pos; line < headers_end + 2;) {
      size_t end = body.find("\r\n", line);
      std::string_view h = body.substr(line, end - line);
      auto colon = h.find(':');
      if (colon == std::string_view::npos) return bad("a part header without ':'");
      p.headers.emplace_back(lower(trim(h.substr(0, colon))), trim(h.substr(colon + 1)));
      line = end + 2;
    }
    size_t start = headers_end + 4;
    size_t end = body.find(next_delimiter, start);
    if (end == std::string_view::npos) return bad("the body ends before its closing boundary");
    p.body = std::string(body.substr(start, end - start));
    parts.push_back(std::move(p));
    pos = end + next_delimiter.size();
  }
}

void writer::add(const std::vector<std::pair<std::string, std::string>>& headers, std::string_view body) {
  out_ += out_.empty() ? "--" : "\r\n--";
  out_ += boundary_;
  for (auto& [k, v] : headers) out_ += "\r\n" + k + ": " + v;
  out_ += "\r\n\r\n";
  out_.append(body.data(), body.size());
}

std::string writer::finish() {
  out_ += out_.empty() ? "--" : "\r\n--";
  out_ += boundary_ + "--";
  return std::move(out_);
}

std::string writer::content_type(const char* subtype) const {
  return std::string("multipart/") + subtype + "; boundary=\"" + boundary_ + "\"";
}

}  // namespace settee::multipart
