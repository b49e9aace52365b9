// The header's downgrade rule: a release rewriting a header written by a newer one keeps the fields
// it does not know.
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <doctest/doctest.h>

#include <cstring>

#include "storage/shard_header.hpp"
#include "tests/unit/schema/shard_header_next.capnp.h"

using namespace settee;

namespace {

std::string to_bytes(capnp::MessageBuilder& msg) {
  auto flat = capnp::messageToFlatArray(msg);
  auto bytes = flat.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

}  // namespace

TEST_CASE("a newer header's unknown fields survive a rewrite by this release") {
  capnp::MallocMessageBuilder next;
  auto h = next.initRoot<ShardHeaderNext>();
  h.setShardUuid("abc");
  h.setUpdateSeq(7);
  auto f = h.initFuture(3);
  f.set(0, 11);
  f.set(1, 22);
  f.set(2, 33);
  std::string newer = to_bytes(next);

  shard_header mine;
  REQUIRE(shard_header::decode(newer, mine));
  CHECK(mine.update_seq == 7);
  CHECK(mine.shard_uuid == "abc");
  mine.update_seq = 8;  // this release commits
  std::string rewritten = mine.encode(newer);

  auto words = kj::heapArray<capnp::word>(rewritten.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), rewritten.data(), rewritten.size());
  capnp::FlatArrayMessageReader back(words);
  auto r = back.getRoot<ShardHeaderNext>();
  CHECK(r.getUpdateSeq() == 8);
  REQUIRE(r.getFuture().size() == 3);
  CHECK(r.getFuture()[2] == 33);
}

TEST_CASE("an older header reads with defaults for fields it lacks") {
  capnp::MallocMessageBuilder old;
  auto h = old.initRoot<ShardHeaderNext>();
  h.setUpdateSeq(3);
  shard_header mine;
  REQUIRE(shard_header::decode(to_bytes(old), mine));
  CHECK(mine.revs_limit == 1000);
  CHECK(mine.update_seq == 3);
}

TEST_CASE("rewriting a header from its own bytes does not grow it (no orphaned lists left behind)") {
  shard_header h;
  h.shard_uuid = "0123456789abcdef0123456789abcdef";
  h.epochs = {{"n1@127.0.0.1", 0}, {"n2@127.0.0.1", 42}};
  h.security = R"({"admins":{"names":["a"],"roles":[]},"members":{"names":[],"roles":["r"]}})";
  for (int64_t i = 0; i < 60; ++i) h.time_seq.bins.push_back({(1000 - i) * 10800, static_cast<uint64_t>(600 - i)});
  const std::string first = h.encode("");
  std::string again = h.encode(first);
  for (int i = 0; i < 3; ++i) again = h.encode(again);
  CHECK(again.size() == first.size());
  CHECK(again == first);
  CHECK(first.size() < 1400);  // stays inside one LMDB page (4 KB pages keep values up to ~2 KB inline)
}

TEST_CASE("a split child's time-seq lineage survives the header; a header without it reads as never split") {
  shard_header h;
  h.time_seq.bins = {{21600, 20}, {10800, 0}};
  h.time_seq.inherited_seq = 20;
  h.time_seq.counted_from = 20;
  shard_header back;
  REQUIRE(shard_header::decode(h.encode(""), back));
  CHECK(back.time_seq == h.time_seq);
  shard_header plain;
  plain.time_seq.bins = h.time_seq.bins;
  REQUIRE(shard_header::decode(plain.encode(""), back));
  CHECK((back.time_seq.inherited_seq == 0 && back.time_seq.counted_from == 0));
}

TEST_CASE("a format-2 header (a catalog with split databases) is one older releases cannot decode") {
  shard_header h;
  h.shard_uuid = "abc";
  h.update_seq = 5;
  std::string v1 = h.encode("");
  CHECK(v1.size() % sizeof(capnp::word) == 0);
  h.format_version = shard_header::split_catalog_format;
  std::string v2 = h.encode(v1);
  // Releases 0.1 and 0.2 refuse a header that is not whole words ("unreadable header").
  CHECK(v2.size() % sizeof(capnp::word) != 0);
  shard_header back;
  REQUIRE(shard_header::decode(v2, back));
  CHECK(back.format_version == 2);
  CHECK(back.update_seq == 5);
  back.update_seq = 6;  // a commit keeps the format (and its trailer)
  std::string again = back.encode(v2);
  CHECK(again.size() == v2.size());
  shard_header last;
  REQUIRE(shard_header::decode(again, last));
  CHECK(last.format_version == 2);
  CHECK(last.update_seq == 6);
}
