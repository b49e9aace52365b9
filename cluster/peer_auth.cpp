#include "cluster/peer_auth.hpp"

#include "node/crypto.hpp"

namespace settee::peer_auth {

namespace {

// Fields are length-prefixed so that no two different tuples give the same message.
std::string message(const char* role, const std::string& a, const std::string& b, const std::string& name) {
  std::string m = role;
  for (const std::string* f : {&a, &b, &name}) m += "|" + std::to_string(f->size()) + ":" + *f;
  return m;
}

}  // namespace

std::string new_nonce() {
  return crypto::random_hex(32);
}

std::string client_proof(const std::string& secret, const std::string& server_nonce, const std::string& client_nonce,
                         const std::string& client_name) {
  return crypto::hmac_sha256_hex(secret, message("settee-rpc-1 client", server_nonce, client_nonce, client_name));
}

std::string server_proof(const std::string& secret, const std::string& client_nonce, const std::string& server_nonce,
                         const std::string& server_name) {
  return crypto::hmac_sha256_hex(secret, message("settee-rpc-1 server", client_nonce, server_nonce, server_name));
}

bool matches(const std::string& expected, const std::string& received) {
  return !expected.empty() && crypto::equal_ct(expected, received);
}

}  // namespace settee::peer_auth
