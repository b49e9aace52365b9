// authenticator: who is asking and what they may do. As CouchDB, the handlers [chttpd]
// authentication_handlers names run in order (default: cookie, then Basic): an AuthSession cookie,
// Basic credentials, a JWT bearer token (node/jwt.hpp), a proxy's X-Auth-CouchDB-* headers.
//
// Server admins come from the [admins] config section (PBKDF2 hashes only). Other users are
// documents "org.couchdb.user:<name>" in the `_users` database, as in CouchDB; a "password" field
// written there is replaced by its PBKDF2 hash before it is stored.
// Successful PBKDF2 checks are cached, so Basic auth on every request does not pay the key
// derivation each time: keyed by a salted SHA-256 of the name and password (the password itself is
// never kept), each entry holds the stored hash it matched (a changed password misses) and ends
// after `verified_ttl_s`. On a keep-alive connection, the header a request proved is remembered
// (http_request::memo) and the connection's next requests compare it and nothing more.
// Thread-safety: all methods may be called from any thread.
#pragma once
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "http/request.hpp"

namespace settee {

class authenticator {
 public:
  authenticator(const live_config& cfg, const clock& clk, coordinator& coord);

  // The user behind the request: anonymous without credentials, errc::unauthorized when Basic
  // credentials are wrong. A bad or expired cookie counts as anonymous, as in CouchDB.
  result<user_ctx> authenticate(const http_request& req);
  // Checks a name and password against the admins, then `_users`.
  std::optional<user_ctx> check_password(const std::string& name, const std::string& password);
  std::string make_cookie(const std::string& name);
  // A Set-Cookie value carrying a fresh AuthSession for `name`.
  std::string session_cookie(const std::string& name);
  int64_t cookie_timeout_s() const { return cfg_.get_int("chttpd_auth", "timeout", 600); }

  // [chttpd] authentication_handlers: "cookie", "default" (Basic), "jwt", "proxy", in order.
  static std::vector<std::string> handlers(const config& cfg);

  static status require_server_admin(const user_ctx& u);
  // Whether `name` is a server admin now ([admins], or `_admin` among its roles in `_users`).
  bool is_server_admin(const std::string& name);
  // `security` is the database's _security object.
  static status require_member(const user_ctx& u, const json& security);
  static status require_db_admin(const user_ctx& u, const json& security);
  // For documents written to `_users`: hashes a plain "password" field in place.
  static void hash_user_password(json& doc);

 private:
  struct stored_user {
    std::string hash;  // "-pbkdf2..." form
    std::vector<std::string> roles;
  };
  std::optional<stored_user> find_user(const std::string& name);
  // check_password, also giving the stored hash the password matched.
  std::optional<user_ctx> check_password(const std::string& name, const std::string& password, std::string& stored);
  // An "Authorization: Basic ..." header, answered from the connection's memo when it proved the
  // same header before (and the user's stored hash is unchanged), else checked and memoised.
  std::optional<user_ctx> check_basic(const std::string& authorization, auth_memo* memo);
  // An AuthSession cookie's user; `renew`: a fresh cookie is due (a tenth of the timeout passed).
  std::optional<user_ctx> check_cookie(const std::string& value, const config& cfg, auth_memo* memo, bool& renew);
  std::optional<user_ctx> check_proxy(const http_request& req, const config& cfg);
  static std::string cookie_secret(const config& cfg);  // [chttpd_auth] secret (else [couch_httpd_auth]'s)
  bool verify_cached(const std::string& name, const std::string& password, const std::string& stored);

  const live_config& cfg_;
  const clock& clk_;
  coordinator& coord_;
  static constexpr int64_t verified_ttl_s = 600;
  static constexpr size_t verified_max = 10000;
  struct proof {
    std::string stored;  // the hash the password matched
    int64_t expires_s;
  };
  const std::string cache_salt_;  // random per process
  std::mutex mu_;
  std::unordered_map<std::string, proof> verified_;  // sha256(salt, name, password) -> proof
  // Cookies whose MAC was checked: a fresh connection's cookie costs a lookup, as Basic's password does.
  struct cookie_proof {
    std::string name, stored, secret;  // the user, the stored hash and the secret the MAC was made with
    int64_t issued = 0;                // the cookie's time
    int64_t expires = 0;               // kept until then
  };
  std::unordered_map<std::string, cookie_proof> cookies_;  // cookie value -> proof
  std::optional<cookie_proof> proven_cookie(const std::string& value, auth_memo* memo);
  void remember_cookie(const std::string& value, const cookie_proof& p, auth_memo* memo, int64_t expires);
};

}  // namespace settee
