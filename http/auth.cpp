#include "http/auth.hpp"

#include <algorithm>
#include <cstdlib>

#include "node/crypto.hpp"
#include "node/jwt.hpp"
#include "node/metrics.hpp"

namespace settee {

namespace {

const char* users_db = "_users";
const char* user_prefix = "org.couchdb.user:";

bool has_any(const std::vector<std::string>& have, const json& wanted) {
  if (!wanted.is_array()) return false;
  for (auto& w : wanted)
    if (w.is_string() && std::find(have.begin(), have.end(), w.get<std::string>()) != have.end()) return true;
  return false;
}

bool listed(const user_ctx& u, const json& section) {
  if (!section.is_object()) return false;
  if (u.name && section.contains("names") && section["names"].is_array()) {
    for (auto& n : section["names"])
      if (n.is_string() && n.get<std::string>() == *u.name) return true;
  }
  return section.contains("roles") && has_any(u.roles, section["roles"]);
}

bool section_empty(const json& security, const char* key) {
  if (!security.is_object() || !security.contains(key) || !security[key].is_object()) return true;
  const json& s = security[key];
  bool names = !s.contains("names") || !s["names"].is_array() || s["names"].empty();
  bool roles = !s.contains("roles") || !s["roles"].is_array() || s["roles"].empty();
  return names && roles;
}

}  // namespace

authenticator::authenticator(const live_config& cfg, const clock& clk, coordinator& coord)
    : cfg_(cfg), clk_(clk), coord_(coord), cache_salt_(crypto::random_hex(16)) {}

std::string authenticator::cookie_secret(const config& cfg) {
  return cfg.get("chttpd_auth", "secret", cfg.get("couch_httpd_auth", "secret"));
}

bool authenticator::verify_cached(const std::string& name, const std::string& password, const std::string& stored) {
  std::string key = crypto::sha256(cache_salt_ + name + '\0' + password);
  int64_t now = clk_.now_s();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = verified_.find(key);
    // Only a match is answered from the cache: a wrong password always pays the key derivation, so
    // a recent login does not make its name answer faster (which would tell that the name exists).
    if (it != verified_.end() && it->second.stored == stored && now < it->second.expires_s) {
      metrics::node().auth_cache_hits.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  metrics::node().auth_cache_misses.fetch_add(1, std::memory_order_relaxed);
  if (!crypto::verify(password, stored)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (verified_.size() >= verified_max) {  // bounded: the expired go first, then everything
    for (auto it = verified_.begin(); it != verified_.end();)
      it = now >= it->second.expires_s ? verified_.erase(it) : std::next(it);
    if (verified_.size() >= verified_max) verified_.clear();
  }
  verified_[key] = proof{stored, now + verified_ttl_s};
  return true;
}

std::optional<authenticator::stored_user> authenticator::find_user(const std::string& name) {
  std::string admin = cfg_.get("admins", name);
  if (!admin.empty()) return stored_user{admin, {"_admin"}};
  auto db = coord_.catalog().find(users_db);
  if (!db) return std::nullopt;
  std::string id = user_prefix + name;
  auto snap = coord_.read_for(*db, id);
  doc_info d;
  std::string body;
  if (!snap || !snap->doc(id, d) || !snap->winner_body(d, body)) {
    return std::nullopt;
  }
  auto j = parse_json(body);
  if (!j || !j->is_object() || !(*j)["derived_key"].is_string() || !(*j)["salt"].is_string() ||
      !(*j)["iterations"].is_number_integer()) {
    return std::nullopt;
  }
  std::string prf = j->value("pbkdf2_prf", std::string("sha"));
  stored_user u;
  u.hash = std::string(prf == "sha256" ? "-pbkdf2:sha256-" : "-pbkdf2-") + (*j)["derived_key"].get<std::string>() +
           "," + (*j)["salt"].get<std::string>() + "," + std::to_string((*j)["iterations"].get<int64_t>());
  if ((*j)["roles"].is_array()) {
    for (auto& r : (*j)["roles"])
      if (r.is_string()) u.roles.push_back(r.get<std::string>());
  }
  return u;
}

bool authenticator::is_server_admin(const std::string& name) {
  auto u = find_user(name);
  return u && std::find(u->roles.begin(), u->roles.end(), "_admin") != u->roles.end();
}

std::optional<user_ctx> authenticator::check_password(const std::string& name, const std::string& password) {
  std::string stored;
  return check_password(name, password, stored);
}

std::optional<user_ctx> authenticator::check_password(const std::string& name, const std::string& password,
                                                      std::string& stored) {
  auto u = find_user(name);
  if (!u) {
    // The same key derivation as for a known user, so the answer's timing does not tell whether
    // the name exists.
    static const std::string dummy = crypto::hash("settee-dummy-password");
    crypto::verify(password, dummy);
    return std::nullopt;
  }
  if (!verify_cached(name, password, u->hash)) return std::nullopt;
  stored = std::move(u->hash);
  user_ctx ctx;
  ctx.name = name;
  ctx.roles = std::move(u->roles);
  return ctx;
}

std::optional<user_ctx> authenticator::check_basic(const std::string& authorization, auth_memo* memo) {
  int64_t now = clk_.now_s();
  if (memo) {  // the connection's last request proved this header: only a changed password undoes it
    std::string name, stored;
    {
      std::lock_guard<std::mutex> lock(memo->mu);
      if (memo->authorization == authorization && now < memo->expires_s) name = memo->name, stored = memo->stored;
    }
    if (!name.empty()) {
      auto u = find_user(name);
      if (u && u->hash == stored) {
        metrics::node().auth_cache_hits.fetch_add(1, std::memory_order_relaxed);
        user_ctx ctx;
        ctx.name = std::move(name);
        ctx.roles = std::move(u->roles);  // as they are now
        return ctx;
      }
    }
  }
  std::string decoded, stored;
  size_t colon;
  if (!crypto::base64_decode(authorization.substr(6), decoded) || (colon = decoded.find(':')) == std::string::npos)
    return std::nullopt;
  auto u = check_password(decoded.substr(0, colon), decoded.substr(colon + 1), stored);
  if (u && memo && !u->name->empty()) {
    std::lock_guard<std::mutex> lock(memo->mu);
    memo->authorization = authorization;
    memo->name = *u->name;
    memo->stored = std::move(stored);
    memo->expires_s = now + verified_ttl_s;
  }
  return u;
}

std::string authenticator::make_cookie(const std::string& name) {
  auto u = find_user(name);
  char hex_time[20];
  std::snprintf(hex_time, sizeof hex_time, "%llX", static_cast<unsigned long long>(clk_.now_s()));
  std::string payload = name + ":" + hex_time;
  // Keyed by the user's stored hash too: changing the password invalidates old cookies.
  std::string mac = crypto::hmac_sha256_hex(cookie_secret(*cfg_.current()) + (u ? u->hash : ""), payload);
  return crypto::base64_encode(payload + ":" + mac, true);
}

std::vector<std::string> authenticator::handlers(const config& cfg) {
  // As CouchDB's [chttpd] authentication_handlers: the handlers named, in their order.
  const std::string text = cfg.get("chttpd", "authentication_handlers");
  if (text.empty()) return {"cookie", "default"};
  std::vector<std::pair<size_t, std::string>> found;
  for (const char* h : {"cookie", "default", "jwt", "proxy"}) {
    size_t at = text.find(std::string(h) + "_authentication_handler");
    if (at != std::string::npos) found.emplace_back(at, h);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

std::optional<authenticator::cookie_proof> authenticator::proven_cookie(const std::string& value, auth_memo* memo) {
  if (memo) {
    std::lock_guard<std::mutex> lock(memo->mu);
    if (memo->cookie == value)
      return cookie_proof{memo->cookie_name, memo->cookie_stored, memo->cookie_secret, memo->cookie_issued};
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cookies_.find(value);
  if (it == cookies_.end()) return std::nullopt;
  return it->second;
}

void authenticator::remember_cookie(const std::string& value, const cookie_proof& p, auth_memo* memo, int64_t expires) {
  if (memo) {
    std::lock_guard<std::mutex> lock(memo->mu);
    memo->cookie = value;
    memo->cookie_name = p.name;
    memo->cookie_stored = p.stored;
    memo->cookie_secret = p.secret;
    memo->cookie_issued = p.issued;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (cookies_.size() >= verified_max) {  // bounded: the expired go first, then everything
    const int64_t now = clk_.now_s();
    for (auto it = cookies_.begin(); it != cookies_.end();)
      it = now >= it->second.expires ? cookies_.erase(it) : std::next(it);
    if (cookies_.size() >= verified_max) cookies_.clear();
  }
  cookie_proof stored = p;
  stored.expires = expires;
  cookies_[value] = std::move(stored);
}

std::optional<user_ctx> authenticator::check_cookie(const std::string& value, const config& cfg, auth_memo* memo,
                                                    bool& renew) {
  const int64_t now = clk_.now_s();
  const int64_t timeout = cfg.get_int("chttpd_auth", "timeout", 600);
  const std::string secret = cookie_secret(cfg);
  // A cookie proved before (on this connection, or on any within its life) is answered from that
  // proof while the user's stored hash and the secret are the ones it was proved with.
  auto proof = proven_cookie(value, memo);
  std::optional<stored_user> u;
  if (proof && proof->secret == secret) {
    u = find_user(proof->name);
    if (!u || u->hash != proof->stored) proof.reset();
  } else {
    proof.reset();
  }
  if (!proof) {
    std::string decoded;
    size_t c1, c2;
    if (!crypto::base64_decode(value, decoded) || (c1 = decoded.find(':')) == std::string::npos ||
        (c2 = decoded.find(':', c1 + 1)) == std::string::npos)
      return std::nullopt;
    std::string name = decoded.substr(0, c1);
    std::string hex_time = decoded.substr(c1 + 1, c2 - c1 - 1);
    char* endp = nullptr;
    long long issued = std::strtoll(hex_time.c_str(), &endp, 16);
    if (!endp || *endp != '\0' || hex_time.empty()) return std::nullopt;
    u = find_user(name);
    if (!u) return std::nullopt;
    std::string mac = crypto::hmac_sha256_hex(secret + u->hash, name + ":" + hex_time);
    if (!crypto::equal_ct(mac, decoded.substr(c2 + 1))) return std::nullopt;
    proof = cookie_proof{std::move(name), u->hash, secret, issued};
    remember_cookie(value, *proof, memo, issued + timeout);
  }
  if (now >= proof->issued + timeout) return std::nullopt;
  // As couch_httpd_auth: a fresh cookie once a tenth of the timeout has passed.
  renew = proof->issued + timeout - now < timeout * 9 / 10;
  user_ctx ctx;
  ctx.name = std::move(proof->name);
  ctx.roles = std::move(u->roles);
  ctx.authenticated_by = "cookie";
  return ctx;
}

// [chttpd_auth] x_auth_* headers, trusted when signed with the secret (proxy_use_secret, true
// unless set false: settee's default; CouchDB's is false).
std::optional<user_ctx> authenticator::check_proxy(const http_request& req, const config& cfg) {
  auto setting = [&](const char* key, const char* def) {
    return cfg.get("chttpd_auth", key, cfg.get("couch_httpd_auth", key, def));
  };
  const std::string name_header = setting("x_auth_username", "X-Auth-CouchDB-UserName");
  if (!req.has_header(name_header.c_str())) return std::nullopt;
  const std::string name = req.get_header_value(name_header.c_str());
  if (setting("proxy_use_secret", "true") != "false") {
    const std::string secret = cookie_secret(cfg);
    const std::string token = req.get_header_value(setting("x_auth_token", "X-Auth-CouchDB-Token").c_str());
    std::string lowered = token;
    for (char& ch : lowered) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (secret.empty() || lowered.empty()) return std::nullopt;
    // CouchDB's [chttpd_auth] hash_algorithms: sha256, then sha (HMAC-SHA1) for older proxies.
    if (!crypto::equal_ct(crypto::hmac_sha256_hex(secret, name), lowered) &&
        !crypto::equal_ct(crypto::hmac_sha1_hex(secret, name), lowered))
      return std::nullopt;
  }
  user_ctx ctx;
  ctx.name = name;
  ctx.roles = config::split_list(req.get_header_value(setting("x_auth_roles", "X-Auth-CouchDB-Roles").c_str()));
  ctx.authenticated_by = "proxy";
  return ctx;
}

std::string authenticator::session_cookie(const std::string& name) {
  return "AuthSession=" + make_cookie(name) +
         "; Version=1; Path=/; HttpOnly; SameSite=Lax; Max-Age=" + std::to_string(cookie_timeout_s());
}

result<user_ctx> authenticator::authenticate(const http_request& req) {
  const auto cfg = cfg_.current();
  const std::string authz = req.get_header_value("Authorization");
  for (const std::string& h : handlers(*cfg)) {
    if (h == "default" && authz.rfind("Basic ", 0) == 0) {
      auto u = check_basic(authz, req.memo.get());
      if (!u) return status{errc::unauthorized, "Name or password is incorrect."};
      u->authenticated_by = "default";
      return *u;
    }
    if (h == "jwt" && authz.rfind("Bearer ", 0) == 0) {
      auto id = jwt::authenticate(authz.substr(7), *cfg, clk_.now_s());
      if (!id) return id.error();
      user_ctx ctx;
      ctx.name = std::move(id->name);
      ctx.roles = std::move(id->roles);
      ctx.authenticated_by = "jwt";
      return ctx;
    }
    if (h == "proxy") {
      if (auto u = check_proxy(req, *cfg)) return *u;
    }
    if (h == "cookie") {
      const std::string cookies = req.get_header_value("Cookie");
      size_t at = cookies.find("AuthSession=");
      if (at == std::string::npos) continue;
      size_t start = at + 12, end = cookies.find(';', start);
      bool renew = false;
      auto u = check_cookie(cookies.substr(start, end == std::string::npos ? std::string::npos : end - start), *cfg,
                            req.memo.get(), renew);
      if (!u) continue;  // a bad or expired cookie counts as none, as in CouchDB
      u->renew_cookie = renew;
      return *u;
    }
  }
  return user_ctx{};
}

status authenticator::require_server_admin(const user_ctx& u) {
  if (u.is_admin()) return {};
  if (!u.name) return {errc::unauthorized, "You are not a server admin."};
  return {errc::forbidden, "You are not a server admin."};
}

status authenticator::require_db_admin(const user_ctx& u, const json& security) {
  if (u.is_admin()) return {};
  if (security.is_object() && security.contains("admins") && listed(u, security["admins"])) return {};
  if (!u.name) return {errc::unauthorized, "You are not a db or server admin."};
  return {errc::forbidden, "You are not a db or server admin."};
}

status authenticator::require_member(const user_ctx& u, const json& security) {
  if (u.is_admin()) return {};
  if (section_empty(security, "members")) return {};  // no members: the database is public
  if (listed(u, security["members"])) return {};
  if (security.contains("admins") && listed(u, security["admins"])) return {};
  if (!u.name) return {errc::unauthorized, "You are not authorized to access this db."};
  return {errc::forbidden, "You are not allowed to access this db."};
}

void authenticator::hash_user_password(json& doc) {
  if (!doc.is_object() || !doc.contains("password") || !doc["password"].is_string()) return;
  std::string stored = crypto::hash(doc["password"].get<std::string>());
  // "-pbkdf2:sha256-<key>,<salt>,<iterations>"
  std::string rest = stored.substr(15);
  size_t c1 = rest.find(','), c2 = rest.find(',', c1 + 1);
  doc.erase("password");
  doc["password_scheme"] = "pbkdf2";
  doc["pbkdf2_prf"] = "sha256";
  doc["derived_key"] = rest.substr(0, c1);
  doc["salt"] = rest.substr(c1 + 1, c2 - c1 - 1);
  doc["iterations"] = std::atoll(rest.c_str() + c2 + 1);
}

}  // namespace settee
