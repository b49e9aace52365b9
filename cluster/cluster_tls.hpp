// cluster_tls: the certificates that encrypt node-to-node RPC between hosts (OpenSSL underneath).
//
// No PKI to run: the cluster secret is the root of trust. Every node derives the same Ed25519
// "cluster CA" key from the secret (HMAC-SHA256(secret, "settee-tls-ca-1") as the key seed) and
// issues itself a fresh node certificate under it at start-up. Peers trust exactly that CA, on both
// sides (mutual TLS), and check the name `tls_peer_name`. So only holders of the secret can be on
// either end of a connection, and a man in the middle who relays the RPC handshake sees only
// ciphertext. (The challenge-response of cluster/peer_auth still runs inside the tunnel.)
// Thread-safety: pure functions.
#pragma once
#include <cstdint>
#include <string>

#include "node/error.hpp"

namespace settee {

// The name every node certificate carries and every client expects (not a DNS name of the host:
// trust comes from the CA, which only secret holders can sign with).
constexpr const char* tls_peer_name = "settee-node";

struct tls_material {
  std::string ca_cert_pem;    // the cluster CA (same key and subject on every node)
  std::string node_cert_pem;  // this node's certificate, issued by the cluster CA
  std::string node_key_pem;   // its private key (PKCS#8), new at every start
};

// `now_s` (Unix seconds) starts the node certificate's validity (a day earlier, for clock skew).
result<tls_material> make_tls_material(const std::string& cluster_secret, int64_t now_s);

// Whether `host` names a loopback address (127.0.0.0/8, ::1, localhost): `[cluster] tls = auto`
// turns TLS on for any other RPC bind address.
bool is_loopback_host(const std::string& host);

}  // namespace settee
