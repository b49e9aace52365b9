#include "http/request.hpp"
#include "wire/json_util.hpp"

#include <strings.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace settee {

bool user_ctx::is_admin() const {
  return has_role("_admin");
}

bool user_ctx::has_role(const char* role) const {
  return std::find(roles.begin(), roles.end(), role) != roles.end();
}

result<bool> bool_param(const http_params& query, const char* name, bool def) {
  auto it = query.find(name);
  if (it == query.end()) return def;
  if (it->second == "true") return true;
  if (it->second == "false") return false;
  return status{errc::query_parse_error, "Invalid boolean parameter: \"" + it->second + "\""};
}

result<bool> ctx::bool_param(const char* name, bool def) const {
  return settee::bool_param(req.params, name, def);
}

result<size_t> ctx::quorum_param(const char* name) const {
  auto v = int_param(name, 0);
  if (!v) return v.error();
  if (has(name) && *v <= 0) {
    return status{errc::bad_request, std::string("The `") + name + "` value should be a positive integer."};
  }
  return static_cast<size_t>(*v);
}

result<int64_t> ctx::int_param(const char* name, int64_t def) const {
  if (!has(name)) return def;
  std::string v = param(name);
  char* end = nullptr;
  errno = 0;
  long long n = v.empty() ? 0 : std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || errno != 0 || *end != '\0') {
    return status{errc::query_parse_error, "Invalid value for integer: \"" + v + "\""};
  }
  return static_cast<int64_t>(n);
}

std::vector<std::pair<std::string, std::string>> ctx::query_in_order() const {
  size_t q = req.target.find('?');
  if (q != std::string::npos) return parse_query_list(std::string_view(req.target).substr(q + 1));
  return {req.params.begin(), req.params.end()};  // a request made up in-process
}

result<json> ctx::json_body(size_t wrapping) const {
  return parse_client_json(req.body, {errc::bad_request, "invalid UTF-8 JSON"}, wrapping);
}

result<json> ctx::json_object_body(size_t wrapping) const {
  if (auto st = require_json_content(); !st) return st;
  auto body = json_body(wrapping);
  if (!body) return body.error();
  if (!body->is_object()) return status{errc::bad_request, "Request body must be a JSON object"};
  return body;
}

result<docs_body> ctx::split_docs_body(std::string_view array, member_picker pick, size_t wrapping) const {
  if (auto st = require_json_content(); !st) return st;
  return parse_client_docs(req.body, array, pick, {errc::bad_request, "invalid UTF-8 JSON"}, wrapping);
}

status ctx::require_json_content() const {
  std::string type = req.get_header_value("Content-Type");
  std::string base = type.substr(0, type.find(';'));
  while (!base.empty() && base.back() == ' ') base.pop_back();
  if (base != "application/json") return {errc::bad_content_type, "Content-Type must be application/json"};
  return {};
}

void ctx::reply(int status, const json& body) {
  // Reasons may quote what the client sent (query parameters are not checked for UTF-8): never throw
  // on it, replace invalid bytes with U+FFFD.
  reply_raw(status, body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
}

void ctx::reply_raw(int status, std::string body, const char* content_type) {
  res.status = status;
  res.set_header("Cache-Control", "must-revalidate");
  res.set_content(std::move(body), content_type);
}

void ctx::error(const status& st) {
  status shown = st;
  if (st.code == errc::not_found && shown.reason.empty()) shown.reason = "missing";
  reply(http_status_of(st.code), error_json(shown));
  // No WWW-Authenticate, as CouchDB 3: a browser app with its own sign-in form gets no native dialog.
}

std::string ctx::absolute_uri(const std::string& path) const {
  std::string host = req.get_header_value("X-Forwarded-Host");
  if (host.empty()) host = req.get_header_value("Host");
  if (host.empty()) return path;  // HTTP/1.0 without a Host: the path alone
  bool https = strcasecmp(req.get_header_value("X-Forwarded-Ssl").c_str(), "on") == 0 ||
               strcasecmp(req.get_header_value("X-Forwarded-Proto").c_str(), "https") == 0;
  return (https ? "https://" : "http://") + host + path;
}

void ctx::set_location(const std::vector<std::string>& parts) {
  std::string path;
  for (const std::string& p : parts) path += "/" + percent_encode(p);
  res.set_header("Location", absolute_uri(path));
}

void ctx::method_not_allowed(const char* methods) {
  error(errc::method_not_allowed, std::string("Only ") + methods + " allowed");
  res.set_header("Allow", methods);
}

std::vector<std::string> split_path(const std::string& target) {
  std::string_view path(target);
  path = path.substr(0, path.find('?'));
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    if (i >= path.size()) break;
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    out.push_back(percent_decode(path.substr(i, j - i), /*plus_is_space=*/true));  // as mochiweb's unquote
    i = j;
  }
  return out;
}

}  // namespace settee
