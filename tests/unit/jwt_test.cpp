// node/jwt with HMAC tokens made here (OpenSSL's HMAC); RSA and EC tokens signed by another library
// are in tests/integration/test_jwt.py.
#include <doctest/doctest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "node/crypto.hpp"
#include "node/jwt.hpp"

using namespace settee;

namespace {

const std::string secret = "sixteen byte key";
const int64_t now = 2000000000;

std::string b64url(const std::string& s) {
  std::string out = crypto::base64_encode(s, true);
  while (!out.empty() && out.back() == '=') out.pop_back();
  return out;
}

std::string token(const json& header, const json& claims, const std::string& key = secret) {
  std::string message = b64url(header.dump()) + "." + b64url(claims.dump());
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), mac, &n);
  return message + "." + b64url(std::string(reinterpret_cast<char*>(mac), n));
}

config cfg(const std::string& extra = "") {
  return *config::parse("[jwt_keys]\nhmac:_default = " + crypto::base64_encode(secret) + "\n" + extra);
}

std::string refusal(const std::string& t, const config& c = cfg(), int64_t at = now) {
  auto r = jwt::authenticate(t, c, at);
  if (r) return "accepted";
  CHECK(r.error().code == errc::unauthorized);
  return r.error().reason;
}

const json hs256 = {{"alg", "HS256"}, {"typ", "JWT"}};

}  // namespace

TEST_CASE("jwt: a good HS256 token gives its sub and roles") {
  auto r =
      jwt::authenticate(token(hs256, {{"sub", "ann"}, {"exp", now + 1}, {"_couchdb.roles", {"a", "b"}}}), cfg(), now);
  REQUIRE(r);
  CHECK(r->name == "ann");
  CHECK(r->roles == std::vector<std::string>{"a", "b"});
  auto no_roles = jwt::authenticate(token(hs256, {{"sub", "ann"}, {"exp", now + 1}}), cfg(), now);
  REQUIRE(no_roles);
  CHECK(no_roles->roles.empty());
}

TEST_CASE("jwt: exp and nbf on the given clock, strictly, checked whenever present") {
  CHECK(refusal(token(hs256, {{"sub", "a"}, {"exp", now}})) == "exp not in future");
  CHECK(refusal(token(hs256, {{"sub", "a"}, {"exp", now + 1}})) == "accepted");
  CHECK(refusal(token(hs256, {{"sub", "a"}, {"exp", "tomorrow"}})) == "exp not in future");
  CHECK(refusal(token(hs256, {{"sub", "a"}, {"exp", now + 9}, {"nbf", now}})) == "nbf not in past");
  CHECK(refusal(token(hs256, {{"sub", "a"}, {"exp", now + 9}, {"nbf", now - 1}})) == "accepted");
  CHECK(refusal(token(hs256, {{"sub", "a"}})) == "Missing exp claim");  // required by default
  const config none = cfg("[jwt_auth]\nrequired_claims =\n");
  CHECK(refusal(token(hs256, {{"sub", "a"}}), none) == "accepted");
  // Not required, but present and past: refused all the same (CouchDB would let it in).
  CHECK(refusal(token(hs256, {{"sub", "a"}, {"exp", now - 5}}), none) == "exp not in future");
}

TEST_CASE("jwt: required claims as CouchDB writes them") {
  const config c = cfg("[jwt_auth]\nrequired_claims = exp, iat, {iss, \"https://i.example\"}\n");
  json ok = {{"sub", "a"}, {"exp", now + 9}, {"iat", now}, {"iss", "https://i.example"}};
  CHECK(refusal(token(hs256, ok), c) == "accepted");
  json bad = ok;
  bad["iss"] = "https://other.example";
  CHECK(refusal(token(hs256, bad), c) == "Invalid iss claim");
  bad = ok;
  bad.erase("iat");
  CHECK(refusal(token(hs256, bad), c) == "Missing iat claim");
  bad["iat"] = "now";
  CHECK(refusal(token(hs256, bad), c) == "Invalid iat claim");
  const config typ = cfg("[jwt_auth]\nrequired_claims = exp, typ, kid\n");
  CHECK(refusal(token({{"alg", "HS256"}}, ok), typ) == "Missing typ header parameter");
  CHECK(refusal(token({{"alg", "HS256"}, {"typ", "JWS"}}, ok), typ) == "Invalid typ header parameter");
  CHECK(refusal(token(hs256, ok), typ) == "Missing kid claim");
  CHECK(jwt::check_config(cfg("[jwt_auth]\nrequired_claims = nonsense\n")).code == errc::bad_request);
  CHECK(jwt::check_config(c));
}

TEST_CASE("jwt: what is not a token, or not signed by the key, is refused with CouchDB's reason") {
  json claims = {{"sub", "a"}, {"exp", now + 9}};
  std::string good = token(hs256, claims);
  CHECK(refusal(good.substr(0, good.size() - 2) + "AA") == "Bad HMAC in authentication token");
  CHECK(refusal(token(hs256, claims, "another key")) == "Bad HMAC in authentication token");
  CHECK(refusal(token({{"alg", "none"}}, claims)) == "Invalid alg header parameter");
  CHECK(refusal(token({{"alg", "hs256"}}, claims)) == "Invalid alg header parameter");
  CHECK(refusal(token({{"typ", "JWT"}}, claims)) == "Missing alg header parameter");
  CHECK(refusal(token({{"alg", "HS256"}, {"kid", "k9"}}, claims)) == "Unknown kid");
  CHECK(refusal(token({{"alg", "RS256"}}, claims)) == "Unknown kid");  // no rsa:_default: never the hmac one
  CHECK(refusal(token(json::array({1}), claims)) == "Not an object");
  CHECK(refusal(token(hs256, "just a string")) == "Not an object");
  CHECK(refusal(token(hs256, {{"exp", now + 9}})) == "Token missing sub claim.");
  CHECK(refusal(token(hs256, {{"sub", 7}, {"exp", now + 9}})) == "Token missing sub claim.");
  for (const char* junk : {"", ".", "..", "a.b", "a.b.c.d", "@@.@@.@@"})
    CHECK(refusal(junk) == "Malformed authentication token");
  // The signature in base64 rather than base64url.
  CHECK(refusal(good.substr(0, good.rfind('.')) + ".ab+/cd==") == "Malformed authentication token");
}

TEST_CASE("jwt: roles from a name or a path, as a list or one comma list; anything else is malformed") {
  json claims = {{"sub", "a"}, {"exp", now + 9}, {"my", {{"roles.v2", {"x"}}, {"csv", "p, q ,r"}}}, {"flat", "s,t"}};
  auto roles = [&](const std::string& extra) {
    auto r = jwt::authenticate(token(hs256, claims), cfg("[jwt_auth]\n" + extra), now);
    REQUIRE(r);
    return r->roles;
  };
  CHECK(roles("roles_claim_name = flat\n") == std::vector<std::string>{"s", "t"});
  CHECK(roles("roles_claim_path = my.roles\\.v2\n") == std::vector<std::string>{"x"});
  CHECK(roles("roles_claim_path = my.csv\n") == std::vector<std::string>{"p", "q", "r"});
  CHECK(roles("roles_claim_path = my.nothing.here\n").empty());
  claims["_couchdb.roles"] = {"ok", 1};
  CHECK(refusal(token(hs256, claims)) == "Malformed token");
  claims["_couchdb.roles"] = {{"an", "object"}};
  CHECK(refusal(token(hs256, claims)) == "Malformed token");
}
