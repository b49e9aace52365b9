// jwt: JSON Web Token checks as CouchDB's jwtf and jwt_authentication_handler make them
// (docs/security.md "JWT"). A token "header.payload.signature" (base64url) is accepted when:
//  - its `alg` is one of HS256/384/512, RS256/384/512, ES256/384/512 ("none" and anything else:
//    "Invalid alg header parameter");
//  - the key is found in [jwt_keys] under "<kty>:<kid>" where kty follows from alg alone (hmac for
//    HS*, rsa for RS*, ec for ES*) and kid is the header's `kid` or "_default": an RSA public key
//    is never taken as an HMAC secret (no algorithm confusion); hmac keys are base64, rsa and ec
//    keys PEM (newlines may be written "\n");
//  - the signature verifies (ES* as JOSE r||s);
//  - [jwt_auth] required_claims hold ("exp, iat, nbf, iss, kid, typ", or {iss, "value"});
//  - exp is in the future and nbf in the past on the node's clock. Better than CouchDB: they are
//    checked whenever present, not only when required.
// The user is the `sub` claim, the roles [jwt_auth] roles_claim_path (dots, "\." for a dot in a
// name) or roles_claim_name (default "_couchdb.roles"): a list of strings or one comma list.
// Every refusal is errc::unauthorized with CouchDB's reason. Pure apart from OpenSSL.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "node/config.hpp"
#include "node/error.hpp"
#include "node/json.hpp"

namespace settee::jwt {

struct identity {
  std::string name;
  std::vector<std::string> roles;
};

// Whether [jwt_auth] required_claims reads and every [jwt_keys] entry is a key of its kind
// ("hmac:<kid>" base64, "rsa:<kid>" / "ec:<kid>" a PEM public key): bad_request naming the key.
status check_config(const config& cfg);

// The user `token` proves under `cfg` ([jwt_auth], [jwt_keys]) at `now_s`.
result<identity> authenticate(const std::string& token, const config& cfg, int64_t now_s);

}  // namespace settee::jwt
