// Attachments in a shard file: blobs stored once, referenced by the revisions that name them, freed
// with the last one; stubs merged from the revision an edit extends (docs/architecture.md 29).
#include <doctest/doctest.h>

#include "node/crypto.hpp"
#include "storage/shard_store.hpp"
#include "temp_dir.hpp"

using namespace settee;

namespace {

struct shard {
  temp_dir dir;
  std::shared_ptr<shard_store> s;
  shard() {
    store_options o;
    o.node_name = "n1@h";
    o.map_size_bytes = 64ull << 20;
    auto opened = shard_store::open(dir.path + "/shards/00000000-ffffffff/db.1", o);
    REQUIRE(opened.ok());
    s = *opened;
  }
  // A write of `id` whose body has attachments `atts` (client form: inline data and stubs).
  doc_result put(const std::string& id, const char* atts, std::vector<rev_id> revs = {}, bool new_edits = true,
                 bool deleted = false) {
    doc_update u;
    u.id = id;
    u.revs = std::move(revs);
    u.new_edits = new_edits;
    u.deleted = deleted;
    u.managed_attachments = true;
    json body = json::object();
    body["v"] = 1;
    if (atts) {
      body["_attachments"] = *parse_json(atts);
      REQUIRE(attachments::take_inline(body["_attachments"], !new_edits, u.blobs));
    }
    u.body = body.dump();
    write_op op;
    op.docs.push_back(std::move(u));
    REQUIRE(s->commit({&op}, 1700000100));
    return op.results.front();
  }
  json body(const std::string& id, const rev_id& rev) {
    auto snap = s->read();
    std::string text;
    REQUIRE(snap->body(id, rev, text));
    return *parse_json(text);
  }
  // Compacts the whole shard in steps of `per_step` documents; the documents visited.
  size_t compact(size_t per_step = 1) {
    size_t visited = 0;
    std::string from;
    do {
      write_op op;
      op.what = write_op::kind::compact;
      op.compact_from = from;
      op.compact_limit = per_step;
      REQUIRE(s->commit({&op}, 1700000200));
      visited += op.compact_visited;
      from = op.compact_next;
    } while (!from.empty());
    return visited;
  }
  bool has_blob(const std::string& bytes) {
    auto snap = s->read();
    std::string out;
    bool found = snap->blob(crypto::sha256_hex(bytes), out);
    CHECK(snap->fault());
    if (found) CHECK(out == bytes);
    return found;
  }
};

std::string big(size_t n) {
  std::string s(n, 'x');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 3) % 26);
  return s;
}

}  // namespace

TEST_CASE("a blob lives while a revision names it; stubs keep it across edits") {
  shard f;
  auto r1 = f.put("d", R"({"a.txt":{"content_type":"application/x-data","data":"aGVsbG8="}})");  // "hello"
  REQUIRE(r1.st);
  CHECK(f.has_blob("hello"));
  json stored = f.body("d", r1.rev)["_attachments"]["a.txt"];
  CHECK(stored["revpos"] == 1);
  CHECK(stored["digest"] == "md5-XUFAKrxLKna5cZ2REBfFkg==");

  auto r2 = f.put("d", R"({"a.txt":{"stub":true},"b":{"data":"d29ybGQ="}})", {r1.rev});  // "world"
  REQUIRE(r2.st);
  json atts = f.body("d", r2.rev)["_attachments"];
  CHECK(atts["a.txt"] == stored);  // the stub became the parent's entry, revpos 1 kept
  CHECK(atts["b"]["revpos"] == 2);
  CHECK(f.has_blob("hello"));
  CHECK(f.has_blob("world"));

  auto r3 = f.put("d", R"({"b":{"stub":true}})", {r2.rev});  // a.txt dropped
  REQUIRE(r3.st);
  CHECK(f.has_blob("hello"));  // older revisions keep theirs until compaction
  CHECK(f.compact() == 1);
  CHECK_FALSE(f.has_blob("hello"));
  CHECK(f.has_blob("world"));
  auto r4 = f.put("d", nullptr, {r3.rev}, true, true);  // deleted: the tombstone names nothing
  REQUIRE(r4.st);
  CHECK(f.has_blob("world"));
  f.compact();
  CHECK_FALSE(f.has_blob("world"));
  CHECK(f.s->header().external_size == std::string(R"({"v":1})").size());  // the tombstone's body only
}

TEST_CASE("compaction drops older revisions' bodies, keeps every leaf's, and stemming drops at once") {
  shard f;
  auto r1 = f.put("d", R"({"a":{"data":"b2xk"}})");            // "old"
  auto r2 = f.put("d", R"({"b":{"data":"bmV3"}})", {r1.rev});  // "new"
  auto c1 = f.put("c", nullptr, {rev_id{1, "x"}}, false);      // a conflict: two leaves, both kept
  auto c2 = f.put("c", nullptr, {rev_id{1, "y"}}, false);
  REQUIRE((r1.st && r2.st && c1.st && c2.st));
  f.body("d", r1.rev);  // still there before compaction
  CHECK(f.compact(1) == 2);
  auto snap = f.s->read();
  std::string text;
  CHECK_FALSE(snap->body("d", r1.rev, text));
  CHECK(snap->body("d", r2.rev, text));
  CHECK(snap->body("c", rev_id{1, "x"}, text));
  CHECK(snap->body("c", rev_id{1, "y"}, text));
  CHECK_FALSE(f.has_blob("old"));
  CHECK(f.has_blob("new"));
  CHECK(f.compact(1) == 2);  // again: nothing left to drop, nothing breaks

  // revs_limit 2: the revision stemmed away loses its body (and blob) in the same commit.
  write_op limit;
  limit.what = write_op::kind::revs_limit;
  limit.revs_limit = 2;
  REQUIRE(f.s->commit({&limit}, 1700000100));
  auto e1 = f.put("e", R"({"x":{"data":"Zmlyc3Q="}})");  // "first"
  auto e2 = f.put("e", R"({"y":{"data":"c2Vjb25k"}})", {e1.rev});
  CHECK(f.has_blob("first"));
  auto e3 = f.put("e", R"({"y":{"stub":true}})", {e2.rev});  // e1 stemmed
  REQUIRE(e3.st);
  CHECK_FALSE(f.has_blob("first"));
  CHECK(f.has_blob("second"));
  auto after = f.s->read();
  CHECK_FALSE(after->body("e", e1.rev, text));
  CHECK(after->body("e", e2.rev, text));
}

TEST_CASE("equal bytes are stored once and freed with the last reference; large blobs are chunked") {
  shard f;
  std::string data = big(300 * 1024);  // five chunks of 64 KiB
  std::string b64 = crypto::base64_encode(data);
  std::string atts = R"({"big":{"data":")" + b64 + R"("}})";
  auto a = f.put("a", atts.c_str());
  auto b = f.put("b", atts.c_str());
  REQUIRE(a.st);
  REQUIRE(b.st);
  CHECK(f.has_blob(data));
  REQUIRE(f.put("a", nullptr, {a.rev}, true, true).st);
  f.compact();
  CHECK(f.has_blob(data));
  REQUIRE(f.put("b", nullptr, {b.rev}, true, true).st);
  CHECK(f.has_blob(data));
  CHECK(f.compact(100) == 2);
  CHECK_FALSE(f.has_blob(data));
}

TEST_CASE("stubs: missing ones are 412 missing_stub, a stale base is the conflict first, nothing written") {
  shard f;
  auto r1 = f.put("d", R"({"a":{"data":"aGVsbG8="}})");
  auto r2 = f.put("d", R"({"a":{"stub":true}})", {r1.rev});
  REQUIRE(r2.st);
  uint64_t seq = f.s->header().update_seq;

  auto missing = f.put("d", R"({"zz":{"stub":true}})", {r2.rev});
  CHECK(missing.st.code == errc::missing_stub);
  CHECK(missing.st.reason == "Invalid attachment stub in d for zz");
  auto fresh = f.put("new", R"({"a":{"stub":true}})");
  CHECK(fresh.st.code == errc::missing_stub);
  CHECK(fresh.st.reason == "Previous revision missing for document new");
  auto stale = f.put("d", R"({"a":{"stub":true}})", {r1.rev});  // r1 is no longer a leaf
  CHECK(stale.st.code == errc::conflict);
  CHECK(f.s->header().update_seq == seq);
  CHECK(f.has_blob("hello"));
}

TEST_CASE("unmanaged bodies keep their _attachments as given and take no references") {
  shard f;
  doc_update u;
  u.id = "raw";
  u.body = R"({"_attachments":{"a":{"stub":true},"b":{"data":"aGVsbG8="}}})";
  write_op op;
  op.docs.push_back(u);
  REQUIRE(f.s->commit({&op}, 1700000100));
  REQUIRE(op.results.front().st);
  CHECK(f.body("raw", op.results.front().rev).dump() == u.body);
  CHECK_FALSE(f.has_blob("hello"));
}

TEST_CASE("replicated edits (new_edits=false) merge stubs from the newest ancestor this copy has") {
  shard f;
  auto r1 = f.put("d", R"({"a":{"data":"aGVsbG8="}})");
  REQUIRE(r1.st);
  rev_id r3{3, "cc"}, r2{2, "bb"};
  auto merged = f.put("d", R"({"a":{"stub":true}})", {r3, r2, r1.rev}, false);
  REQUIRE(merged.st);
  CHECK(f.body("d", r3)["_attachments"]["a"]["key"] == crypto::sha256_hex("hello"));
  // A branch whose ancestors this copy never had cannot resolve a stub.
  auto orphan = f.put("d", R"({"a":{"stub":true}})", {{2, "zz"}, {1, "yy"}}, false);
  CHECK(orphan.st.code == errc::missing_stub);
  // The same revision again is not read again (nothing to merge, nothing refused).
  auto again = f.put("d", R"({"a":{"stub":true}})", {r3, r2, r1.rev}, false);
  CHECK(again.st);
  CHECK_FALSE(again.added);
}

TEST_CASE("internal replication carries the blobs a body names, and the target references them") {
  shard source, target;
  std::string data = big(100 * 1024);
  std::string atts = R"({"a":{"data":")" + crypto::base64_encode(data) + R"("}})";
  auto r1 = source.put("d", atts.c_str());
  REQUIRE(r1.st);
  REQUIRE(source.put("plain", nullptr).st);
  auto batch = source.s->read()->read_for_replication(0, 100);
  REQUIRE(batch.updates.size() == 2);
  for (auto& u : batch.updates) {
    CHECK(u.managed_attachments == (u.id == "d"));
    CHECK(u.blobs.size() == (u.id == "d" ? 1u : 0u));
  }
  write_op op;
  op.docs = batch.updates;
  REQUIRE(target.s->commit({&op}, 1700000100));
  for (auto& r : op.results) CHECK(r.st);
  CHECK(target.has_blob(data));
  CHECK(target.body("d", r1.rev) == source.body("d", r1.rev));
  // Applying the same batch again changes nothing (and keeps one reference).
  write_op again;
  again.docs = batch.updates;
  REQUIRE(target.s->commit({&again}, 1700000100));
  REQUIRE(target.put("d", nullptr, {r1.rev}, true, true).st);
  target.compact();
  CHECK_FALSE(target.has_blob(data));
}

TEST_CASE("a replication batch ends once its attachment bytes pass the batch limit") {
  shard f;
  for (char c : std::string("abcde")) {  // 3.5 MiB each, small enough to travel in the batch
    std::string data = big(7u << 19);
    data[0] = c;  // other bytes, another blob
    std::string atts = R"({"a":{"data":")" + crypto::base64_encode(data) + R"("}})";
    REQUIRE(f.put(std::string(1, c), atts.c_str()).st);
  }
  REQUIRE(f.put("six", nullptr).st);
  auto first = f.s->read()->read_for_replication(0, 100);
  CHECK(first.docs == 5);  // 17.5 MiB: past 16 MiB after the fifth document
  CHECK(first.large_blobs.empty());
  auto rest = f.s->read()->read_for_replication(first.last_seq, 100);
  REQUIRE(rest.docs == 1);
  CHECK(rest.updates.front().id == "six");
}

// A piece-wise write of `data` into `f` as the front stages an upload: pieces of `piece` bytes.
void stage_all(shard& f, const std::string& key, const std::string& data, size_t piece) {
  for (size_t at = 0; at < data.size() || at == 0; at += piece) {
    write_op op;
    op.what = write_op::kind::stage_blob;
    op.blob_key = key;
    op.blob_offset = at;
    op.blob_piece = data.substr(at, piece);
    REQUIRE(f.s->commit({&op}, 1700000100));
    REQUIRE(op.st);
    if (data.empty()) break;
  }
}

TEST_CASE("a large blob is staged in pieces, named by a write, read in ranges, and left out of batches") {
  shard f;
  std::string data = big(6u << 20);
  std::string key = crypto::sha256_hex(data);
  // A piece out of order is the op's 400, not the transaction's; nothing was staged.
  write_op late;
  late.what = write_op::kind::stage_blob;
  late.blob_key = key;
  late.blob_offset = blob_store::chunk_bytes;
  late.blob_piece = "x";
  REQUIRE(f.s->commit({&late}, 1700000100));
  CHECK(late.st.code == errc::bad_request);
  stage_all(f, key, data, 1u << 20);
  stage_all(f, key, data.substr(0, 2u << 20), 1u << 20);  // a retry of staged pieces: skipped
  CHECK_FALSE(f.has_blob(data));                          // staged is not readable yet
  CHECK(f.s->header().external_size == data.size());
  // A write names it by its stored entry (as attachment_stream's stage_upload makes it).
  doc_update u;
  u.id = "big";
  u.managed_attachments = true;
  json e{{"content_type", "x/y"}, {"digest", "md5-x"}, {"length", data.size()}, {"revpos", 0}, {"key", key}};
  json wrong = e;
  wrong["length"] = data.size() + 1;  // a blob staged short of its entry is not there
  u.body = json{{"_attachments", {{"a", wrong}}}}.dump();
  write_op bad;
  bad.docs.push_back(u);
  REQUIRE(f.s->commit({&bad}, 1700000100));
  CHECK(bad.results.front().st.code == errc::missing_stub);
  u.body = json{{"_attachments", {{"a", e}}}}.dump();
  write_op op;
  op.docs.push_back(u);
  REQUIRE(f.s->commit({&op}, 1700000100));
  REQUIRE(op.results.front().st);
  CHECK(f.has_blob(data));
  CHECK(f.s->header().external_size < data.size() + 1000);  // counted once
  // Staging it again: the shard says it holds it whole.
  write_op again;
  again.what = write_op::kind::stage_blob;
  again.blob_key = key;
  REQUIRE(f.s->commit({&again}, 1700000100));
  CHECK(again.blob_whole);
  // Ranges across chunks, and past the end.
  auto snap = f.s->read();
  std::string out;
  REQUIRE(snap->blob_range(key, 65530, 200000, out));
  CHECK(out == data.substr(65530, 200000));
  REQUIRE(snap->blob_range(key, data.size() - 10, 100, out));
  CHECK(out == data.substr(data.size() - 10));
  REQUIRE(snap->blob_range(key, data.size() + 5, 100, out));
  CHECK(out.empty());
  // Internal replication lists it apart, for the replicator to stage on the target.
  auto batch = snap->read_for_replication(0, 100);
  REQUIRE(batch.large_blobs.size() == 1);
  CHECK(batch.large_blobs.front() == std::pair<std::string, uint64_t>(key, data.size()));
  CHECK(batch.updates.front().blobs.empty());
}

TEST_CASE("staged blobs go when dropped, and at the next open") {
  temp_dir dir;
  std::string path = dir.path + "/s.1";
  store_options o;
  o.map_size_bytes = 64ull << 20;
  std::string one = big(3u << 20), two = big(2u << 20) + "2";
  {
    auto s = *shard_store::open(path, o);
    for (auto* data : {&one, &two}) {
      write_op op;
      op.what = write_op::kind::stage_blob;
      op.blob_key = crypto::sha256_hex(*data);
      op.blob_piece = *data;
      REQUIRE(s->commit({&op}, 1700000100));
    }
    CHECK(s->header().external_size == one.size() + two.size());
    write_op drop;
    drop.what = write_op::kind::drop_staged;
    drop.blob_key = crypto::sha256_hex(one);
    REQUIRE(s->commit({&drop}, 1700000100));
    CHECK(s->header().external_size == two.size());
  }
  auto s = *shard_store::open(path, o);  // a restart: no upload resumes
  CHECK(s->header().external_size == 0);
  write_op probe;
  probe.what = write_op::kind::stage_blob;
  probe.blob_key = crypto::sha256_hex(two);
  probe.blob_offset = 1u << 20;  // out of order now: the staged start is gone
  probe.blob_piece = "x";
  REQUIRE(s->commit({&probe}, 1700000100));
  CHECK(probe.st.code == errc::bad_request);
}
