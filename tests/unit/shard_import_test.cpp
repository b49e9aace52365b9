// A shard split's copy (write_op::kind::import): children continue the parent's numbering, hold
// every revision body, attachment and _local document of their range, and top-off passes replace
// what changed since without ever listing a document twice. A move's copy: the same import, fed by
// batches that crossed the node protocol, keeping the source's uuid and seqs.
#include <doctest/doctest.h>

#include <map>

#include "storage/import_batch.hpp"
#include "storage/shard_store.hpp"
#include "temp_dir.hpp"

using namespace settee;

namespace {

std::shared_ptr<shard_store> open_at(const std::string& path) {
  store_options o;
  o.node_name = "n1@h";
  o.map_size_bytes = 64ull << 20;
  auto s = shard_store::open(path, o);
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().reason));
  return *s;
}

rev_id put(shard_store& s, const std::string& id, const std::string& body, std::vector<rev_id> revs = {},
           bool deleted = false, int64_t now = 1800000100) {
  write_op op;
  doc_update u;
  u.id = id;
  u.body = body;
  u.revs = std::move(revs);
  u.deleted = deleted;
  u.managed_attachments = true;
  if (body.find("_attachments") != std::string::npos) {
    json b = *parse_json(body);
    REQUIRE(attachments::take_inline(b["_attachments"], false, u.blobs));
    u.body = b.dump();
  }
  op.docs.push_back(std::move(u));
  REQUIRE(s.commit({&op}, now));
  REQUIRE(op.results.front().st);
  return op.results.front().rev;
}

// One import step from `parent` into `child` (ids starting with a letter up to 'm' stay left).
import_request import(shard_store& parent, shard_store& child, bool left, uint64_t since, size_t limit = 1000,
                      bool all = true) {
  auto snap = parent.read();
  REQUIRE(snap.ok());
  write_op op;
  op.what = write_op::kind::import;
  op.import = std::make_shared<import_request>();
  op.import->from = &*snap;
  op.import->keep = [left](std::string_view id) { return (id[0] <= 'm') == left; };
  op.import->since = since;
  op.import->limit = limit;
  if (all) {
    op.import->header = parent.header();
    op.import->local_docs = true;
  }
  REQUIRE(child.commit({&op}, 1700009999));
  REQUIRE(op.st);
  return *op.import;
}

std::map<uint64_t, std::string> changes(shard_store& s) {
  std::map<uint64_t, std::string> out;
  auto snap = s.read();
  snap->scan_changes(0, [&](const change_entry& c) {
    out[c.seq] = c.id + " " + c.rev + (c.deleted ? " deleted" : "");
    return true;
  });
  return out;
}

}  // namespace

TEST_CASE("a split's children continue the parent's numbering and hold all of their range") {
  temp_dir dir;
  auto parent = open_at(dir.path + "/p");
  auto left = open_at(dir.path + "/l");
  auto right = open_at(dir.path + "/r");
  rev_id a1 = put(*parent, "apple", R"({"v":1})", {}, false, 1800000100);
  put(*parent, "zebra", R"({"v":1})", {}, false, 1800000200);
  rev_id a2 = put(*parent, "apple", R"({"v":2})", {a1}, false, 1800000300);
  rev_id k1 =
      put(*parent, "kiwi", R"({"_attachments":{"t.txt":{"content_type":"application/x-data","data":"aGVsbG8="}}})");
  rev_id y1 = put(*parent, "yak", R"({"v":1})");
  put(*parent, "yak", "{}", {y1}, true);  // a tombstone travels too
  {
    write_op op;
    op.what = write_op::kind::local;
    op.local = {"_local/checkpoint", R"({"seq":4})", false, 0};
    REQUIRE(parent->commit({&op}, 1800000400));
    write_op sec;
    sec.what = write_op::kind::security;
    sec.security = R"({"members":{"names":["x"]}})";
    REQUIRE(parent->commit({&sec}, 1800000500));
  }
  const shard_header ph = parent->header();

  auto l = import(*parent, *left, true, 0);
  auto r = import(*parent, *right, false, 0);
  CHECK(l.done);
  CHECK(l.last == ph.update_seq);
  CHECK(l.copied == 2);  // apple, kiwi
  CHECK(r.copied == 2);  // zebra, yak
  CHECK(left->header().update_seq == ph.update_seq);
  CHECK(right->header().update_seq == ph.update_seq);

  // Together the children list exactly the parent's changes, at the same seqs.
  auto all = changes(*left);
  for (auto& [seq, c] : changes(*right)) CHECK(all.emplace(seq, c).second);
  CHECK(all == changes(*parent));

  CHECK(left->header().doc_count == 2);
  CHECK(right->header().doc_count == 1);
  CHECK(right->header().doc_del_count == 1);
  CHECK(left->header().security == R"({"members":{"names":["x"]}})");
  REQUIRE(!ph.time_seq.bins.empty());
  CHECK(left->header().time_seq.bins.size() == ph.time_seq.bins.size());
  CHECK(left->header().time_seq.bins.front().seq == ph.time_seq.bins.front().seq);
  auto snap = left->read();
  std::string body;
  CHECK(snap->body("apple", a1, body));  // an older revision's body, until compaction
  CHECK(snap->body("apple", a2, body));
  CHECK(body == R"({"v":2})");
  CHECK(snap->body("kiwi", k1, body));
  std::string bytes;
  CHECK(snap->blob(attachments::keys_of(*parse_json(body)).at(0), bytes));
  CHECK(bytes == "hello");
  local_doc ld;
  CHECK(snap->local("_local/checkpoint", ld));
  CHECK(ld.body == R"({"seq":4})");
  CHECK(snap->live_total() == 2);
  CHECK(!right->read()->local("_local/nothing", ld));
}

TEST_CASE("top-off passes replace documents that changed, in steps that end where they say") {
  temp_dir dir;
  auto parent = open_at(dir.path + "/p");
  auto left = open_at(dir.path + "/l");
  std::map<std::string, rev_id> revs;
  for (char c = 'a'; c <= 'z'; ++c) revs[std::string(1, c)] = put(*parent, std::string(1, c), R"({"v":1})");
  // In steps of 5 changes: 26 changes, 6 steps, each starting where the last one ended.
  uint64_t since = 0;
  size_t steps = 0, copied = 0;
  for (bool done = false; !done; ++steps) {
    auto st = import(*parent, *left, true, since, 5, false);
    CHECK(st.last > since - (st.done ? 1 : 0));
    since = st.last;
    copied += st.copied;
    done = st.done;
  }
  CHECK(steps == 6);
  CHECK(copied == 13);  // a..m
  const uint64_t copied_to = since;

  // Writes go on in the parent meanwhile; the next pass brings them.
  revs["b"] = put(*parent, "b", R"({"v":2})", {revs["b"]});
  put(*parent, "c", "{}", {revs["c"]}, true);
  put(*parent, "q", R"({"v":2})", {revs["q"]});  // the other half's
  put(*parent, "mango", R"({"v":1})");
  auto pass = import(*parent, *left, true, copied_to);
  CHECK(pass.done);
  CHECK(pass.copied == 3);
  CHECK(pass.last == parent->header().update_seq);

  auto seen = changes(*left);
  CHECK(seen.size() == 14);  // one entry per document: b and c moved to their new seqs
  std::map<std::string, uint64_t> seq_of;
  for (auto& [seq, c] : seen) CHECK(seq_of.emplace(c.substr(0, c.find(' ')), seq).second);
  auto snap = parent->read();
  for (auto& [id, seq] : seq_of) {
    doc_info d;
    REQUIRE(snap->doc(id, d));
    CHECK(d.seq == seq);
  }
  CHECK(left->header().doc_count == 13);
  CHECK(left->header().doc_del_count == 1);
  CHECK(left->read()->live_total() == 13);
  // The child takes writes of its own from where the parent's numbering ended.
  rev_id next = put(*left, "b", R"({"v":3})", {revs["b"]});
  CHECK(next.pos == 3);
  CHECK(left->header().update_seq == parent->header().update_seq + 1);
}

TEST_CASE("a move's copy travels as import batches and keeps the source's identity and numbering") {
  temp_dir dir;
  auto source = open_at(dir.path + "/a");
  store_options o;
  o.node_name = "n2@h";
  o.map_size_bytes = 64ull << 20;
  auto target = *shard_store::open(dir.path + "/b", o);
  for (char c = 'a'; c <= 'z'; ++c) put(*source, std::string(1, c), R"({"v":1})");
  rev_id k1 =
      put(*source, "kiwi", R"({"_attachments":{"t.txt":{"content_type":"application/x-data","data":"aGVsbG8="}}})");
  {
    write_op op;
    op.what = write_op::kind::local;
    op.local = {"_local/checkpoint", R"({"seq":4})", false, 0};
    REQUIRE(source->commit({&op}, 1800000400));
  }
  // Batches of 10 changes, encoded and decoded as the node protocol carries them.
  uint64_t since = 0;
  size_t batches = 0;
  for (bool done = false; !done; ++batches) {
    auto snap = source->read();
    REQUIRE(snap.ok());
    auto read = import_batch::read(*snap, since, 10, 1u << 20, true);
    REQUIRE(read.ok());
    auto batch = import_batch::decode(read->encode());
    REQUIRE(batch);
    CHECK(batch->size() == read->size());
    CHECK(batch->last_seq() == read->last_seq());
    write_op op;
    op.what = write_op::kind::import;
    op.import = std::make_shared<import_request>();
    op.import->from = &*batch;
    op.import->since = since;
    op.import->limit = SIZE_MAX;
    shard_header h;
    REQUIRE(batch->header(h));
    op.import->header = h;
    op.import->local_docs = true;
    op.import->owner = "n2@h";
    REQUIRE(target->commit({&op}, 1700009999));
    REQUIRE(op.st);
    since = op.import->last;
    done = op.import->done;
  }
  CHECK(batches == 3);  // 27 changes
  CHECK(changes(*target) == changes(*source));
  const shard_header a = source->header(), b = target->header();
  CHECK(b.update_seq == a.update_seq);
  CHECK(b.shard_uuid == a.shard_uuid);
  REQUIRE(b.epochs.size() == a.epochs.size() + 1);
  CHECK(b.epochs.back() == std::make_pair(std::string("n2@h"), a.update_seq));
  CHECK(b.doc_count == a.doc_count);
  CHECK(b.time_seq.bins.size() == a.time_seq.bins.size());
  auto snap = target->read();
  std::string body, bytes;
  REQUIRE(snap->body("kiwi", k1, body));
  CHECK(snap->blob(attachments::keys_of(*parse_json(body)).at(0), bytes));
  CHECK(bytes == "hello");
  local_doc ld;
  CHECK(snap->local("_local/checkpoint", ld));
  // The moved copy takes writes of its own where the source's numbering ended.
  put(*target, "new", "{}");
  CHECK(target->header().update_seq == a.update_seq + 1);
  CHECK(!import_batch::decode("not a batch"));
}

TEST_CASE("an import carries the source's purge requests; a document purged whole after a pass leaves the copy") {
  temp_dir dir;
  auto parent = open_at(dir.path + "/p");
  auto child = open_at(dir.path + "/c");
  auto moved = open_at(dir.path + "/m");
  rev_id a = put(*parent, "a", "{}");
  rev_id b = put(*parent, "b", "{}");
  put(*parent, "z", "{}");  // the other child's
  auto first = import(*parent, *child, true, 0);
  CHECK(changes(*child).size() == 2);
  // Purged whole after the first pass: no change names it any more; the next pass takes it away.
  write_op purge;
  purge.what = write_op::kind::purge;
  purge.purges = {{0, "u-a", "a", {a}}, {0, "u-z", "z", {rev_id{1, "x"}}}};
  REQUIRE(parent->commit({&purge}, 1800000200));
  import(*parent, *child, true, first.last);
  auto snap = child->read();
  doc_info d;
  CHECK_FALSE(snap->doc("a", d));
  CHECK(snap->doc("b", d));
  CHECK(child->header().doc_count == 1);
  std::vector<std::string> uuids;
  snap->scan_purges(0, [&](const purge_info& p) {
    uuids.push_back(p.uuid);
    return true;
  });
  CHECK(uuids == std::vector<std::string>{"u-a"});  // only its range's, with the parent's seq
  CHECK(child->header().purge_seq == 1);
  // Across the node protocol (a move): the batch says which documents the source no longer holds.
  write_op first_move;
  first_move.what = write_op::kind::import;
  {
    auto psnap = parent->read();
    auto batch = import_batch::decode(import_batch::read(*psnap, 0, 10, 1u << 20, true)->encode());
    REQUIRE(batch);
    first_move.import = std::make_shared<import_request>();
    first_move.import->from = &*batch;
    first_move.import->header = parent->header();
    first_move.import->owner = "n2@h";
    REQUIRE(moved->commit({&first_move}, 1800000300));
    REQUIRE(first_move.st);
  }
  CHECK(moved->header().purge_seq == 2);
  auto msnap = moved->read();
  CHECK_FALSE(msnap->doc("a", d));
  CHECK(msnap->doc("b", d));
  (void)b;
}
