// peer_auth: how two nodes prove to each other that they hold the cluster secret (pure logic, no I/O).
//
// Every RPC connection starts with a challenge-response in both directions:
//   1. the dialling node calls `challenge`; the server answers a fresh random nonce Ns, good for one
//      handshake on that connection only (a recorded handshake cannot be replayed on another);
//   2. the dialling node sends `handshake` with its own nonce Nc and
//      client_proof = HMAC-SHA256(secret, "settee-rpc-1 client" | Ns | Nc | its name);
//   3. the server checks it (constant time), then answers with
//      server_proof = HMAC-SHA256(secret, "settee-rpc-1 server" | Nc | Ns | its name),
//      which the dialling node checks before it sends the peer anything else.
// The secret itself never crosses the wire. docs/security.md has the threat model.
// Thread-safety: pure functions.
#pragma once
#include <string>

namespace settee::peer_auth {

// Shortest accepted cluster secret, in bytes (a generated one is 64 hex characters).
constexpr size_t min_secret_bytes = 16;

std::string new_nonce();
std::string client_proof(const std::string& secret, const std::string& server_nonce, const std::string& client_nonce,
                         const std::string& client_name);
std::string server_proof(const std::string& secret, const std::string& client_nonce, const std::string& server_nonce,
                         const std::string& server_name);
// Constant-time check of a received proof against the expected one.
bool matches(const std::string& expected, const std::string& received);

}  // namespace settee::peer_auth
