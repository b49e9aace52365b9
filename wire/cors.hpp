// cors: Cross-Origin Resource Sharing as CouchDB's chttpd_cors does it, so that a page from another
// origin (PouchDB in a browser) may call the node. Read from [chttpd] enable_cors (else [httpd]'s,
// as chttpd_util reads it) and the [cors]
// section: origins ("*" or a comma list of origins), credentials, methods, headers,
// exposed_headers, max_age.
//
// A preflight (OPTIONS with Origin and Access-Control-Request-Method) from an allowed origin, for
// an allowed method and headers, is answered 204 with the Access-Control-Allow-* headers before
// authentication; any other OPTIONS goes to the handlers (405 where a path takes no OPTIONS). An
// answer to an allowed origin carries Access-Control-Allow-Origin (the origin itself, never "*",
// as CouchDB), Access-Control-Allow-Credentials when configured, and Access-Control-Expose-Headers
// (ETag, X-Couch-*...). A refused origin gets none of them.
// Better than CouchDB: every answer of a node with CORS on says `Vary: Origin` (shared caches
// must not hand one origin's answer to another), and an Origin header that is not an origin
// (scheme://host[:port], or "null") is never echoed, even with origins = *.
// Pure: a policy is a value read from a config; no I/O.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "node/config.hpp"
#include "node/error.hpp"
#include "wire/message.hpp"

namespace settee {

class cors_policy {
 public:
  using headers = std::vector<std::pair<std::string, std::string>>;

  // The policy of `cfg`; bad_request naming the key when [cors] holds what is not an origin list.
  static result<cors_policy> read(const config& cfg);

  bool enabled() const { return enabled_; }
  // The 204's headers when `req` is a preflight this policy allows; nullopt otherwise.
  std::optional<headers> preflight(const http_request& req) const;
  // Adds the CORS headers an answer to `req` carries (none when disabled or refused).
  void decorate(const http_request& req, http_response& res) const;
  // Whether `s` is a serialised origin: scheme://host[:port] with nothing after, or "null".
  static bool is_origin(const std::string& s);

 private:
  bool allowed_origin(const std::string& origin) const;

  bool enabled_ = false;
  bool credentials_ = false;
  bool any_origin_ = false;
  std::vector<std::string> origins_;
  std::vector<std::string> methods_;
  std::vector<std::string> allow_headers_;  // lower case
  std::vector<std::string> exposed_;        // lower case
  std::string max_age_ = "600";
};

}  // namespace settee
