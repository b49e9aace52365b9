#include <doctest/doctest.h>

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "cluster/cluster_tls.hpp"

using namespace settee;

namespace {

X509* read_cert(const std::string& pem) {
  BIO* b = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* x = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
  BIO_free(b);
  return x;
}

// Whether `leaf_pem` verifies against `ca_pem` alone (as a peer's TLS stack checks it).
bool verifies(const std::string& ca_pem, const std::string& leaf_pem) {
  X509* ca = read_cert(ca_pem);
  X509* leaf = read_cert(leaf_pem);
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  bool ok = X509_verify_cert(ctx) == 1;
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  X509_free(leaf);
  X509_free(ca);
  return ok;
}

}  // namespace

TEST_CASE("cluster_tls: nodes with one secret trust each other's certificates, others do not") {
  const int64_t now = 1795000000;
  auto a = make_tls_material("the-cluster-secret-0123456789", now);
  auto b = make_tls_material("the-cluster-secret-0123456789", now + 100);
  auto other = make_tls_material("some-other-secret-0123456789", now);
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(other);
  CHECK(a->node_key_pem != b->node_key_pem);  // a fresh node key each start
  CHECK(verifies(a->ca_cert_pem, b->node_cert_pem));
  CHECK(verifies(b->ca_cert_pem, a->node_cert_pem));
  CHECK(verifies(a->ca_cert_pem, a->node_cert_pem));
  CHECK_FALSE(verifies(other->ca_cert_pem, a->node_cert_pem));
  CHECK_FALSE(verifies(a->ca_cert_pem, other->node_cert_pem));
  CHECK(a->node_key_pem.find("PRIVATE KEY") != std::string::npos);
}

TEST_CASE("cluster_tls: tls = auto means on unless RPC listens on loopback") {
  CHECK(is_loopback_host("127.0.0.1"));
  CHECK(is_loopback_host("127.1.2.3"));
  CHECK(is_loopback_host("localhost"));
  CHECK(is_loopback_host("::1"));
  CHECK_FALSE(is_loopback_host("0.0.0.0"));
  CHECK_FALSE(is_loopback_host("10.0.0.5"));
  CHECK_FALSE(is_loopback_host("db1.example.org"));
}
