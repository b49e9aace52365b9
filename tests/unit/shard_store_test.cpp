// shard_store against real LMDB files in temporary directories.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>

#include "shard_fixture.hpp"
#include "storage/doc_key.hpp"
#include "storage/purge_log.hpp"
#include "storage/shard_store.hpp"
#include "temp_dir.hpp"

using namespace settee;
using namespace settee::testing;

namespace {

std::vector<change_entry> changes(shard_store& s, uint64_t since = 0) {
  std::vector<change_entry> out;
  auto snap = s.read();
  REQUIRE(snap.ok());
  snap->scan_changes(since, [&](const change_entry& e) {
    out.push_back(e);
    return true;
  });
  return out;
}

}  // namespace

TEST_CASE("create, update, conflict, delete and recreate a document") {
  temp_dir dir;
  auto s = open_store(dir.path + "/shards/00000000-ffffffff/db.1");
  auto r1 = write(*s, {upd("a", "{\"v\":1}")});
  REQUIRE(r1[0].st);
  CHECK(r1[0].rev.pos == 1);
  CHECK(r1[0].rev.hash.size() == 32);

  auto conflict = write(*s, {upd("a", "{\"v\":2}")});
  CHECK(conflict[0].st.code == errc::conflict);
  auto stale = write(*s, {upd("a", "{\"v\":2}", {rev_id{1, "0000"}})});
  CHECK(stale[0].st.code == errc::conflict);

  auto r2 = write(*s, {upd("a", "{\"v\":2}", {r1[0].rev})});
  REQUIRE(r2[0].st);
  CHECK(r2[0].rev.pos == 2);
  auto again = write(*s, {upd("a", "{\"v\":3}", {r1[0].rev})});
  CHECK(again[0].st.code == errc::conflict);  // 1-x is no longer a leaf

  auto snap = s->read();
  REQUIRE(snap.ok());
  doc_info d;
  REQUIRE(snap->doc("a", d));
  std::string body;
  CHECK(snap->body("a", r2[0].rev, body));
  CHECK(body == "{\"v\":2}");
  CHECK(snap->body("a", r1[0].rev, body));  // older revisions keep their bodies until compaction
  CHECK(body == "{\"v\":1}");
  CHECK(s->header().doc_count == 1);

  auto del = write(*s, {upd("a", "{}", {r2[0].rev}, true)});
  REQUIRE(del[0].st);
  CHECK(s->header().doc_count == 0);
  CHECK(s->header().doc_del_count == 1);
  auto re = write(*s, {upd("a", "{\"v\":9}")});  // extends the tombstone
  REQUIRE(re[0].st);
  CHECK(re[0].rev.pos == 4);
  CHECK(s->header().doc_count == 1);
  CHECK(s->header().doc_del_count == 0);
}

TEST_CASE("by_seq keeps one entry per document, with commit time and leaves") {
  temp_dir dir;
  auto s = open_store(dir.path + "/x.db");
  auto r = write(*s, {upd("a", "{}"), upd("b", "{}"), upd("c", "{}")}, 100);
  write(*s, {upd("a", "{\"x\":1}", {r[0].rev})}, 200);
  auto all = changes(*s);
  REQUIRE(all.size() == 3);
  CHECK(all[0].id == "b");
  CHECK(all[1].id == "c");
  CHECK(all[2].id == "a");
  CHECK(all[2].seq == 4);
  CHECK(all[2].time_s == 200);
  CHECK(all[0].time_s == 100);
  CHECK(all[2].leaf_revs.size() == 1);
  CHECK(changes(*s, 3).size() == 1);
  CHECK(s->header().update_seq == 4);
}

TEST_CASE("new_edits=false merges histories, creates conflicts, is idempotent") {
  temp_dir dir;
  auto s = open_store(dir.path + "/x.db");
  doc_update u = upd("d", "{\"side\":\"one\"}", {rev_id{2, "b1"}, rev_id{1, "a"}});
  u.new_edits = false;
  write(*s, {u});
  doc_update v = upd("d", "{\"side\":\"two\"}", {rev_id{2, "b2"}, rev_id{1, "a"}});
  v.new_edits = false;
  write(*s, {v});
  write(*s, {v});  // again: no change
  CHECK(s->header().update_seq == 2);
  auto snap = s->read();
  doc_info d;
  REQUIRE(snap->doc("d", d));
  CHECK(d.tree.leaves().size() == 2);
  CHECK(d.tree.rev(d.tree.winner()).str() == "2-b2");
  auto ch = changes(*s);
  REQUIRE(ch.size() == 1);
  CHECK(ch[0].leaf_revs == std::vector<std::string>{"2-b2", "2-b1"});
}

TEST_CASE("new_edits=false refuses a history that skips a generation (another node's push may carry one)") {
  temp_dir dir;
  auto s = open_store(dir.path + "/x.db");
  for (std::vector<rev_id> bad : {std::vector<rev_id>{rev_id{5, "e"}, rev_id{2, "b"}},  // a gap
                                  std::vector<rev_id>{rev_id{1, "a"}, rev_id{2, "b"}},  // oldest first
                                  std::vector<rev_id>{rev_id{1, "a"}, rev_id{0, "z"}},
                                  std::vector<rev_id>{rev_id{UINT64_MAX, "z"}}}) {  // no room for an edit
    doc_update u = upd("d", "{}", bad);
    u.new_edits = false;
    auto r = write(*s, {u});
    CHECK(r[0].st.code == errc::bad_request);
  }
  CHECK(s->header().update_seq == 0);  // nothing written: no tree a later read would refuse
  auto snap = s->read();
  doc_info d;
  CHECK_FALSE(snap->doc("d", d));
  CHECK(is_rev_path({rev_id{3, "c"}, rev_id{2, "b"}, rev_id{1, "a"}}));
  CHECK(is_rev_path({rev_id{7, "g"}}));
  CHECK_FALSE(is_rev_path({}));
}

TEST_CASE("revs_limit stems history on write") {
  temp_dir dir;
  auto s = open_store(dir.path + "/x.db");
  write_op lim;
  lim.what = write_op::kind::revs_limit;
  lim.revs_limit = 3;
  REQUIRE(s->commit({&lim}, 0));
  rev_id rev;
  for (int i = 0; i < 10; ++i) {
    auto r = write(
        *s, {upd("a", "{\"i\":" + std::to_string(i) + "}", i ? std::vector<rev_id>{rev} : std::vector<rev_id>{})});
    REQUIRE(r[0].st);
    rev = r[0].rev;
  }
  auto snap = s->read();
  doc_info d;
  REQUIRE(snap->doc("a", d));
  CHECK(d.tree.nodes().size() == 3);
  CHECK(d.tree.rev(d.tree.winner()).pos == 10);
}

TEST_CASE("local documents: revisions 0-N, never checked (as CouchDB), delete") {
  temp_dir dir;
  auto s = open_store(dir.path + "/x.db");
  auto write_local = [&](local_update u) {
    write_op op;
    op.what = write_op::kind::local;
    op.local = std::move(u);
    REQUIRE(s->commit({&op}, 0));
    CHECK(op.st);
    return op.local_rev;
  };
  CHECK(write_local({"_local/cp", "{\"seq\":1}", false, 0}) == 1);
  CHECK(write_local({"_local/cp", "{\"seq\":2}", false, 0}) == 1);  // no revision: 0-1 again
  CHECK(write_local({"_local/cp", "{\"seq\":3}", false, 7}) == 8);  // a future one: one more
  local_doc ld;
  REQUIRE(s->read()->local("_local/cp", ld));
  CHECK(ld.body == "{\"seq\":3}");
  CHECK(ld.rev == 8);
  CHECK(changes(*s).empty());                           // not in the feed
  CHECK(write_local({"_local/cp", "", true, 2}) == 0);  // any revision deletes
  CHECK_FALSE(s->read()->local("_local/cp", ld));
  CHECK(write_local({"_local/never", "", true, 0}) == 0);  // deleting what is not there is no error
}

TEST_CASE("everything survives reopening; a new owner starts an epoch") {
  temp_dir dir;
  std::string path = dir.path + "/x.db";
  std::string uuid;
  {
    auto s = open_store(path);
    write(*s, {upd("a", "{\"k\":\"v\"}")});
    write_op sec;
    sec.what = write_op::kind::security;
    sec.security = "{\"members\":{\"names\":[\"bob\"]}}";
    REQUIRE(s->commit({&sec}, 0));
    uuid = s->header().shard_uuid;
    CHECK(uuid.size() == 32);
  }
  auto s = open_store(path, "n2@h");
  shard_header h = s->header();
  CHECK(h.shard_uuid == uuid);
  CHECK(h.update_seq == 1);
  CHECK(h.doc_count == 1);
  CHECK(h.created_at == 1700000000);
  CHECK(h.security == "{\"members\":{\"names\":[\"bob\"]}}");
  REQUIRE(h.epochs.size() == 2);
  CHECK(h.epochs[0] == std::make_pair(std::string("n1@h"), uint64_t{0}));
  CHECK(h.epochs[1] == std::make_pair(std::string("n2@h"), uint64_t{1}));
}

TEST_CASE("scan_docs in both directions from a start key") {
  temp_dir dir;
  auto s = open_store(dir.path + "/x.db");
  write(*s, {upd("b", "{}"), upd("d", "{}"), upd("f", "{}")});
  auto ids = [&](std::string start, bool desc) {
    std::vector<std::string> out;
    s->read()->scan_docs(start, desc, [&](const doc_info& d) {
      out.push_back(d.id);
      return true;
    });
    return out;
  };
  CHECK(ids("", false) == std::vector<std::string>{"b", "d", "f"});
  CHECK(ids("", true) == std::vector<std::string>{"f", "d", "b"});
  CHECK(ids("c", false) == std::vector<std::string>{"d", "f"});
  CHECK(ids("c", true) == std::vector<std::string>{"b"});
  CHECK(ids("d", true) == std::vector<std::string>{"d", "b"});
  CHECK(ids("z", true) == std::vector<std::string>{"f", "d", "b"});
}

TEST_CASE("a full map is an error value, and the store stays usable") {
  temp_dir dir;
  store_options o;
  o.map_size_bytes = 1 << 20;
  auto s = shard_store::open(dir.path + "/small.db", o);
  REQUIRE(s.ok());
  write_op big;
  big.docs.push_back(upd("big", "{\"x\":\"" + std::string(2 << 20, 'x') + "\"}"));
  status st = (*s)->commit({&big}, 0);
  CHECK(st.code == errc::storage_full);
  CHECK(big.st.code == errc::storage_full);
  write_op small;
  small.docs.push_back(upd("small", "{}"));
  CHECK((*s)->commit({&small}, 0));
  CHECK((*s)->header().doc_count == 1);
}

TEST_CASE("header keeps fields a newer release added") {
  shard_header h;
  h.shard_uuid = "u";
  h.update_seq = 5;
  std::string bytes = h.encode("");
  shard_header back;
  REQUIRE(shard_header::decode(bytes, back));
  CHECK(back.update_seq == 5);
  CHECK_FALSE(shard_header::decode("garbage!", back));
  CHECK_FALSE(shard_header::decode("", back));
}

TEST_CASE("changes in reverse and counts after a seq") {
  temp_dir dir;
  auto s = open_store(dir.path + "/x.db");
  write(*s, {upd("a", "{}"), upd("b", "{}"), upd("c", "{}"), upd("d", "{}")});
  auto snap = s->read();
  REQUIRE(snap.ok());
  std::vector<uint64_t> seqs;
  snap->scan_changes_descending(0, [&](const change_entry& e) {
    seqs.push_back(e.seq);
    return true;
  });
  CHECK(seqs == std::vector<uint64_t>{4, 3, 2, 1});
  seqs.clear();
  snap->scan_changes_descending(3, [&](const change_entry& e) {
    seqs.push_back(e.seq);
    return true;
  });
  CHECK(seqs == std::vector<uint64_t>{2, 1});
  seqs.clear();
  snap->scan_changes_descending(99, [&](const change_entry& e) {
    seqs.push_back(e.seq);
    return seqs.size() < 2;
  });
  CHECK(seqs == std::vector<uint64_t>{4, 3});
  CHECK(snap->count_changes_after(0) == 4);
  CHECK(snap->count_changes_after(3) == 1);
  CHECK(snap->count_changes_after(4) == 0);
}

TEST_CASE("a reset snapshot renews onto the latest commit") {
  temp_dir dir;
  auto s = open_store(dir.path + "/x.db");
  write(*s, {upd("a", "{}")});
  auto snap = s->read();
  REQUIRE(snap.ok());
  CHECK(snap->count_changes_after(0) == 1);
  snap->reset();
  write(*s, {upd("b", "{}")});
  REQUIRE(snap->renew());
  CHECK(snap->count_changes_after(0) == 2);
  doc_info d;
  CHECK(snap->doc("b", d));
}

TEST_CASE("replication batches make two copies converge, conflicts and tombstones included") {
  temp_dir dir;
  auto a = open_store(dir.path + "/a.db", "n1@h");
  auto b = open_store(dir.path + "/b.db", "n2@h");
  auto r = write(*a, {upd("x", "{\"v\":1}"), upd("y", "{\"v\":1}"), upd("z", "{}")});
  write(*a, {upd("x", "{\"v\":2}", {r[0].rev})});
  write(*a, {upd("z", "{}", {r[2].rev}, true)});  // a tombstone
  // b has its own edit of y: after replication both sides hold the conflict.
  write(*b, {upd("y", "{\"v\":\"b-side\"}")});

  auto push = [](shard_store& from, shard_store& to, uint64_t since, size_t max) {
    auto batch = from.read()->read_for_replication(since, max);
    write_op op;
    op.docs = batch.updates;
    REQUIRE(to.commit({&op}, 0));
    for (auto& res : op.results) CHECK(res.st);
    return batch;
  };
  auto b1 = push(*a, *b, 0, 2);  // in two batches
  CHECK(b1.docs == 2);
  auto b2 = push(*a, *b, b1.last_seq, 100);
  CHECK(b2.last_seq == a->header().update_seq);
  auto back = push(*b, *a, 0, 100);  // and the other way
  (void)back;

  for (auto* s : {a.get(), b.get()}) {
    auto snap = s->read();
    doc_info x, y, z;
    REQUIRE(snap->doc("x", x));
    REQUIRE(snap->doc("y", y));
    REQUIRE(snap->doc("z", z));
    CHECK(x.tree.rev(x.tree.winner()).pos == 2);
    CHECK(y.tree.leaves().size() == 2);
    CHECK(z.tree.winner_deleted());
    std::string body;
    CHECK(snap->body("x", x.tree.rev(x.tree.winner()), body));
    CHECK(body == "{\"v\":2}");
  }
  CHECK(a->header().doc_count == b->header().doc_count);
  CHECK(a->header().doc_del_count == b->header().doc_del_count);
  // Replaying a batch changes nothing (idempotent).
  uint64_t seq_before = b->header().update_seq;
  push(*a, *b, 0, 100);
  CHECK(b->header().update_seq == seq_before);
}

TEST_CASE("an edit whose revision is already here is a conflict marked known; others are plain conflicts") {
  temp_dir dir;
  auto s = open_store(dir.path + "/k.db");
  auto first = write(*s, {upd("d", "{\"a\":1}")});
  REQUIRE(first[0].st);
  CHECK(first[0].added);
  // The same create again (replication delivered it first): same revision, marked known.
  auto again = write(*s, {upd("d", "{\"a\":1}")});
  CHECK(again[0].st.code == errc::conflict);
  CHECK(again[0].known);
  CHECK_FALSE(again[0].added);
  CHECK(again[0].rev == first[0].rev);
  // A different body without a base: an ordinary conflict.
  auto other = write(*s, {upd("d", "{\"a\":2}")});
  CHECK(other[0].st.code == errc::conflict);
  CHECK_FALSE(other[0].known);
  // The same update on the base twice: the second is known.
  auto up = write(*s, {upd("d", "{\"a\":3}", {first[0].rev})});
  REQUIRE(up[0].st);
  auto up2 = write(*s, {upd("d", "{\"a\":3}", {first[0].rev})});
  CHECK(up2[0].known);
  CHECK(up2[0].rev == up[0].rev);
  CHECK(s->header().update_seq == 2);  // nothing written by the known ones
}

TEST_CASE("every changing commit records time-seq in the header; a reset keeps the seq; reopen keeps the bins") {
  temp_dir dir;
  const std::string path = dir.path + "/ts.db";
  const int64_t t0 = 1800000000;  // after min_time, 3h-aligned: 1800000000 = 166666 * 10800 + 7200
  {
    auto s = open_store(path);
    write(*s, {upd("a", "{}")}, t0);
    CHECK(s->header().time_seq.bins == std::vector<time_seq::bin>{{t0 / 10800 * 10800, 0}});
    write(*s, {upd("b", "{}")}, t0 + 10);  // same bin: unchanged
    CHECK(s->header().time_seq.bins.size() == 1);
    write(*s, {upd("c", "{}")}, t0 + 4 * 3600);  // a later bin: the seq committed before this commit
    REQUIRE(s->header().time_seq.bins.size() == 2);
    CHECK(s->header().time_seq.bins.front().seq == 2);
    write(*s, {upd("d", "{}")}, 1000);  // before min_time: ignored, never an error
    CHECK(s->header().time_seq.bins.size() == 2);
    CHECK(s->header().update_seq == 4);
  }
  auto s = open_store(path);
  CHECK(s->header().time_seq.bins.size() == 2);  // survives reopening
  write_op reset;
  reset.what = write_op::kind::time_seq_reset;
  REQUIRE(s->commit({&reset}, t0 + 8 * 3600));
  CHECK(s->header().time_seq.bins.empty());
  CHECK(s->header().update_seq == 4);  // not bumped
  auto hist_before = time_seq::histogram(s->header().time_seq, 4);
  CHECK(hist_before.empty());
  write(*s, {upd("e", "{}")}, t0 + 9 * 3600);
  auto h = time_seq::histogram(s->header().time_seq, s->header().update_seq);
  REQUIRE(h.size() == 2);  // earlier changes show in the 1970 bin
  CHECK(h[0] == std::pair<int64_t, uint64_t>{0, 4});
  CHECK(h[1].second == 1);
}

TEST_CASE("[time_seq] enabled=false: commits leave the bins alone, and those already there stay") {
  temp_dir dir;
  const std::string path = dir.path + "/off.db";
  const int64_t t0 = 1800000000;
  write(*open_store(path), {upd("a", "{}")}, t0);
  auto s = open_store(path, "n1@h", false);
  REQUIRE(s->header().time_seq.bins.size() == 1);
  write(*s, {upd("b", "{}")}, t0 + 4 * 3600);  // would open a second bin
  CHECK(s->header().time_seq.bins == std::vector<time_seq::bin>{{t0 / 10800 * 10800, 0}});
  CHECK(s->header().update_seq == 2);
}

TEST_CASE("skip_before_time: where a read continues to start at the first change committed at or after a time") {
  temp_dir dir;
  auto s = open_store(dir.path + "/skip.db");
  write(*s, {upd("a", "{}")}, 100);
  write(*s, {upd("b", "{}"), upd("c", "{}")}, 200);  // seqs 2 and 3
  write(*s, {upd("d", "{}")}, 150);                  // the clock went back: seq 4 at 150
  write(*s, {upd("e", "{}")}, 300);
  auto snap = s->read();
  REQUIRE(snap.ok());
  CHECK(snap->skip_before_time(0, 50) == 0);   // the first change is late enough
  CHECK(snap->skip_before_time(0, 100) == 0);  // at the second itself: kept
  CHECK(snap->skip_before_time(0, 101) == 1);  // a skipped, b is the first at or after 101
  CHECK(snap->skip_before_time(0, 150) == 1);  // b (200) comes first; d (150) after it is kept
  CHECK(snap->skip_before_time(2, 201) == 4);  // from seq 2 on: c, d skipped, e at 300
  CHECK(snap->skip_before_time(0, 301) == 5);  // none that late: the newest seq
  CHECK(snap->skip_before_time(5, 0) == 5);    // nothing after the start
}

TEST_CASE("live_before counts the live documents before any id, across bucket splits, deletes and reopening") {
  temp_dir dir;
  std::string path = dir.path + "/shards/00000000-ffffffff/db.1";
  auto s = open_store(path);
  std::map<std::string, rev_id> live;  // the truth: id -> winning rev of each live document
  uint64_t x = 12345;
  auto next = [&] { return x = x * 6364136223846793005ull + 1442695040888963407ull; };
  // 3,000 documents in random order (several buckets split), then 700 deleted, 200 re-created.
  for (int batch = 0; batch < 30; ++batch) {
    std::vector<doc_update> docs;
    for (int i = 0; i < 100; ++i) docs.push_back(upd("d" + std::to_string(next() % 100000), "{}"));
    auto r = write(*s, docs);
    for (size_t i = 0; i < docs.size(); ++i)
      if (r[i].st) live[docs[i].id] = r[i].rev;
  }
  std::vector<std::string> ids;
  for (auto& [id, rev] : live) ids.push_back(id);
  for (size_t i = 0; i < ids.size(); i += 4) {
    write(*s, {upd(ids[i], "{}", {live[ids[i]]}, true)});
    live.erase(ids[i]);
  }
  for (size_t i = 0; i < ids.size(); i += 16) {
    auto r = write(*s, {upd(ids[i], "{}")});  // recreated on top of the tombstone
    if (r[0].st) live[ids[i]] = r[0].rev;
  }
  auto check = [&](shard_store& store) {
    auto snap = store.read();
    REQUIRE(snap.ok());
    CHECK(snap->live_total() == live.size());
    for (int probe = 0; probe < 300; ++probe) {
      std::string id = probe % 3 == 0 ? ids[next() % ids.size()] : "d" + std::to_string(next() % 110000);
      uint64_t truth = std::distance(live.begin(), live.lower_bound(id));
      CHECK_MESSAGE(snap->live_before(id) == truth, id);
    }
    CHECK(snap->live_before("") == 0);
    CHECK(snap->live_before("~") == live.size());
    CHECK(snap->fault());
  };
  check(*s);
  s.reset();
  auto reopened = open_store(path);  // the table was kept by every commit: used as it is
  check(*reopened);
}

TEST_CASE("ids over 400 bytes: keyed by prefix and hash, listed in id order, counted exactly") {
  temp_dir dir;
  const std::string p(400, 'p');
  CHECK(doc_key::of("short") == "short");
  CHECK(doc_key::of(p) == p);
  CHECK(doc_key::of(p + "a").size() == 432);
  CHECK(doc_key::of(p + "a").substr(0, 400) == p);
  CHECK(doc_key::of(p + "a") != doc_key::of(p + "b"));
  // A long id's bodies key does not grow with the id, and still tells ids apart.
  CHECK(doc_key::body(p + "a", rev_id{1, "x"}).size() ==
        doc_key::body(p + "a" + std::string(10000, 'z'), rev_id{1, "x"}).size());
  CHECK(doc_key::body(p + "a", rev_id{1, "x"}) != doc_key::body(p + "b", rev_id{1, "x"}));
  CHECK(doc_key::body(std::string(100000, 'q'), rev_id{1, "abc"}).size() == 1 + 32 + 5);

  // A group sharing the first 400 bytes (hash order differs from id order for some of them).
  std::vector<std::string> ids = {p + "d",
                                  p + "a",
                                  p + "c" + std::string(3000, 'c'),
                                  p,
                                  p + "b",
                                  "o",
                                  "q",
                                  p + "a" + std::string(1, '\0'),
                                  std::string(70000, 'z')};
  std::string path = dir.path + "/s.1";
  std::map<std::string, rev_id> revs;
  {
    auto s = open_store(path);
    for (auto& id : ids) revs[id] = write(*s, {upd(id, R"({"v":1})")}).front().rev;
    // Delete one of the group: listings skip it, counts drop it.
    write(*s, {upd(p + "b", "{}", {revs[p + "b"]}, true)});
  }
  auto s = open_store(path);  // what was written reads back after a reopen
  std::vector<std::string> sorted_ids = ids;
  std::sort(sorted_ids.begin(), sorted_ids.end());
  auto snap = s->read();
  REQUIRE(snap);
  auto scan = [&](const std::string& start, bool descending) {
    std::vector<std::string> out;
    snap->scan_docs(start, descending, [&](const doc_info& d) {
      out.push_back(d.id);
      return true;
    });
    CHECK(snap->fault());
    return out;
  };
  CHECK(scan("", false) == sorted_ids);
  std::vector<std::string> reversed(sorted_ids.rbegin(), sorted_ids.rend());
  CHECK(scan("", true) == reversed);
  std::vector<std::string> live;
  for (auto& id : sorted_ids)
    if (id != p + "b") live.push_back(id);
  for (size_t k = 0; k < sorted_ids.size(); ++k) {
    const std::string& start = sorted_ids[k];
    CHECK(scan(start, false) == std::vector<std::string>(sorted_ids.begin() + k, sorted_ids.end()));
    CHECK(scan(start, true) ==
          std::vector<std::string>(reversed.begin() + (sorted_ids.size() - 1 - k), reversed.end()));
    size_t before = std::lower_bound(live.begin(), live.end(), start) - live.begin();
    CHECK_MESSAGE(snap->live_before(start) == before, start.size());
  }
  // A start that is no document, inside the group.
  CHECK(scan(p + "bb", false).front() == p + "c" + std::string(3000, 'c'));
  CHECK(scan(p + "bb", true).front() == p + "b");
  CHECK(snap->live_before(p + "bb") == 4);  // o, p, p+a, p+a\0
  // Point reads, edits and the by-seq index name the whole id.
  doc_info d;
  REQUIRE(snap->doc(std::string(70000, 'z'), d));
  CHECK(d.id.size() == 70000);
  CHECK_FALSE(snap->doc(std::string(70001, 'z'), d));
  std::string body;
  CHECK(snap->body(p + "a", revs[p + "a"], body));
  std::vector<std::string> changed;
  snap->scan_changes(0, [&](const change_entry& e) {
    changed.push_back(e.id);
    return true;
  });
  std::sort(changed.begin(), changed.end());
  CHECK(changed == sorted_ids);
}

namespace {

write_op purge_op(std::vector<purge_info> reqs) {
  write_op op;
  op.what = write_op::kind::purge;
  op.purges = std::move(reqs);
  return op;
}

std::vector<purge_info> purge_infos(shard_store& s) {
  std::vector<purge_info> out;
  auto snap = s.read();
  REQUIRE(snap.ok());
  snap->scan_purges(0, [&](const purge_info& p) {
    out.push_back(p);
    return true;
  });
  REQUIRE(snap->fault());
  return out;
}

}  // namespace

TEST_CASE("purge: a whole document leaves docs, by_seq, bodies and counts; a partial one moves to a new seq") {
  temp_dir dir;
  const std::string path = dir.path + "/shards/00000000-ffffffff/db.1";
  auto s = open_store(path);
  auto a = write(*s, {upd("a", "{\"v\":1}")})[0].rev;
  auto b1 = write(*s, {upd("b", "{\"v\":1}")})[0].rev;
  auto b = write(*s, {upd("b", "{\"v\":2}", {b1})})[0].rev;
  // b gets a conflict: two leaves (2-ffff beside b's own 2-).
  write_op merge;
  doc_update other = upd("b", "{\"v\":\"other\"}", {rev_id{2, "ffff"}, b1});
  other.new_edits = false;
  merge.docs = {other};
  REQUIRE(s->commit({&merge}, 1700000100));
  REQUIRE(s->header().doc_count == 2);
  const uint64_t seq_before = s->header().update_seq;

  auto op = purge_op({{0, "u1", "a", {a}}, {0, "u2", "b", {rev_id{2, "ffff"}}}, {0, "u3", "missing", {a}}});
  REQUIRE(s->commit({&op}, 1700000200));
  REQUIRE(op.st);
  CHECK(op.purged[0] == std::vector<rev_id>{a});
  CHECK(op.purged[1] == std::vector<rev_id>{rev_id{2, "ffff"}});
  CHECK(op.purged[2].empty());
  shard_header h = s->header();
  CHECK(h.purge_seq == 3);
  CHECK(h.doc_count == 1);
  CHECK(h.update_seq == seq_before + 1);  // b moved; a's purge takes no seq
  auto feed = changes(*s);
  REQUIRE(feed.size() == 1);
  CHECK(feed[0].id == "b");
  CHECK(feed[0].seq == seq_before + 1);
  CHECK(feed[0].leaf_revs == std::vector<std::string>{b.str()});
  {
    auto snap = s->read();
    doc_info d;
    CHECK_FALSE(snap->doc("a", d));
    std::string body;
    CHECK_FALSE(snap->body("a", a, body));
    CHECK_FALSE(snap->body("b", rev_id{2, "ffff"}, body));
    CHECK(snap->live_total() == 1);
    CHECK(snap->fault());
  }
  auto infos = purge_infos(*s);
  REQUIRE(infos.size() == 3);
  CHECK(infos[0].uuid == "u1");
  CHECK(infos[2].id == "missing");  // recorded even when it removed nothing (CouchDB)

  // The same uuid again (internal replication bringing it back) changes nothing.
  write(*s, {upd("a", "{\"v\":2}")});
  auto again = purge_op({{0, "u1", "a", {a}}});
  REQUIRE(s->commit({&again}, 1700000300));
  CHECK(again.purged[0].empty());
  CHECK(s->header().purge_seq == 3);

  // Durable: reopened, the same state.
  s.reset();
  s = open_store(path);
  CHECK(s->header().purge_seq == 3);
  CHECK(purge_infos(*s).size() == 3);
  CHECK(s->header().doc_count == 2);
}

TEST_CASE("purge infos past the limit are forgotten, but not those a synced copy lacks") {
  temp_dir dir;
  auto s = open_store(dir.path + "/db.1");
  write_op limit;
  limit.what = write_op::kind::purged_infos_limit;
  limit.purged_infos_limit = 3;
  REQUIRE(s->commit({&limit}, 1700000100));
  CHECK(s->header().purged_infos_limit == 3);
  for (int i = 0; i < 5; ++i) {
    auto op = purge_op({{0, "u" + std::to_string(i), "x", {rev_id{1, "a"}}}});
    REQUIRE(s->commit({&op}, 1700000100));
  }
  auto infos = purge_infos(*s);
  REQUIRE(infos.size() == 3);
  CHECK(infos.front().seq == 3);
  // A sync checkpoint that has pushed up to 4 of them: the next ones stay past the limit.
  write_op cp;
  cp.what = write_op::kind::local;
  cp.local = {std::string(sync_checkpoint_prefix) + "abc", "{\"seq\":0,\"purge_seq\":4}", false, 0};
  REQUIRE(s->commit({&cp}, 1700000100));
  for (int i = 5; i < 9; ++i) {
    auto op = purge_op({{0, "u" + std::to_string(i), "x", {rev_id{1, "a"}}}});
    REQUIRE(s->commit({&op}, 1700000100));
  }
  infos = purge_infos(*s);
  CHECK(infos.front().seq == 5);  // 9 - 3 = 6 would go, but the copy has only 4
  CHECK(infos.size() == 5);
  write_op zero;
  zero.what = write_op::kind::purged_infos_limit;
  REQUIRE(s->commit({&zero}, 1700000100));
  CHECK(zero.st.code == errc::bad_request);
}

TEST_CASE("a merge from another copy of the range does not bring a purged revision back; a replication does") {
  temp_dir dir;
  auto s = open_store(dir.path + "/db.1");
  auto a = write(*s, {upd("a", "{\"v\":1}")})[0].rev;
  auto op = purge_op({{0, "u1", "a", {a}}});
  REQUIRE(s->commit({&op}, 1700000100));
  doc_update back = upd("a", "{\"v\":1}", {a});
  back.new_edits = false;
  back.honor_purges = true;
  auto r = write(*s, {back});
  CHECK_FALSE(r[0].added);
  CHECK(s->header().doc_count == 0);
  // A child of the purged revision is new: it comes (with its history).
  doc_update child = upd("a", "{\"v\":2}", {rev_id{2, "bb"}, a});
  child.new_edits = false;
  child.honor_purges = true;
  CHECK(write(*s, {child})[0].added);
  // _bulk_docs new_edits=false from a replicator: the purged revision comes back (CouchDB's rule).
  auto op2 = purge_op({{0, "u2", "a", {rev_id{2, "bb"}}}});
  REQUIRE(s->commit({&op2}, 1700000100));
  CHECK(s->header().doc_count == 0);
  back.honor_purges = false;
  CHECK(write(*s, {back})[0].added);
  CHECK(s->header().doc_count == 1);
}

TEST_CASE(
    "a purge that removes history records it as a request of its own, which a copy that lacked the leaf applies") {
  temp_dir dir;
  auto full = open_store(dir.path + "/full.1");
  auto late = open_store(dir.path + "/late.1");
  // Both copies have 1-; only `full` got the edit to 2- before the purge of 2-.
  auto r1 = write(*full, {upd("x", "{\"v\":1}")})[0].rev;
  auto r2 = write(*full, {upd("x", "{\"v\":2}", {r1})})[0].rev;
  CHECK(write(*late, {upd("x", "{\"v\":1}")})[0].rev == r1);
  auto op = purge_op({{0, "u1", "x", {r2}}});
  REQUIRE(full->commit({&op}, 1700000100));
  CHECK(full->header().doc_count == 0);
  auto infos = purge_infos(*full);
  REQUIRE(infos.size() == 2);
  CHECK(infos[1].revs == std::vector<rev_id>{r1});  // the history it removed with 2-
  CHECK(purge_log::is_implied(infos[1]));
  CHECK_FALSE(purge_log::is_implied(infos[0]));
  // The late copy gets the client's request first (nothing to remove), then both from `full`.
  auto direct = purge_op({{0, "u1", "x", {r2}}});
  REQUIRE(late->commit({&direct}, 1700000200));
  CHECK(late->header().doc_count == 1);
  // Before it learns the implied one, a push of its 1- to `full` is refused there.
  doc_update push = upd("x", "{\"v\":1}", {r1});
  push.new_edits = false;
  push.honor_purges = true;
  CHECK_FALSE(write(*full, {push})[0].added);
  for (purge_info& p : infos) p.seq = 0;
  auto pulled = purge_op(infos);
  REQUIRE(late->commit({&pulled}, 1700000300));
  CHECK(late->header().doc_count == 0);  // converged: 1- went too
  // Applied once: the implied request is known by its uuid on both copies.
  CHECK(purge_infos(*late).size() == 2);
}

TEST_CASE("an edit that would make a purged revision again is refused, other content is written") {
  temp_dir dir;
  auto s = open_store(dir.path + "/db.1");
  auto r1 = write(*s, {upd("x", "{\"v\":1}")})[0].rev;
  auto op = purge_op({{0, "u1", "x", {r1}}});
  REQUIRE(s->commit({&op}, 1700000100));
  // The same content from scratch is the same revision: refused (a write that was on its way
  // when the purge came must not bring the document back on this copy alone).
  auto again = write(*s, {upd("x", "{\"v\":1}")});
  CHECK(again[0].st.code == errc::conflict);
  CHECK(again[0].st.reason.find("was purged") != std::string::npos);
  CHECK(s->header().doc_count == 0);
  auto other = write(*s, {upd("x", "{\"v\":\"new\"}")});
  CHECK(other[0].st);
  CHECK(s->header().doc_count == 1);
}

TEST_CASE("the changes after a seq are counted by runs of seqs, exactly, in every snapshot") {
  temp_dir dir;
  auto s = open_store(dir.path + "/x.db");
  std::mt19937 rng(1024);
  std::map<std::string, rev_id> revs;  // each document's winning revision
  auto brute = [](shard_store::snapshot& snap, uint64_t since) {
    uint64_t n = 0;
    snap.scan_changes(since, [&](const change_entry&) {
      ++n;
      return true;
    });
    return n;
  };
  auto check_all = [&](shard_store::snapshot& snap, uint64_t top) {
    for (uint64_t since : {uint64_t{0}, uint64_t{1}, top / 2, top - 1, top, top + 5, uint64_t{1023}, uint64_t{1024},
                           uint64_t{2047}, static_cast<uint64_t>(rng() % (top + 1))}) {
      CAPTURE(since);
      CHECK(snap.count_changes_after(since) == brute(snap, since));
    }
  };
  std::optional<shard_store::snapshot> old;
  uint64_t old_top = 0;
  for (int commit = 0; commit < 1500; ++commit) {
    std::vector<doc_update> docs;
    for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k) {  // new documents and edits of old ones
      std::string id = "d" + std::to_string(rng() % 400);
      std::vector<rev_id> parent;
      if (auto it = revs.find(id); it != revs.end()) parent = {it->second};
      if (std::any_of(docs.begin(), docs.end(), [&](const doc_update& u) { return u.id == id; })) continue;
      docs.push_back(upd(id, "{\"c\":" + std::to_string(commit) + "}", parent, rng() % 10 == 0));
    }
    auto results = write(*s, docs);
    for (size_t i = 0; i < docs.size(); ++i) {
      if (results[i].st) revs[docs[i].id] = results[i].rev;
    }
    if (commit % 97 == 0) {
      auto snap = s->read();
      REQUIRE(snap.ok());
      check_all(*snap, s->update_seq());
    }
    if (commit == 700) {
      auto snap = s->read();
      REQUIRE(snap.ok());
      old.emplace(std::move(*snap));  // a snapshot that stays behind while commits go on
      old_top = s->update_seq();
    }
  }
  // Purges move what is left of a document to a new seq, or take it away.
  std::vector<purge_info> reqs;
  for (auto& [id, rev] : revs) {
    if (reqs.size() < 20) reqs.push_back({0, "u" + std::to_string(reqs.size()), id, {rev}});
  }
  write_op purge = purge_op(reqs);
  REQUIRE(s->commit({&purge}, 1700000200));
  {
    auto snap = s->read();
    REQUIRE(snap.ok());
    const uint64_t top = s->update_seq();
    check_all(*snap, top);
    CHECK(snap->count_changes_before(top / 2) == brute(*snap, 0) - brute(*snap, top / 2 - 1));
    check_all(*old, old_top);  // its own state, not the latest
  }
  // A reopened file counts from a fresh scan.
  old.reset();
  s.reset();
  s = open_store(dir.path + "/x.db");
  auto again = s->read();
  REQUIRE(again.ok());
  check_all(*again, s->update_seq());
}
