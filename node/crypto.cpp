#include "node/crypto.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <zlib.h>

#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace settee::crypto {

std::string to_hex(const unsigned char* data, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[data[i] >> 4];
    out[2 * i + 1] = digits[data[i] & 15];
  }
  return out;
}

std::string random_hex(size_t n) {
  std::vector<unsigned char> buf(n);
  if (RAND_bytes(buf.data(), static_cast<int>(n)) != 1) std::abort();  // no entropy: cannot go on safely
  return to_hex(buf.data(), n);
}

namespace {

// OpenSSL 3 looks an algorithm up in its provider (a lock and a search) on every use of EVP_sha256()
// and kin; fetched once here, a digest costs only itself (issue 34: 4.4% of a node's CPU under
// GET c=32 went to that lookup in the Basic-auth check).
const EVP_MD* fetched(const char* name, const EVP_MD* fallback) {
  const EVP_MD* md = EVP_MD_fetch(nullptr, name, nullptr);
  return md ? md : fallback;
}
const EVP_MD* sha256_md() {
  static const EVP_MD* md = fetched("SHA256", EVP_sha256());
  return md;
}
const EVP_MD* sha1_md() {
  static const EVP_MD* md = fetched("SHA1", EVP_sha1());
  return md;
}
const EVP_MD* md5_md() {
  static const EVP_MD* md = fetched("MD5", EVP_md5());
  return md;
}

std::string pbkdf2(const std::string& plain, const std::string& salt, int iterations, const EVP_MD* md, size_t len) {
  std::vector<unsigned char> key(len);
  PKCS5_PBKDF2_HMAC(plain.data(), static_cast<int>(plain.size()), reinterpret_cast<const unsigned char*>(salt.data()),
                    static_cast<int>(salt.size()), iterations, md, static_cast<int>(len), key.data());
  return to_hex(key.data(), len);
}

// One context per thread, reused: EVP_Digest would allocate and free a context (and the
// provider's state) on every call, which costs more than hashing a short string.
// The digest of `parts` one after the other (as of their concatenation, without making it).
std::string digest(std::initializer_list<std::string_view> parts, const EVP_MD* md) {
  struct context {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    ~context() { EVP_MD_CTX_free(ctx); }
  };
  thread_local context t;
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  bool ok = t.ctx && EVP_DigestInit_ex2(t.ctx, md, nullptr) == 1;
  for (std::string_view part : parts) ok = ok && EVP_DigestUpdate(t.ctx, part.data(), part.size()) == 1;
  if (!ok || EVP_DigestFinal_ex(t.ctx, out, &n) != 1)
    std::abort();  // only on allocation failure: no digest means no safe answer
  return std::string(reinterpret_cast<const char*>(out), n);
}

std::string digest(std::string_view data, const EVP_MD* md) {
  return digest({data}, md);
}

std::string digest_hex(const std::string& data, const EVP_MD* md) {
  std::string raw = digest(data, md);
  return to_hex(reinterpret_cast<const unsigned char*>(raw.data()), raw.size());
}

}  // namespace

std::string hash(const std::string& plain, int iterations) {
  std::string salt = random_hex(16);
  return "-pbkdf2:sha256-" + pbkdf2(plain, salt, iterations, sha256_md(), 32) + "," + salt + "," +
         std::to_string(iterations);
}

bool is_hashed(const std::string& stored) {
  return stored.rfind("-pbkdf2", 0) == 0;
}

bool verify(const std::string& plain, const std::string& stored) {
  const EVP_MD* md = nullptr;
  size_t len = 0;
  std::string rest;
  if (stored.rfind("-pbkdf2:sha256-", 0) == 0) {
    md = sha256_md();
    len = 32;
    rest = stored.substr(15);
  } else if (stored.rfind("-pbkdf2-", 0) == 0) {
    md = sha1_md();
    len = 20;
    rest = stored.substr(8);
  } else {
    return false;  // plain-text passwords are hashed at start-up; never compare them here
  }
  size_t c1 = rest.find(',');
  size_t c2 = rest.find(',', c1 == std::string::npos ? c1 : c1 + 1);
  if (c1 == std::string::npos || c2 == std::string::npos) return false;
  std::string key = rest.substr(0, c1), salt = rest.substr(c1 + 1, c2 - c1 - 1);
  int iterations = std::atoi(rest.c_str() + c2 + 1);
  if (iterations <= 0 || iterations > 10'000'000) return false;
  return equal_ct(pbkdf2(plain, salt, iterations, md, len), key);
}

std::string hmac_sha256_hex(const std::string& key, const std::string& message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(sha256_md(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), out, &n);
  return to_hex(out, n);
}

std::string hmac_sha1_hex(const std::string& key, const std::string& message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(sha1_md(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), out, &n);
  return to_hex(out, n);
}

std::string sha256(std::string_view data) {
  return digest(data, sha256_md());
}

std::string sha256_hex(const std::string& data) {
  return digest_hex(data, sha256_md());
}
std::string sha1_hex(const std::string& data) {
  return digest_hex(data, sha1_md());
}
std::string md5_hex(std::initializer_list<std::string_view> parts) {
  std::string raw = digest(parts, md5_md());
  return to_hex(reinterpret_cast<const unsigned char*>(raw.data()), raw.size());
}

std::string sha256_128_hex(std::initializer_list<std::string_view> parts) {
  std::string raw = digest(parts, sha256_md());
  return to_hex(reinterpret_cast<const unsigned char*>(raw.data()), 16);
}

std::string md5_hex(const std::string& data) {
  return digest_hex(data, md5_md());
}

std::string md5(const std::string& data) {
  return digest(data, md5_md());
}

hasher::hasher(algo a) : ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), a == algo::md5 ? md5_md() : sha256_md(), nullptr);
}

hasher::~hasher() {
  EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_));
}

void hasher::update(std::string_view piece) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), piece.data(), piece.size());
}

std::string hasher::final() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), out, &n);
  return std::string(reinterpret_cast<char*>(out), n);
}

bool equal_ct(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace settee::crypto

namespace settee::crypto {

std::string base64_encode(const std::string& data, bool url) {
  const char* alphabet = url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                             : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    uint32_t v = (uint8_t(data[i]) << 16) | (uint8_t(data[i + 1]) << 8) | uint8_t(data[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(alphabet[(v >> s) & 63]);
  }
  size_t rest = data.size() - i;
  if (rest > 0) {
    uint32_t v = uint8_t(data[i]) << 16;
    if (rest == 2) v |= uint8_t(data[i + 1]) << 8;
    out.push_back(alphabet[(v >> 18) & 63]);
    out.push_back(alphabet[(v >> 12) & 63]);
    if (rest == 2) out.push_back(alphabet[(v >> 6) & 63]);
    if (!url) out.append(rest == 1 ? "==" : "=");
  }
  return out;
}

bool base64_decode(const std::string& text, std::string& out) {
  out.clear();
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (char c : text) {
    int v;
    if (c >= 'A' && c <= 'Z')
      v = c - 'A';
    else if (c >= 'a' && c <= 'z')
      v = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      v = c - '0' + 52;
    else if (c == '+' || c == '-')
      v = 62;
    else if (c == '/' || c == '_')
      v = 63;
    else if (c == '=') {
      ++pad;
      continue;
    } else
      return false;
    if (pad) return false;  // data after padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return pad <= 2 && bits < 6;
}

uint32_t crc32(std::string_view data, uint32_t crc) {
  return static_cast<uint32_t>(
      ::crc32_z(crc, reinterpret_cast<const Bytef*>(data.data()), static_cast<z_size_t>(data.size())));
}

}  // namespace settee::crypto
