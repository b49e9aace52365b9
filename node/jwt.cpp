#include "node/jwt.hpp"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/decoder.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cctype>
#include <memory>
#include <optional>

#include "node/crypto.hpp"

namespace settee::jwt {

namespace {

status refused(const std::string& reason) {
  return {errc::unauthorized, reason};
}

struct algorithm {
  const char* name;
  const char* kty;  // the [jwt_keys] prefix
  const EVP_MD* (*md)();
  size_t ec_coordinate_bytes;  // ES*: the size of r and of s
};
const algorithm algorithms[] = {
    {"HS256", "hmac", EVP_sha256, 0}, {"HS384", "hmac", EVP_sha384, 0}, {"HS512", "hmac", EVP_sha512, 0},
    {"RS256", "rsa", EVP_sha256, 0},  {"RS384", "rsa", EVP_sha384, 0},  {"RS512", "rsa", EVP_sha512, 0},
    {"ES256", "ec", EVP_sha256, 32},  {"ES384", "ec", EVP_sha384, 48},  {"ES512", "ec", EVP_sha512, 66},
};

const algorithm* find_algorithm(const std::string& name) {
  for (const algorithm& a : algorithms)
    if (name == a.name) return &a;
  return nullptr;
}

// base64url without padding (as JWS writes it); false on anything else.
bool b64url_decode(const std::string& text, std::string& out) {
  if (text.find_first_of("+/=") != std::string::npos) return false;
  return crypto::base64_decode(text, out);
}

result<json> decoded_object(const std::string& part) {
  std::string raw;
  if (!b64url_decode(part, raw)) return refused("Malformed authentication token");
  auto j = parse_json(raw);
  if (!j) return refused("Malformed authentication token");
  if (!j->is_object()) return refused("Not an object");
  return std::move(*j);
}

// [jwt_auth] required_claims: names ("exp, iat") and {name, "value"} pairs, as CouchDB's regex reads them.
struct required_claim {
  std::string name;
  std::optional<std::string> value;
};

result<std::vector<required_claim>> required_claims(const config& cfg) {
  const std::string text = cfg.get("jwt_auth", "required_claims", "exp");
  std::vector<required_claim> out;
  for (size_t i = 0; i < text.size();) {
    if (std::islower(static_cast<unsigned char>(text[i]))) {
      size_t e = i;
      while (e < text.size() && std::islower(static_cast<unsigned char>(text[e]))) ++e;
      out.push_back({text.substr(i, e - i), std::nullopt});
      i = e;
    } else if (text[i] == '{') {
      size_t close = text.find('}', i);
      size_t q1 = text.find('"', i), q2 = q1 == std::string::npos ? q1 : text.find('"', q1 + 1);
      size_t comma = text.find(',', i);
      if (close == std::string::npos || q2 == std::string::npos || q2 > close || comma > q1) break;
      std::string name = text.substr(i + 1, comma - i - 1);
      name.erase(0, name.find_first_not_of(" \t"));
      name.erase(name.find_last_not_of(" \t") + 1);
      out.push_back({name, text.substr(q1 + 1, q2 - q1 - 1)});
      i = close + 1;
    } else {
      ++i;
    }
  }
  static const char* const known[] = {"alg", "exp", "iat", "iss", "kid", "nbf", "sig", "typ"};
  for (const auto& c : out) {
    bool ok = false;
    for (const char* k : known) ok = ok || c.name == k;
    if (!ok) return status{errc::internal, "JWT is not configured correctly"};
  }
  if (out.empty() && !text.empty()) return status{errc::internal, "JWT is not configured correctly"};
  return out;
}

const required_claim* required(const std::vector<required_claim>& claims, const char* name) {
  for (const auto& c : claims)
    if (c.name == name) return &c;
  return nullptr;
}

status check_claims(const json& payload, const std::vector<required_claim>& req, int64_t now_s) {
  if (const auto* iss = required(req, "iss")) {
    if (!payload.contains("iss")) return refused("Missing iss claim");
    if (iss->value && payload["iss"] != *iss->value) return refused("Invalid iss claim");
  }
  if (required(req, "iat")) {
    if (!payload.contains("iat")) return refused("Missing iat claim");
    if (!payload["iat"].is_number_integer()) return refused("Invalid iat claim");
  }
  if (required(req, "nbf") && !payload.contains("nbf")) return refused("Missing nbf claim");
  if (required(req, "exp") && !payload.contains("exp")) return refused("Missing exp claim");
  if (payload.contains("nbf")) {
    if (!payload["nbf"].is_number() || !(payload["nbf"].get<double>() < static_cast<double>(now_s)))
      return refused("nbf not in past");
  }
  if (payload.contains("exp")) {
    if (!payload["exp"].is_number() || !(payload["exp"].get<double>() > static_cast<double>(now_s)))
      return refused("exp not in future");
  }
  return {};
}

using pkey_ptr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

// A PEM public key (SubjectPublicKeyInfo, or PKCS#1 for RSA) of type `type` ("RSA" or "EC").
result<pkey_ptr> public_key(std::string pem, const char* type, const char* not_that) {
  for (size_t at = 0; (at = pem.find("\\n", at)) != std::string::npos;) pem.replace(at, 2, "\n");
  EVP_PKEY* key = nullptr;
  OSSL_DECODER_CTX* dctx =
      OSSL_DECODER_CTX_new_for_pkey(&key, "PEM", nullptr, type, EVP_PKEY_PUBLIC_KEY, nullptr, nullptr);
  if (!dctx) return refused("Not a valid key");
  const auto* data = reinterpret_cast<const unsigned char*>(pem.data());
  size_t len = pem.size();
  const bool ok = OSSL_DECODER_from_data(dctx, &data, &len) == 1;
  OSSL_DECODER_CTX_free(dctx);
  pkey_ptr owned(key, EVP_PKEY_free);
  if (!ok || !key) return refused(pem.find("-----BEGIN") == std::string::npos ? "Not a valid key" : not_that);
  if (!EVP_PKEY_is_a(key, type)) return refused(not_that);
  return owned;
}

// JOSE r||s to the DER an OpenSSL ECDSA verification takes.
std::optional<std::string> ecdsa_der(const std::string& jose, size_t coordinate) {
  if (jose.size() != 2 * coordinate) return std::nullopt;
  ECDSA_SIG* sig = ECDSA_SIG_new();
  BIGNUM* r = BN_bin2bn(reinterpret_cast<const unsigned char*>(jose.data()), static_cast<int>(coordinate), nullptr);
  BIGNUM* s = BN_bin2bn(reinterpret_cast<const unsigned char*>(jose.data()) + coordinate, static_cast<int>(coordinate),
                        nullptr);
  if (!sig || !r || !s || ECDSA_SIG_set0(sig, r, s) != 1) {
    BN_free(r), BN_free(s), ECDSA_SIG_free(sig);
    return std::nullopt;
  }
  unsigned char* der = nullptr;
  int n = i2d_ECDSA_SIG(sig, &der);
  ECDSA_SIG_free(sig);
  if (n <= 0) return std::nullopt;
  std::string out(reinterpret_cast<char*>(der), static_cast<size_t>(n));
  OPENSSL_free(der);
  return out;
}

bool verify_with(EVP_PKEY* key, const EVP_MD* md, const std::string& message, const std::string& sig) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx && EVP_DigestVerifyInit(ctx, nullptr, md, nullptr, key) == 1 &&
            EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                             reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

status verify_signature(const algorithm& alg, const std::string& key_text, const std::string& message,
                        const std::string& signature) {
  if (std::string(alg.kty) == "hmac") {
    std::string secret;
    if (!crypto::base64_decode(key_text, secret)) return refused("Not a valid key");
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!HMAC(alg.md(), secret.data(), static_cast<int>(secret.size()),
              reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &n))
      return refused("Bad HMAC in authentication token");
    if (!crypto::equal_ct(std::string(reinterpret_cast<char*>(mac), n), signature))
      return refused("Bad HMAC in authentication token");
    return {};
  }
  const bool rsa = std::string(alg.kty) == "rsa";
  auto key = public_key(key_text, rsa ? "RSA" : "EC", rsa ? "not an RSA public key" : "not an EC public key");
  if (!key) return key.error();
  std::string sig = signature;
  if (!rsa) {
    auto der = ecdsa_der(signature, alg.ec_coordinate_bytes);
    if (!der) return refused("Bad signature in authentication token");
    sig = std::move(*der);
  }
  if (!verify_with(key->get(), alg.md(), message, sig)) return refused("Bad signature in authentication token");
  return {};
}

result<std::vector<std::string>> roles_of(const json& claims, const config& cfg) {
  const json* at = &claims;
  json none = json::array();
  if (cfg.has("jwt_auth", "roles_claim_path")) {
    // Dots separate names; "\." is a dot inside one.
    const std::string path = cfg.get("jwt_auth", "roles_claim_path");
    std::vector<std::string> names(1);
    for (size_t i = 0; i < path.size(); ++i) {
      if (path[i] == '\\' && i + 1 < path.size() && path[i + 1] == '.') {
        names.back() += '.';
        ++i;
      } else if (path[i] == '.') {
        names.emplace_back();
      } else {
        names.back() += path[i];
      }
    }
    for (const auto& n : names) at = at->is_object() && at->contains(n) ? &(*at)[n] : &none;
  } else {
    const std::string name = cfg.get("jwt_auth", "roles_claim_name", "_couchdb.roles");
    at = claims.contains(name) ? &claims[name] : &none;
  }
  std::vector<std::string> roles;
  if (at->is_string()) return config::split_list(at->get<std::string>());  // one comma list
  if (!at->is_array()) return refused("Malformed token");
  for (const auto& r : *at) {
    if (!r.is_string()) return refused("Malformed token");
    roles.push_back(r.get<std::string>());
  }
  return roles;
}

}  // namespace

status check_config(const config& cfg) {
  if (!required_claims(cfg))
    return {errc::bad_request,
            "[jwt_auth] required_claims must list claims (exp, iat, nbf, iss, kid, typ) or "
            "{iss, \"value\"} pairs"};
  auto keys = cfg.sections().find("jwt_keys");
  if (keys == cfg.sections().end()) return {};
  for (const auto& [name, text] : keys->second) {
    const std::string kty = name.substr(0, name.find(':'));
    status st;
    if (name.find(':') == std::string::npos || (kty != "hmac" && kty != "rsa" && kty != "ec")) {
      st = refused("the name must be hmac:<kid>, rsa:<kid> or ec:<kid>");
    } else if (kty == "hmac") {
      std::string secret;
      if (!crypto::base64_decode(text, secret) || secret.empty()) st = refused("Not a valid key");
    } else {
      auto key = public_key(text, kty == "rsa" ? "RSA" : "EC",
                            kty == "rsa" ? "not an RSA public key" : "not an EC public key");
      if (!key) st = key.error();
    }
    if (!st) return {errc::bad_request, "[jwt_keys] " + name + ": " + st.reason};
  }
  return {};
}

result<identity> authenticate(const std::string& token, const config& cfg, int64_t now_s) {
  auto req = required_claims(cfg);
  if (!req) return req.error();
  const size_t d1 = token.find('.'), d2 = d1 == std::string::npos ? d1 : token.find('.', d1 + 1);
  if (d2 == std::string::npos || token.find('.', d2 + 1) != std::string::npos)
    return refused("Malformed authentication token");
  auto header = decoded_object(token.substr(0, d1));
  if (!header) return header.error();
  if (required(*req, "typ")) {
    if (!header->contains("typ")) return refused("Missing typ header parameter");
    if ((*header)["typ"] != "JWT") return refused("Invalid typ header parameter");
  }
  if (!header->contains("alg")) return refused("Missing alg header parameter");
  const algorithm* alg = (*header)["alg"].is_string() ? find_algorithm((*header)["alg"].get<std::string>()) : nullptr;
  if (!alg) return refused("Invalid alg header parameter");
  auto payload = decoded_object(token.substr(d1 + 1, d2 - d1 - 1));
  if (!payload) return payload.error();
  if (auto st = check_claims(*payload, *req, now_s); !st) return st;
  if (required(*req, "kid") && !header->contains("kid")) return refused("Missing kid claim");
  std::string kid = "_default";
  if (header->contains("kid")) {
    if (!(*header)["kid"].is_string()) return refused("Unknown kid");
    kid = (*header)["kid"].get<std::string>();
  }
  const std::string key_name = std::string(alg->kty) + ":" + kid;
  if (!cfg.has("jwt_keys", key_name)) return refused("Unknown kid");
  std::string signature;
  if (!b64url_decode(token.substr(d2 + 1), signature)) return refused("Malformed authentication token");
  if (auto st = verify_signature(*alg, cfg.get("jwt_keys", key_name), token.substr(0, d2), signature); !st) return st;
  if (!payload->contains("sub") || !(*payload)["sub"].is_string()) return refused("Token missing sub claim.");
  auto roles = roles_of(*payload, cfg);
  if (!roles) return roles.error();
  return identity{(*payload)["sub"].get<std::string>(), std::move(*roles)};
}

}  // namespace settee::jwt
