#include <doctest/doctest.h>

#include "actors/clustered_seq.hpp"
#include "actors/db_updates_seq.hpp"
#include "node/crypto.hpp"
#include "storage/codec.hpp"

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
  CHECK(decode_seq("\"" + token + "\"").ok());          // quoted tokens are accepted
  CHECK_FALSE(decode_seq("7" + token.substr(2)).ok());  // the sum must add up (0.4 on)
  CHECK_FALSE(decode_seq("042" + token.substr(2)).ok());
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

TEST_CASE("a token builder encodes the same tokens as encode_seq") {
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
  auto back = decode_seq(t2);
  REQUIRE(back.ok());
  CHECK((*back)[2].node == "other@h");
  CHECK((*back)[2].seq == 77);
  CHECK((*back)[0].seq == 1000000);
}

namespace {

// A token as releases before 0.4 wrote it: no check node (actors/clustered_seq.cpp at v0.3.0).
std::string token_of_0_3(const std::vector<seq_entry>& entries) {
  codec::writer body;
  body.varint(1);
  body.str(entries[0].node);
  body.varint(entries.size());
  for (auto& e : entries) {
    body.varint(e.range.begin);
    body.varint(e.range.end);
    body.varint(0);
    body.str(e.uuid_prefix);
  }
  size_t pad = (3 - (2 + body.data().size()) % 3) % 3;
  std::string header{static_cast<char>(1), static_cast<char>(pad)};
  header += body.data();
  header.append(pad, '\0');
  codec::writer seqs;
  uint64_t sum = 0;
  for (auto& e : entries) {
    seqs.varint(e.seq);
    sum += e.seq;
  }
  return std::to_string(sum) + "-" + crypto::base64_encode(header, true) + crypto::base64_encode(seqs.data(), true);
}

// Every single-character change of `token` to another character a token may hold.
template <class Decode, class Same>
void every_corruption_is_refused(const std::string& token, Decode decode, Same same_as_original) {
  const std::string alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_\"";
  size_t tried = 0, refused = 0;
  for (size_t i = 0; i < token.size(); ++i) {
    for (char ch : alphabet) {
      if (ch == token[i]) continue;
      std::string x = token;
      x[i] = ch;
      ++tried;
      auto r = decode(x);
      if (!r.ok()) {
        ++refused;
        continue;
      }
      // Accepted only when it reads as the very same position (a base64 character's unused bits).
      CHECK_MESSAGE(same_as_original(*r), "corruption at " << i << " to '" << ch << "' read as another position");
    }
  }
  CHECK(tried > 1000);
  CHECK(refused > tried * 9 / 10);
}

}  // namespace

TEST_CASE("a corrupted token is refused, never read as another position") {
  auto ranges = make_ranges(4);
  std::vector<seq_entry> in;
  for (size_t i = 0; i < 4; ++i)
    in.push_back({ranges[i], i % 2 ? "n2@127.0.0.1" : "n1@127.0.0.1", "abc123" + std::to_string(i), 1000 * i + 7});
  std::string token = encode_seq(in);
  auto same = [&](const std::vector<seq_entry>& out) {
    if (out.size() != in.size()) return false;
    for (size_t i = 0; i < in.size(); ++i)
      if (out[i].seq != in[i].seq || out[i].node != in[i].node || out[i].uuid_prefix != in[i].uuid_prefix ||
          out[i].range.name() != in[i].range.name())
        return false;
    return true;
  };
  REQUIRE(decode_seq(token).ok());
  REQUIRE(same(*decode_seq(token)));
  every_corruption_is_refused(
      token, [](const std::string& t) { return decode_seq(t); }, same);
}

TEST_CASE("tokens of release 0.3 (no check) are still taken, and their sum is checked") {
  auto ranges = make_ranges(2);
  std::vector<seq_entry> in = {{ranges[0], "n1@h", "abcdef0", 12}, {ranges[1], "n1@h", "1234567", 30}};
  std::string old = token_of_0_3(in);
  auto out = decode_seq(old);
  REQUIRE(out.ok());
  REQUIRE(out->size() == 2);
  CHECK((*out)[0].seq == 12);
  CHECK((*out)[1].seq == 30);
  CHECK((*out)[1].node == "n1@h");
  CHECK_FALSE(decode_seq("43" + old.substr(2)).ok());
  // And a 0.4 token read as 0.3 reads it: one node more, which no entry names.
  std::string payload;
  REQUIRE(unwrap_token(encode_seq(in), payload));
  codec::reader r(payload);
  uint8_t version = 0, pad = 0;
  uint64_t nodes = 0;
  std::string check, first;
  REQUIRE((r.byte(version) && r.byte(pad) && r.varint(nodes) && r.str(check) && r.str(first)));
  CHECK(nodes == 2);
  CHECK(first == "n1@h");
  CHECK(check.size() >= 9);
  CHECK(check.size() <= 11);
  CHECK(check[0] == '~');
  CHECK((3 + 1 + check.size()) % 3 == 0);  // version, pad, count, length: the rest encodes once
}

TEST_CASE("a corrupted _db_updates token is refused, never read as another position") {
  node_updates_pos a, b;
  a.node = "n1@127.0.0.1";
  a.dbs_uuid = "abcdef0";
  a.dbs_seq = 700;
  a.dbs_index = 2;
  a.dbs_time = 1700000000;
  a.log_uuid = "1234567";
  a.log_seq = 31;
  a.seen = {{0x0123456789abcdefULL, 1700000000 - 5}};
  a.marks = {{"n2@127.0.0.1", "0fedcba", 42, 3}};
  b.node = "n2@127.0.0.1";
  b.dbs_uuid = "0fedcba";
  b.dbs_seq = 55;
  b.log_uuid = "7654321";
  b.log_seq = 9;
  std::string token = encode_db_updates_seq({a, b});
  auto same = [&](const std::vector<node_updates_pos>& out) {
    return out.size() == 2 && encode_db_updates_seq(out) == token;
  };
  REQUIRE(decode_db_updates_seq(token).ok());
  REQUIRE(same(*decode_db_updates_seq(token)));
  every_corruption_is_refused(
      token, [](const std::string& t) { return decode_db_updates_seq(t); }, same);
}
