#include <doctest/doctest.h>

#include "cluster/peer_auth.hpp"

using namespace settee;

TEST_CASE("peer_auth: a proof binds the secret, both nonces, the name and the direction") {
  const std::string secret = "0123456789abcdef0123", ns = peer_auth::new_nonce(), nc = peer_auth::new_nonce();
  CHECK(ns.size() == 64);
  CHECK(ns != nc);
  std::string p = peer_auth::client_proof(secret, ns, nc, "n1@h");
  CHECK(peer_auth::matches(p, peer_auth::client_proof(secret, ns, nc, "n1@h")));
  CHECK_FALSE(peer_auth::matches(p, peer_auth::client_proof("0123456789abcdef0124", ns, nc, "n1@h")));
  CHECK_FALSE(peer_auth::matches(p, peer_auth::client_proof(secret, peer_auth::new_nonce(), nc, "n1@h")));
  CHECK_FALSE(peer_auth::matches(p, peer_auth::client_proof(secret, ns, peer_auth::new_nonce(), "n1@h")));
  CHECK_FALSE(peer_auth::matches(p, peer_auth::client_proof(secret, ns, nc, "n2@h")));
  // A client's proof is not a server's proof for the same values.
  CHECK_FALSE(peer_auth::matches(p, peer_auth::server_proof(secret, ns, nc, "n1@h")));
  // Length-prefixed fields: moving a character from one field to the next changes the proof.
  CHECK(peer_auth::client_proof(secret, "ab", "c", "n") != peer_auth::client_proof(secret, "a", "bc", "n"));
  CHECK_FALSE(peer_auth::matches("", ""));
}
