#include "wire/cors.hpp"

#include <algorithm>
#include <cctype>

namespace settee {

namespace {

// chttpd_cors.hrl
const std::vector<std::string> supported_headers = {"accept",
                                                    "accept-language",
                                                    "authorization",
                                                    "content-length",
                                                    "content-range",
                                                    "content-type",
                                                    "destination",
                                                    "expires",
                                                    "if-match",
                                                    "last-modified",
                                                    "origin",
                                                    "pragma",
                                                    "x-couch-full-commit",
                                                    "x-couch-id",
                                                    "x-couch-persist",
                                                    "x-couchdb-www-authenticate",
                                                    "x-http-method-override",
                                                    "x-requested-with",
                                                    "x-couchdb-vhost-path"};
const std::vector<std::string> supported_methods = {"CONNECT", "COPY", "DELETE", "GET",  "HEAD",
                                                    "OPTIONS", "POST", "PUT",    "TRACE"};
const std::vector<std::string> simple_headers = {"cache-control", "content-language", "content-type",
                                                 "expires",       "last-modified",    "pragma"};
const std::vector<std::string> couch_headers = {
    "accept-ranges", "etag", "server", "x-couch-request-id", "x-couch-update-newrev", "x-couchdb-body-time"};

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::vector<std::string> split_list(const std::string& s, bool lowered) {
  std::vector<std::string> out = config::split_list(s);
  if (lowered)
    for (std::string& piece : out) piece = lower(piece);
  return out;
}

bool contains(const std::vector<std::string>& list, const std::string& s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

std::string joined(const std::vector<std::string>& list) {
  std::string out;
  for (const auto& s : list) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

bool cors_policy::is_origin(const std::string& s) {
  if (s == "null") return true;
  size_t sep = s.find("://");
  if (sep == std::string::npos || sep == 0 || s.size() > 2048) return false;
  for (size_t i = 0; i < sep; ++i) {
    char ch = s[i];
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '+' || ch == '-' || ch == '.')) return false;
  }
  std::string rest = s.substr(sep + 3);
  if (rest.empty()) return false;
  for (unsigned char ch : rest) {
    // host (names, IPv4, [IPv6]) and :port; no path, query, user info or blanks.
    if (!(std::isalnum(ch) || ch == '-' || ch == '.' || ch == ':' || ch == '[' || ch == ']' || ch == '_' || ch >= 0x80))
      return false;
  }
  return true;
}

result<cors_policy> cors_policy::read(const config& cfg) {
  cors_policy p;
  // As chttpd_util: [chttpd], else [httpd] (where add-cors-to-couchdb sets it).
  p.enabled_ = cfg.get_bool("chttpd", "enable_cors", cfg.get_bool("httpd", "enable_cors", false));
  p.credentials_ = cfg.get("cors", "credentials", "false") == "true";
  for (const std::string& o : split_list(cfg.get("cors", "origins"), false)) {
    if (o == "*") {
      p.any_origin_ = true;
    } else if (!is_origin(o)) {
      return status{errc::bad_request,
                    "[cors] origins: '" + o + "' is not an origin (scheme://host[:port], without a path) or *"};
    }
    p.origins_.push_back(o);
  }
  p.methods_ = cfg.has("cors", "methods") ? split_list(cfg.get("cors", "methods"), false) : supported_methods;
  p.allow_headers_ = cfg.has("cors", "headers") ? split_list(cfg.get("cors", "headers"), true) : supported_headers;
  p.exposed_ =
      cfg.has("cors", "exposed_headers") ? split_list(cfg.get("cors", "exposed_headers"), true) : couch_headers;
  p.max_age_ = cfg.get("cors", "max_age", "600");
  if (p.max_age_.empty() || !std::all_of(p.max_age_.begin(), p.max_age_.end(), ::isdigit))
    return status{errc::bad_request, "[cors] max_age must be a number of seconds"};
  return p;
}

bool cors_policy::allowed_origin(const std::string& origin) const {
  if (origin.empty() || !is_origin(origin)) return false;
  return any_origin_ || contains(origins_, origin);
}

std::optional<cors_policy::headers> cors_policy::preflight(const http_request& req) const {
  if (!enabled_ || req.method != "OPTIONS") return std::nullopt;
  const std::string origin = req.get_header_value("Origin");
  if (!allowed_origin(origin) || !req.has_header("Access-Control-Request-Method")) return std::nullopt;
  const std::string method = req.get_header_value("Access-Control-Request-Method");
  if (!contains(methods_, method)) return std::nullopt;
  const std::string asked = req.get_header_value("Access-Control-Request-Headers");
  for (const std::string& h : split_list(asked, true))
    if (!contains(allow_headers_, h)) return std::nullopt;
  headers out = {{"Access-Control-Allow-Origin", origin},
                 {"Access-Control-Max-Age", max_age_},
                 {"Access-Control-Allow-Methods", joined(methods_)}};
  if (credentials_ && origin != "*") out.emplace_back("Access-Control-Allow-Credentials", "true");
  out.emplace_back("Access-Control-Allow-Headers", asked);
  out.emplace_back("Vary", "Origin");
  return out;
}

void cors_policy::decorate(const http_request& req, http_response& res) const {
  if (!enabled_) return;
  res.set_header("Vary", "Origin");
  const std::string origin = req.get_header_value("Origin");
  if (!allowed_origin(origin)) return;
  // As chttpd_cors: content-type first, the simple headers the answer has, then CouchDB's own.
  std::vector<std::string> exposed = {"content-type"};
  for (auto& [name, value] : res.headers) {
    std::string l = lower(name);
    if (contains(simple_headers, l) && !contains(exposed, l)) exposed.push_back(l);
  }
  for (const std::string& h : exposed_)
    if (!contains(exposed, h)) exposed.push_back(h);
  res.set_header("Access-Control-Allow-Origin", origin);
  if (credentials_) res.set_header("Access-Control-Allow-Credentials", "true");
  res.set_header("Access-Control-Expose-Headers", joined(exposed));
}

}  // namespace settee
