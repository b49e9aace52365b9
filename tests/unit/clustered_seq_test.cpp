#include <doctest/doctest.h>

#include "cluster/clustered_seq.hpp"

using namespace settee;

TEST_CASE("clustered seq tokens round-trip and carry the sum") {
  auto ranges = make_ranges(2);
  std::vector<seq_entry> in = {{ranges[0], "settee@127.0.0.1", "abcdef0", 12},
                               {ranges[1], "settee@127.0.0.1", "1234567", 30}};
  std::string token = encode_seq(in);
  CHECK(token.rfind("42-", 0) == 0);
  for (char c : token) CHECK((isalnum(c) || c == '-' || c == '_'));
  auto out = decode_seq(token);
  REQUIRE(out.ok());
  REQUIRE(out->size() == 2);
  CHECK((*out)[1].range.name() == "80000000-ffffffff");
  CHECK((*out)[1].seq == 30);
  CHECK((*out)[0].uuid_prefix == "abcdef0");
  CHECK(decode_seq("\"" + token + "\"").ok());         // quoted tokens are accepted
  auto other_sum = decode_seq("7" + token.substr(2));  // the sum is cosmetic
  REQUIRE(other_sum.ok());
  CHECK((*other_sum)[0].seq == 12);
}

TEST_CASE("0 is the start; everything malformed is a 400, never a crash") {
  auto zero = decode_seq("0");
  REQUIRE(zero.ok());
  CHECK(zero->empty());
  std::string good = encode_seq({{make_ranges(1)[0], "n", "p", 5}});
  std::vector<std::string> bad = {
      "",   "-",  "abc", "12", "1-", "-abc", "x-abc", "1-!!!!", "1-AAAA", good + "A", good.substr(0, good.size() - 2),
      "\"", "\"0"};
  for (auto& b : bad) {
    auto r = decode_seq(b);
    CHECK_MESSAGE(!r.ok(), b);
    if (!r.ok()) CHECK(r.error().reason == "Malformed sequence supplied in 'since' parameter.");
  }
  // Every truncation and every single-byte corruption of a valid token is rejected or decodes
  // to something well-formed; none crashes.
  for (size_t cut = 0; cut < good.size(); ++cut) (void)decode_seq(good.substr(0, cut));
  for (size_t i = 0; i < good.size(); ++i) {
    std::string x = good;
    x[i] = x[i] == 'A' ? 'B' : 'A';
    (void)decode_seq(x);
  }
}

TEST_CASE("a token builder encodes the same tokens, with a header that never changes") {
  auto ranges = make_ranges(3);
  std::vector<seq_entry> layout;
  for (size_t i = 0; i < 3; ++i)
    layout.push_back({ranges[i], i == 2 ? "other@h" : "settee@h", "abc" + std::to_string(i), 0});
  seq_token_builder b(layout);
  std::string t1 = b.token({1, 2, 3}), t2 = b.token({1000000, 0, 77});
  layout[0].seq = 1000000;
  layout[2].seq = 77;
  CHECK(t2 == encode_seq(layout));
  CHECK(t1.rfind("6-", 0) == 0);
  std::string h1 = t1.substr(t1.find('-') + 1), h2 = t2.substr(t2.find('-') + 1);
  size_t common = 0;
  while (common < h1.size() && common < h2.size() && h1[common] == h2[common]) ++common;
  CHECK(common >= 20);  // the base64 of the header is shared
  auto back = decode_seq(t2);
  REQUIRE(back.ok());
  CHECK((*back)[2].node == "other@h");
  CHECK((*back)[2].seq == 77);
  CHECK((*back)[0].seq == 1000000);
}
