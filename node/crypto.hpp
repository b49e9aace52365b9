// crypto: password hashing, digests and secrets for authentication (OpenSSL underneath).
// Stored form follows CouchDB's hashed admin strings: "-pbkdf2:sha256-<hex key>,<hex salt>,<iterations>".
// Plain "-pbkdf2-<hex key>,<hex salt>,<iterations>" (SHA-1, CouchDB < 3.4) is accepted when verifying.
#pragma once
#include <initializer_list>
#include <string>
#include <string_view>

namespace settee::crypto {

// Number of PBKDF2 iterations for new hashes.
constexpr int default_iterations = 50000;

std::string hash(const std::string& plain, int iterations = default_iterations);
bool verify(const std::string& plain, const std::string& stored);
bool is_hashed(const std::string& stored);

// `n` random bytes as lowercase hex.
std::string random_hex(size_t n);
std::string to_hex(const unsigned char* data, size_t n);
std::string hmac_sha256_hex(const std::string& key, const std::string& message);
std::string hmac_sha1_hex(const std::string& key, const std::string& message);  // proxy tokens of old proxies
std::string sha256_hex(const std::string& data);
std::string sha1_hex(const std::string& data);  // generated Mango index names (mango_idx:gen_name)
std::string sha256(std::string_view data);      // the 32 raw bytes
std::string md5_hex(const std::string& data);
std::string md5_hex(std::initializer_list<std::string_view> parts);  // of their concatenation
// The first 16 bytes of the SHA-256 of their concatenation, as hex (the width of md5_hex).
std::string sha256_128_hex(std::initializer_list<std::string_view> parts);
std::string md5(const std::string& data);  // the 16 raw bytes
// A digest of bytes that arrive in pieces (a large attachment): update() each, then final() for the
// raw bytes (once).
class hasher {
 public:
  enum class algo { md5, sha256 };
  explicit hasher(algo a);
  ~hasher();
  hasher(const hasher&) = delete;
  hasher& operator=(const hasher&) = delete;
  void update(std::string_view piece);
  std::string final();

 private:
  void* ctx_;  // EVP_MD_CTX
};

// Constant-time comparison of two strings.
bool equal_ct(const std::string& a, const std::string& b);

}  // namespace settee::crypto

namespace settee::crypto {

// Standard base64 (with padding) and base64url (no padding) encoders; the decoder accepts both
// alphabets, with or without padding, and returns false on anything else.
std::string base64_encode(const std::string& data, bool url = false);
bool base64_decode(const std::string& text, std::string& out);

// CRC-32 (zlib's) of `data`, continuing from `crc` (0 to start): a checksum against corruption,
// not against forgery.
uint32_t crc32(std::string_view data, uint32_t crc = 0);

}  // namespace settee::crypto
