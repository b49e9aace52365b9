#include "replicator/rep_endpoint.hpp"

#include <strings.h>
#include <algorithm>
#include <cctype>

#include "actors/db_catalog.hpp"
#include "node/crypto.hpp"
#include "wire/message.hpp"

namespace settee {
namespace {

status bad(const std::string& reason) {
  return {errc::bad_request, reason};
}

// Splits "scheme://[user[:pass]@]host[:port][/path]" into `e`.
status parse_url(const std::string& url, rep_endpoint& e) {
  auto colon = url.find("://");
  if (colon == std::string::npos) return bad("Invalid URL: " + strip_url_credentials(url));
  e.scheme = url.substr(0, colon);
  std::transform(e.scheme.begin(), e.scheme.end(), e.scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  if (e.scheme != "http" && e.scheme != "https")
    return bad("Unsupported URL scheme `" + e.scheme + "`: only http and https endpoints are supported");
  std::string rest = url.substr(colon + 3);
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  e.path = slash == std::string::npos ? "/" : rest.substr(slash);
  if (auto q = e.path.find_first_of("?#"); q != std::string::npos) e.path.resize(q);
  if (e.path.empty() || e.path.back() != '/') e.path += '/';  // as couch_replicator_utils adds it
  if (auto at = authority.rfind('@'); at != std::string::npos) {
    std::string cred = authority.substr(0, at);
    authority = authority.substr(at + 1);
    auto sep = cred.find(':');
    e.user = percent_decode(cred.substr(0, sep), false);
    e.password = sep == std::string::npos ? "" : percent_decode(cred.substr(sep + 1), false);
    e.has_credentials = true;
  }
  std::string port;
  if (!authority.empty() && authority[0] == '[') {  // [v6]:port
    auto close = authority.find(']');
    if (close == std::string::npos) return bad("Invalid URL: " + strip_url_credentials(url));
    e.host = authority.substr(0, close + 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') port = authority.substr(close + 2);
  } else {
    auto c = authority.find(':');
    e.host = authority.substr(0, c);
    if (c != std::string::npos) port = authority.substr(c + 1);
  }
  if (e.host.empty()) return bad("Invalid URL: " + strip_url_credentials(url));
  e.port = e.scheme == "https" ? 443 : 80;
  if (!port.empty()) {
    if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); }))
      return bad("Invalid URL: " + strip_url_credentials(url));
    e.port = std::stoi(port);
    if (e.port < 1 || e.port > 65535) return bad("Invalid URL: " + strip_url_credentials(url));
  }
  return {};
}

// "Basic base64(user:pass)" into user and password.
bool parse_basic(const std::string& value, std::string& user, std::string& password) {
  if (value.size() < 6 || strncasecmp(value.c_str(), "Basic ", 6) != 0) return false;
  std::string plain;
  if (!crypto::base64_decode(value.substr(6), plain)) return false;
  auto sep = plain.find(':');
  if (sep == std::string::npos) return false;
  user = plain.substr(0, sep);
  password = plain.substr(sep + 1);
  return true;
}

}  // namespace

std::string strip_url_credentials(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  size_t start = scheme + 3;
  size_t end = url.find('/', start);
  auto at = url.rfind('@', end == std::string::npos ? std::string::npos : end);
  if (at == std::string::npos || at < start) return url;
  return url.substr(0, start) + url.substr(at + 1);
}

std::string rep_endpoint::url() const {
  bool default_port = (scheme == "http" && port == 80) || (scheme == "https" && port == 443);
  return scheme + "://" + host + (default_port ? "" : ":" + std::to_string(port)) + path;
}

result<rep_endpoint> parse_endpoint(const json& spec, const std::string& self_url,
                                    const std::vector<std::pair<std::string, std::string>>& self_auth) {
  rep_endpoint e;
  std::string url;
  if (spec.is_string()) {
    url = spec.get<std::string>();
  } else if (spec.is_object()) {
    auto u = spec.find("url");
    if (u == spec.end() || !u->is_string()) return bad("Missing or invalid `url` in an endpoint object");
    url = u->get<std::string>();
  } else {
    return bad("Endpoints must be a string or an object with a `url`");
  }
  if (url.find("://") == std::string::npos) {
    // A database of this node, through its own HTTP front with the requester's credentials.
    if (auto st = validate_db_name(url); !st) return bad("Invalid database name or URL: `" + url + "`");
    if (auto st = parse_url(self_url + "/" + percent_encode(url), e); !st) return st;
    e.local_name = url;
    e.headers = self_auth;
    return e;
  }
  if (auto st = parse_url(url, e); !st) return st;
  if (spec.is_object()) {
    if (auto h = spec.find("headers"); h != spec.end()) {
      if (!h->is_object()) return bad("`headers` must be an object");
      for (auto& [k, v] : h->items()) {
        if (!v.is_string()) return bad("Header `" + k + "` must be a string");
        std::string user, password;
        if (strcasecmp(k.c_str(), "Authorization") == 0 && parse_basic(v.get<std::string>(), user, password)) {
          if (!e.has_credentials) e.user = user, e.password = password, e.has_credentials = true;
          continue;
        }
        e.headers.emplace_back(k, v.get<std::string>());
      }
    }
    if (auto a = spec.find("auth"); a != spec.end() && !a->is_null()) {
      if (!a->is_object()) return bad("`auth` must be an object");
      if (auto b = a->find("basic"); b != a->end()) {
        if (!b->is_object() || !b->contains("username") || !b->contains("password") || !(*b)["username"].is_string() ||
            !(*b)["password"].is_string())
          return bad("`auth.basic` must be an object with string `username` and `password`");
        // auth.basic wins over the URL's and the header's (couch_replicator_utils:normalize_basic_auth).
        e.user = (*b)["username"].get<std::string>();
        e.password = (*b)["password"].get<std::string>();
        e.has_credentials = true;
      }
    }
  }
  std::stable_sort(e.headers.begin(), e.headers.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return e;
}

std::string rep_endpoint::redact(std::string text) const {
  std::vector<std::string> secrets;
  if (has_credentials) {
    secrets.push_back(crypto::base64_encode(user + ":" + password));
    secrets.push_back(percent_encode(user) + ":" + percent_encode(password));
    secrets.push_back(user + ":" + password);
    secrets.push_back(percent_encode(password));
    secrets.push_back(password);
  }
  for (const auto& [k, v] : headers) secrets.push_back(v);
  for (const std::string& s : secrets) {
    if (s.size() < 3) continue;  // a one-letter password would mask every such letter
    for (size_t at = text.find(s); at != std::string::npos; at = text.find(s, at + 5))
      text.replace(at, s.size(), "*****");
  }
  return text;
}

json strip_endpoint_credentials(const json& spec) {
  if (spec.is_string()) return strip_url_credentials(spec.get<std::string>());
  if (!spec.is_object()) return spec;
  json out = spec;
  out.erase("headers");
  out.erase("auth");
  if (out.contains("url") && out["url"].is_string()) out["url"] = strip_url_credentials(out["url"].get<std::string>());
  return out;
}

}  // namespace settee
