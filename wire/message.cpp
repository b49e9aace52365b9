#include "wire/message.hpp"

#include <strings.h>
#include <cctype>

namespace settee {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

template <class Headers>
const std::string* find_header(const Headers& headers, const char* name) {
  for (auto& [k, v] : headers)
    if (strcasecmp(k.c_str(), name) == 0) return &v;
  return nullptr;
}

}  // namespace

std::string percent_encode(std::string_view s) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : s) {
    if (std::isalnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == ':') {
      out += static_cast<char>(ch);
    } else {
      out += '%';
      out += hex[ch >> 4];
      out += hex[ch & 15];
    }
  }
  return out;
}

std::string percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    int hi, lo;
    if (s[i] == '%' && i + 2 < s.size() && (hi = hex_value(s[i + 1])) >= 0 && (lo = hex_value(s[i + 2])) >= 0) {
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

bool valid_percent_encoding(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') continue;
    if (i + 2 >= s.size() || hex_value(s[i + 1]) < 0 || hex_value(s[i + 2]) < 0) return false;
    i += 2;
  }
  return true;
}

void parse_query(std::string_view query, http_params& out) {
  for (auto& [k, v] : parse_query_list(query)) out.emplace(std::move(k), std::move(v));
}

std::vector<std::pair<std::string, std::string>> parse_query_list(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    out.emplace_back(percent_decode(key, true), percent_decode(value, true));
  }
  return out;
}

bool http_request::has_header(const char* name) const {
  return find_header(headers, name) != nullptr;
}

std::string http_request::get_header_value(const char* name) const {
  auto* v = find_header(headers, name);
  return v ? *v : std::string();
}

std::string http_request::get_param_value(const char* name) const {
  auto it = params.find(name);
  return it == params.end() ? std::string() : it->second;
}

void http_response::set_header(const std::string& name, std::string value) {
  for (auto& [k, v] : headers) {
    if (strcasecmp(k.c_str(), name.c_str()) == 0) {
      v = std::move(value);
      return;
    }
  }
  headers.emplace_back(name, std::move(value));
}

std::string http_response::get_header_value(const char* name) const {
  auto* v = find_header(headers, name);
  return v ? *v : std::string();
}

void http_response::set_content(std::string text, const char* content_type) {
  body = std::move(text);
  set_header("Content-Type", content_type);
}

void http_response::set_stream(std::shared_ptr<response_stream> s, const char* content_type) {
  stream = std::move(s);
  set_header("Content-Type", content_type);
}

const char* status_text(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Object Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Request Entity Too Large";
    case 414:
      return "Request-URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 416:
      return "Requested Range Not Satisfiable";
    case 417:
      return "Expectation Failed";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 507:
      return "Insufficient Storage";
    default:
      return status < 300 ? "OK" : status < 500 ? "Bad Request" : "Internal Server Error";
  }
}

}  // namespace settee
