#include <doctest/doctest.h>

#include "node/crypto.hpp"

using namespace settee;

TEST_CASE("pbkdf2 hashes verify, reject wrong passwords and are salted") {
  std::string h = crypto::hash("secret", 1000);
  CHECK(h.rfind("-pbkdf2:sha256-", 0) == 0);
  CHECK(crypto::is_hashed(h));
  CHECK(crypto::verify("secret", h));
  CHECK_FALSE(crypto::verify("Secret", h));
  CHECK(h != crypto::hash("secret", 1000));
  CHECK_FALSE(crypto::verify("secret", "secret"));
  CHECK_FALSE(crypto::verify("secret", "-pbkdf2:sha256-zz"));
}

TEST_CASE("CouchDB's SHA-1 pbkdf2 admin strings verify") {
  // RFC 6070 vector: P="password", S="salt", c=1, dkLen=20.
  CHECK(crypto::verify("password", "-pbkdf2-0c60c80f961f0e71f3a9b524af6012062fe037a6,salt,1"));
}

TEST_CASE("digests and base64") {
  CHECK(crypto::md5_hex("") == "d41d8cd98f00b204e9800998ecf8427e");
  CHECK(crypto::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(crypto::base64_encode("admin:pw") == "YWRtaW46cHc=");
  std::string out;
  REQUIRE(crypto::base64_decode("YWRtaW46cHc=", out));
  CHECK(out == "admin:pw");
  REQUIRE(crypto::base64_decode(crypto::base64_encode("\xff\xfe?", true), out));
  CHECK(out == "\xff\xfe?");
  CHECK_FALSE(crypto::base64_decode("not base64!", out));
  CHECK(crypto::random_hex(8).size() == 16);
}
