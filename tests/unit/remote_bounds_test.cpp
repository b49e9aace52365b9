// What bounds a node's reads from remote endpoints: answers decoded within a size and a ratio
// (reply_body), `_changes` read one row at a time (changes_rows), where restricted replications
// may connect (net_policy), and secrets kept out of error reasons (rep_endpoint::redact).
#include <doctest/doctest.h>

#include "node/gzip.hpp"
#include "replicator/changes_rows.hpp"
#include "replicator/net_policy.hpp"
#include "replicator/rep_endpoint.hpp"
#include "replicator/reply_body.hpp"

using namespace settee;

namespace {
std::array<uint8_t, 16> ip(const std::string& text) {
  std::array<uint8_t, 16> a{};
  REQUIRE(parse_ip(text, a));
  return a;
}
}  // namespace

TEST_CASE("reply_body passes plain bodies through and stops at its limit") {
  std::string got;
  reply_body b(10, 100, "[x] y", [&](std::string_view p) {
    got.append(p);
    return true;
  });
  REQUIRE(b.begin("", std::nullopt));
  CHECK(b.feed("hello", 5));
  CHECK(b.finish());
  CHECK(got == "hello");
  CHECK_FALSE(b.feed("world!", 6));  // 11 bytes > 10
  CHECK(b.error().code == errc::too_large);
  CHECK(b.error().reason.find("[x] y") != std::string::npos);
}

TEST_CASE("reply_body refuses a Content-Length past the limit before reading, and unknown codings") {
  reply_body b(100, 100, "limit", [](std::string_view) { return true; });
  CHECK(b.begin("", 101).code == errc::too_large);
  reply_body c(100, 100, "limit", [](std::string_view) { return true; });
  CHECK_FALSE(c.begin("br", std::nullopt));
  reply_body d(100, 100, "limit", [](std::string_view) { return true; });
  CHECK(d.begin("", 100));
}

TEST_CASE("reply_body inflates gzip, concatenated members too, fed a byte at a time") {
  const std::string a = gzip::compress("{\"a\":1}", 6), b = gzip::compress("{\"b\":2}", 6);
  const std::string wire = a + b;
  std::string got;
  reply_body body(1000, 100, "limit", [&](std::string_view p) {
    got.append(p);
    return true;
  });
  REQUIRE(body.begin("gzip", wire.size()));
  for (char c : wire) REQUIRE(body.feed(&c, 1));
  CHECK(body.finish());
  CHECK(got == "{\"a\":1}{\"b\":2}");

  reply_body cut(1000, 100, "limit", [](std::string_view) { return true; });
  REQUIRE(cut.begin("gzip", std::nullopt));
  CHECK(cut.feed(a.data(), a.size() - 4));
  CHECK_FALSE(cut.finish());  // ends early

  reply_body junk(1000, 100, "limit", [](std::string_view) { return true; });
  REQUIRE(junk.begin("gzip", std::nullopt));
  CHECK_FALSE(junk.feed("not gzip at all", 15));
  CHECK(junk.error().reason.find("corrupt") != std::string::npos);
}

TEST_CASE("a gzip bomb stops at the ratio a little past the first MiB, never at its size") {
  const std::string bomb = gzip::compress(std::string(64u << 20, ' '), 9);  // 64 MiB in ~64 KiB
  uint64_t delivered = 0;
  reply_body b(1ull << 40, 100, "limit", [&](std::string_view p) {
    delivered += p.size();
    return true;
  });
  REQUIRE(b.begin("gzip", bomb.size()));
  bool ok = true;
  for (size_t at = 0; ok && at < bomb.size(); at += 1000)
    ok = b.feed(bomb.data() + at, std::min<size_t>(1000, bomb.size() - at));
  CHECK_FALSE(ok);
  CHECK(b.error().reason.find("compression bomb") != std::string::npos);
  CHECK(delivered < (2u << 20));
  // The same bomb under a size limit below the ratio's reach stops at the size.
  reply_body small(100000, 1000000, "limit", [](std::string_view) { return true; });
  REQUIRE(small.begin("gzip", std::nullopt));
  CHECK_FALSE(small.feed(bomb.data(), bomb.size()));
  CHECK(small.error().code == errc::too_large);
}

TEST_CASE("a sink that has enough stops reading without an error") {
  reply_body b(1000, 100, "limit", [](std::string_view) { return false; });
  REQUIRE(b.begin("", std::nullopt));
  CHECK_FALSE(b.feed("abc", 3));
  CHECK(b.sink_done());
  CHECK(b.finish());
}

TEST_CASE("changes_rows hands on rows one at a time, however the bytes are cut") {
  const std::string feed =
      "{\"results\":[\n{\"seq\":\"1-a\",\"id\":\"x\",\"changes\":[{\"rev\":\"1-a\"}]},\n"
      "{\"seq\":\"2-b\",\"id\":\"y\\\"]}\",\"changes\":[{\"rev\":\"1-b\"}]}\n],\n\"last_seq\":\"2-b\",\"pending\":0}\n";
  for (size_t piece : {size_t(1), size_t(3), size_t(7), feed.size()}) {
    std::vector<std::string> rows;
    changes_rows r(1000, [&](std::string_view row) {
      rows.emplace_back(row);
      return true;
    });
    for (size_t at = 0; at < feed.size(); at += piece) REQUIRE(r.feed(std::string_view(feed).substr(at, piece)));
    CHECK(r.whole());
    REQUIRE(rows.size() == 2);
    CHECK(rows[0] == "{\"seq\":\"1-a\",\"id\":\"x\",\"changes\":[{\"rev\":\"1-a\"}]}");
    CHECK(rows[1].find("y\\\"]}") != std::string::npos);
    CHECK(r.rest() == "{\"results\":[],\n\"last_seq\":\"2-b\",\"pending\":0}");
  }
}

TEST_CASE("changes_rows stops when the page is full, and refuses rows and envelopes past their bounds") {
  std::string many = "{\"results\":[";
  for (int i = 0; i < 1000; ++i) many += std::string(i ? "," : "") + "{\"seq\":" + std::to_string(i) + "}";
  many += "],\"last_seq\":999}";
  int seen = 0;
  changes_rows r(1000, [&](std::string_view) { return ++seen < 10; });
  CHECK_FALSE(r.feed(many));
  CHECK(seen == 10);
  CHECK(r.error());

  changes_rows big(50, [](std::string_view) { return true; });
  CHECK_FALSE(big.feed("{\"results\":[{\"id\":\"" + std::string(100, 'x') + "\"}]}"));
  CHECK(big.error().reason.find("max_document_size") != std::string::npos);

  changes_rows envelope(50, [](std::string_view) { return true; });
  CHECK_FALSE(envelope.feed("{\"last_seq\":\"" + std::string(2u << 20, 'x') + "\"}"));

  changes_rows after(50, [](std::string_view) { return true; });
  CHECK_FALSE(after.feed("{\"results\":[]} {\"results\":[]}"));

  // Other arrays stay in the envelope; scalar rows are rows.
  std::vector<std::string> rows;
  changes_rows other(100, [&](std::string_view row) {
    rows.emplace_back(row);
    return true;
  });
  CHECK(other.feed("{\"x\":[1,2],\"results\":[3, \"s\" ,{}]}"));
  CHECK(other.whole());
  CHECK(rows == std::vector<std::string>{"3", "\"s\"", "{}"});
  CHECK(other.rest() == "{\"x\":[1,2],\"results\":[]}");
}

TEST_CASE("networks parse as CIDR lists and match IPv4, IPv6 and IPv4-mapped addresses") {
  auto nets = parse_networks(default_denied_networks);
  REQUIRE(nets);
  auto denied = [&](const std::string& a) {
    for (const ip_net& n : *nets)
      if (in_network(ip(a), n)) return true;
    return false;
  };
  CHECK(denied("127.0.0.1"));
  CHECK(denied("127.255.1.2"));
  CHECK(denied("::1"));
  CHECK(denied("::ffff:127.0.0.1"));
  CHECK(denied("0.0.0.0"));
  CHECK(denied("::"));
  CHECK(denied("169.254.169.254"));
  CHECK(denied("fe80::1"));
  CHECK_FALSE(denied("10.1.2.3"));
  CHECK_FALSE(denied("8.8.8.8"));
  CHECK_FALSE(denied("2001:db8::1"));
  CHECK_FALSE(denied("128.0.0.1"));
  CHECK(ip_text(ip("::ffff:10.0.0.1")) == "10.0.0.1");
  CHECK_FALSE(parse_networks("10.0.0.0/33"));
  CHECK_FALSE(parse_networks("nonsense"));
  CHECK_FALSE(parse_networks("10.0.0.0/"));
  CHECK(parse_networks("10.0.0.0/8, ,fc00::/7")->size() == 2);
}

TEST_CASE("the policy refuses denied networks, members and this node's own ports, unless allowed") {
  auto p = net_policy::parse(std::string(default_denied_networks) + ", 10.0.0.0/8", "db.internal., 10.9.0.0/16");
  REQUIRE(p);
  const std::vector<std::array<uint8_t, 16>> none, own = {ip("192.0.2.7")}, members = {ip("198.51.100.3")};
  CHECK(p->check("x", {ip("203.0.113.1")}, 443, {5984}, own, members));
  CHECK(p->check("x", {ip("127.0.0.1")}, 80, {}, none, none).code == errc::forbidden);
  CHECK(p->check("x", {ip("::ffff:127.0.0.1")}, 80, {}, none, none).code == errc::forbidden);
  CHECK(p->check("x", {ip("10.1.1.1")}, 80, {}, none, none).code == errc::forbidden);
  CHECK(p->check("x", {ip("10.9.1.1")}, 80, {}, none, none));             // an allowed network
  CHECK(p->check("DB.internal", {ip("127.0.0.1")}, 80, {}, none, none));  // an allowed host
  CHECK(p->check("x", {ip("203.0.113.1"), ip("127.0.0.1")}, 80, {}, none, none).code == errc::forbidden);
  auto member = p->check("x", {ip("198.51.100.3")}, 8000, {5984}, own, members);
  CHECK(member.reason.find("member") != std::string::npos);
  CHECK(p->check("x", {ip("192.0.2.7")}, 5984, {5984}, own, members).reason.find("own port") != std::string::npos);
  CHECK(p->check("x", {ip("192.0.2.7")}, 8080, {5984}, own, members));
  CHECK_FALSE(net_policy::parse("bad", ""));
}

TEST_CASE("every spelling of a loopback address resolves to one the policy refuses") {
  auto p = net_policy::parse(default_denied_networks, "");
  REQUIRE(p);
  for (const char* host : {"127.0.0.1", "localhost", "localhost.", "2130706433", "0177.0.0.1", "0x7f.1", "127.1", "0",
                           "[::1]", "[::ffff:127.0.0.1]", "0.0.0.0", "[::]"}) {
    CAPTURE(host);
    auto r = p->resolve(host, 5984);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == errc::forbidden);
  }
}

TEST_CASE("secrets are masked in what an endpoint answers") {
  auto e = parse_endpoint(json{{"url", "http://bob:s3cr%40t@example.com/db"}, {"headers", {{"X-Token", "tok123"}}}},
                          "http://127.0.0.1:5984", {});
  REQUIRE(e);
  const std::string echoed = "could not open http://bob:s3cr%40t@example.com/db: Basic Ym9iOnMzY3JAdA== tok123 s3cr@t";
  const std::string out = e->redact(echoed);
  CHECK(out.find("s3cr") == std::string::npos);
  CHECK(out.find("tok123") == std::string::npos);
  CHECK(out.find("Ym9iOnMzY3JAdA==") == std::string::npos);
  CHECK(out.find("example.com/db") != std::string::npos);
}
