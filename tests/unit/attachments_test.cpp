// The pure part of attachments: a client's `_attachments` to the stored form and back, CouchDB's
// stub merge and its renderings (docs/architecture.md section 29).
#include <doctest/doctest.h>

#include "node/crypto.hpp"
#include "node/gzip.hpp"
#include "storage/attachments.hpp"

using namespace settee;
using namespace settee::attachments;

namespace {

json parse(const char* text) {
  return *parse_json(text);
}

}  // namespace

TEST_CASE("inline data becomes a stored entry with CouchDB's digest and a blob named by SHA-256") {
  // "hello" has md5 5d41402abc4b2a76b9719d911017c592, whose base64 is XUFAKrxLKna5cZ2REBfFkg==
  // (a type CouchDB does not compress; text/plain is below).
  json atts = parse(
      R"({"a.txt":{"content_type":"application/x-data","data":"aGVsbG8=","revpos":3},"b":{"data":"","revpos":7}})");
  std::vector<blob> blobs;
  REQUIRE(take_inline(atts, true, blobs));  // a replicated revision keeps its source's revpos
  CHECK(atts["a.txt"] == json{{"content_type", "application/x-data"},
                              {"digest", "md5-XUFAKrxLKna5cZ2REBfFkg=="},
                              {"length", 5},
                              {"revpos", 3},
                              {"key", crypto::sha256_hex("hello")}});
  CHECK(atts["b"]["content_type"] == "application/octet-stream");  // CouchDB's default
  CHECK(atts["b"]["length"] == 0);
  json edit = parse(R"({"a":{"data":"","revpos":9}})");
  REQUIRE(take_inline(edit, false, blobs));
  CHECK(edit["a"]["revpos"] == 0);  // an edit: the store gives it the new revision's position
  blobs.resize(2);
  REQUIRE(blobs.size() == 2);
  CHECK(blobs[0].bytes == "hello");
  CHECK(blobs[0].key == crypto::sha256_hex("hello"));
  CHECK(keys_of(json{{"_attachments", atts}, {"x", 1}}) == std::vector<std::string>{blobs[0].key, blobs[1].key});
}

TEST_CASE("bad attachments are 400s that say what is wrong") {
  auto refused = [](const char* text) {
    json atts = parse(text);
    std::vector<blob> blobs;
    status st = take_inline(atts, false, blobs);
    CHECK(blobs.empty());
    return st.code == errc::bad_request ? st.reason : "accepted";
  };
  CHECK(refused(R"([])") == "`_attachments` must be a JSON object");
  CHECK(refused(R"({"a":"x"})") == "Attachment 'a' must be a JSON object");
  CHECK(refused(R"({"a":{"data":"%%%"}})") == "Invalid attachment data for a");
  CHECK(refused(R"({"a":{"data":5}})") == "Invalid attachment data for a");
  CHECK(refused(R"({"a":{"content_type":"text/plain"}})") == "Attachment 'a' has neither data nor a stub");
  CHECK(refused(R"({"a":{"follows":true,"length":3}})") == "Attachment 'a' follows, but the body is not multipart");
  CHECK(refused(R"({"_a":{"data":""}})") == "Attachment name '_a' starts with prohibited character '_'");
  CHECK(refused(R"({"":{"data":""}})") == "Attachment name must not be empty");
  CHECK(refused(R"({"a":{"data":"","content_type":1}})") == "Attachment 'a': content_type must be a string");
}

TEST_CASE("stubs take the parent's entry by name; a stub the parent lacks is 412 missing_stub") {
  json parent = parse(R"({"a":{"content_type":"text/plain","digest":"md5-x","length":5,"revpos":1,"key":"k1"}})");
  json atts = parse(R"({"a":{"stub":true,"revpos":1,"digest":"md5-other"},"n":{"data":"aGk="}})");
  std::vector<blob> blobs;
  REQUIRE(take_inline(atts, false, blobs));
  CHECK(has_stubs(atts));
  REQUIRE(merge_stubs(atts, &parent, "doc"));
  CHECK_FALSE(has_stubs(atts));
  CHECK(atts["a"] == parent["a"]);  // the parent's wins over what the stub claims
  CHECK(atts["n"]["revpos"] == 0);

  // A stub naming another revpos is not the parent's attachment (couch_att:merge_stubs).
  json other_pos = parse(R"({"a":{"stub":true,"revpos":9}})");
  CHECK(merge_stubs(other_pos, &parent, "doc").code == errc::missing_stub);

  json missing = parse(R"({"b":{"stub":true}})");
  status st = merge_stubs(missing, &parent, "doc");
  CHECK(st.code == errc::missing_stub);
  CHECK(st.reason == "Invalid attachment stub in doc for b");
  st = merge_stubs(missing, nullptr, "doc");
  CHECK(st.code == errc::missing_stub);
  CHECK(st.reason == "Previous revision missing for document doc");
}

TEST_CASE("compressible types are stored gzip-encoded, as CouchDB stores them") {
  policy p;
  CHECK(p.compressible_type("text/plain"));
  CHECK(p.compressible_type("Text/HTML; charset=utf-8"));
  CHECK(p.compressible_type("application/json"));
  CHECK_FALSE(p.compressible_type("application/octet-stream"));
  CHECK_FALSE(p.compressible_type("textual/plain"));
  CHECK(policy::parse_types(" text/*, Application/XML ,,") == std::vector<std::string>{"text/*", "application/xml"});

  std::string text(4000, 'a');
  blob b;
  json e = make_entry("text/plain", text, 3, b, p);
  CHECK(e["encoding"] == "gzip");
  CHECK(e["length"] == 4000);
  CHECK(e["encoded_length"] == b.bytes.size());
  CHECK(b.bytes.size() < 100);
  CHECK(e["digest"] == "md5-" + crypto::base64_encode(crypto::md5(b.bytes)));  // of the stored bytes
  CHECK(e["key"] == crypto::sha256_hex(b.bytes));
  auto back = identity_bytes(e, b.bytes);
  REQUIRE(back);
  CHECK(*back == text);

  // Even when gzip is larger (couch_att:maybe_compress does not compare): "hello" as text/plain
  // has the digest CouchDB gives it (a CouchDB client's fixtures carry md5-iMaiC8wqiFlD2NjLTemvCQ==
  // for a 5-byte text/plain attachment), and 25 encoded bytes.
  blob tiny;
  json small = make_entry("text/plain", "hello", 1, tiny, p);
  CHECK(small["encoding"] == "gzip");
  CHECK(small["encoded_length"] == 25);
  CHECK(small["digest"] == "md5-iMaiC8wqiFlD2NjLTemvCQ==");
  CHECK(*identity_bytes(small, tiny.bytes) == "hello");
  blob binary;
  CHECK_FALSE(make_entry("image/png", text, 1, binary, p).contains("encoding"));
  p.compression_level = 0;
  blob off;
  CHECK_FALSE(make_entry("text/plain", text, 1, off, p).contains("encoding"));
}

TEST_CASE("renderings in CouchDB's member order") {
  json e = parse(
      R"({"content_type":"text/plain","digest":"md5-d","length":5,"revpos":2,"key":"k","encoding":"gzip","encoded_length":25})");
  CHECK(render(e, form::stub, false).dump() ==
        R"({"content_type":"text/plain","revpos":2,"digest":"md5-d","length":5,"stub":true})");
  CHECK(
      render(e, form::stub, true).dump() ==
      R"({"content_type":"text/plain","revpos":2,"digest":"md5-d","length":5,"stub":true,"encoding":"gzip","encoded_length":25})");
  std::string bytes = gzip::compress("hello", 8);  // stored encoded; inline data is the identity bytes
  CHECK(render(e, form::inline_data, false, &bytes).dump() ==
        R"({"content_type":"text/plain","revpos":2,"digest":"md5-d","data":"aGVsbG8="})");
  std::string not_gzip = "hello";  // bytes that do not decode are never shown as data
  CHECK(render(e, form::inline_data, false, &not_gzip)["stub"] == true);
  CHECK(render(e, form::follows, false).dump() ==
        R"({"content_type":"text/plain","revpos":2,"digest":"md5-d","length":5,"follows":true})");
}
