#include "cluster/cluster_tls.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

#include "node/crypto.hpp"

namespace settee {

namespace {

template <class T, void (*Free)(T*)>
struct deleter {
  void operator()(T* p) const { Free(p); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, deleter<EVP_PKEY, EVP_PKEY_free>>;
using x509_ptr = std::unique_ptr<X509, deleter<X509, X509_free>>;
using bio_ptr = std::unique_ptr<BIO, deleter<BIO, BIO_free_all>>;

status failed(const char* what) {
  return {errc::internal, std::string("cluster TLS: cannot ") + what};
}

std::string bio_text(BIO* b) {
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  return std::string(data, static_cast<size_t>(n));
}

bool add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ext) return false;
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A certificate for `key` named `cn`, issued by `issuer_name` and signed with `signer`.
x509_ptr make_cert(EVP_PKEY* key, const char* cn, X509* issuer, EVP_PKEY* signer, int64_t not_before, int64_t not_after,
                   bool ca) {
  x509_ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), 2) != 1) return nullptr;
  unsigned char serial[16];
  if (ca) {
    std::fill(std::begin(serial), std::end(serial), 0);
    serial[15] = 1;
  } else if (RAND_bytes(serial, sizeof serial) != 1) {
    return nullptr;
  }
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  bool serial_ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  if (!serial_ok) return nullptr;
  if (!ASN1_TIME_set(X509_getm_notBefore(cert.get()), static_cast<time_t>(not_before)) ||
      !ASN1_TIME_set(X509_getm_notAfter(cert.get()), static_cast<time_t>(not_after))) {
    return nullptr;
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn), -1, -1, 0) !=
      1) {
    return nullptr;
  }
  X509* issuer_cert = issuer ? issuer : cert.get();
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(issuer_cert)) != 1 ||
      X509_set_pubkey(cert.get(), key) != 1) {
    return nullptr;
  }
  bool ext_ok =
      ca ? add_ext(cert.get(), issuer_cert, NID_basic_constraints, "critical,CA:TRUE") &&
               add_ext(cert.get(), issuer_cert, NID_key_usage, "critical,keyCertSign,cRLSign")
         : add_ext(cert.get(), issuer_cert, NID_basic_constraints, "critical,CA:FALSE") &&
               add_ext(cert.get(), issuer_cert, NID_key_usage, "critical,digitalSignature") &&
               add_ext(cert.get(), issuer_cert, NID_ext_key_usage, "serverAuth,clientAuth") &&
               add_ext(cert.get(), issuer_cert, NID_subject_alt_name, (std::string("DNS:") + tls_peer_name).c_str());
  if (!ext_ok) return nullptr;
  if (X509_sign(cert.get(), signer, nullptr) == 0) return nullptr;  // Ed25519: no separate digest
  return cert;
}

}  // namespace

result<tls_material> make_tls_material(const std::string& cluster_secret, int64_t now_s) {
  // The CA key: the same 32-byte Ed25519 seed on every node holding the secret.
  std::string seed_hex = crypto::hmac_sha256_hex(cluster_secret, "settee-tls-ca-1");
  unsigned char seed[32];
  for (size_t i = 0; i < 32; ++i)
    seed[i] = static_cast<unsigned char>(std::stoi(seed_hex.substr(2 * i, 2), nullptr, 16));
  pkey_ptr ca_key(EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, seed, sizeof seed));
  OPENSSL_cleanse(seed, sizeof seed);
  if (!ca_key) return failed("derive the cluster CA key");
  // Fixed validity and serial: the CA's subject and key are what peers match.
  constexpr int64_t ca_from = 946684800, ca_until = 4102444800;  // 2000-01-01 .. 2100-01-01
  x509_ptr ca = make_cert(ca_key.get(), "settee cluster CA", nullptr, ca_key.get(), ca_from, ca_until, true);
  if (!ca) return failed("make the cluster CA certificate");

  pkey_ptr node_key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  if (!node_key) return failed("make a node key");
  constexpr int64_t day = 86400;
  x509_ptr node =
      make_cert(node_key.get(), tls_peer_name, ca.get(), ca_key.get(), now_s - day, now_s + 3650 * day, false);
  if (!node) return failed("make the node certificate");

  tls_material out;
  bio_ptr b1(BIO_new(BIO_s_mem())), b2(BIO_new(BIO_s_mem())), b3(BIO_new(BIO_s_mem()));
  if (!b1 || !b2 || !b3 || PEM_write_bio_X509(b1.get(), ca.get()) != 1 ||
      PEM_write_bio_X509(b2.get(), node.get()) != 1 ||
      PEM_write_bio_PrivateKey(b3.get(), node_key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return failed("encode the certificates");
  }
  out.ca_cert_pem = bio_text(b1.get());
  out.node_cert_pem = bio_text(b2.get());
  out.node_key_pem = bio_text(b3.get());
  return out;
}

bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

}  // namespace settee
