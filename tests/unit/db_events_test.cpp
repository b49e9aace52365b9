// Databases' lifecycle events: the pure steps between two states, their encodings, and the catalog
// file recording them in the commit that changes `_dbs` (real LMDB files).
#include <doctest/doctest.h>

#include "storage/db_events.hpp"
#include "storage/shard_store.hpp"
#include "temp_dir.hpp"

using namespace settee;

namespace {

using steps = std::vector<std::pair<db_event_type, uint64_t>>;
constexpr auto C = db_event_type::created;
constexpr auto D = db_event_type::deleted;

steps between(std::optional<db_state> before, db_state after) {
  steps out;
  for (auto& s : lifecycle_steps(before, after)) out.emplace_back(s.type, s.instance);
  return out;
}

std::shared_ptr<shard_store> open_catalog(const std::string& path, bool record = true) {
  store_options o;
  o.node_name = "n1@h";
  o.map_size_bytes = 64ull << 20;
  if (record) o.role = file_role::catalog;
  auto s = shard_store::open(path, o);
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().reason));
  return *s;
}

// Writes `name`'s entry as the catalog does: a new revision on top of the winner.
void put_entry(shard_store& s, const std::string& name, const std::string& body, bool deleted = false,
               int64_t now = 1700000100) {
  doc_update u;
  u.id = name;
  u.body = body;
  u.deleted = deleted;
  auto snap = s.read();
  REQUIRE(snap.ok());
  doc_info d;
  if (snap->doc(name, d)) u.revs.push_back(d.tree.rev(d.tree.winner()));
  write_op op;
  op.docs.push_back(std::move(u));
  REQUIRE(s.commit({&op}, now));
  REQUIRE(op.st);
  REQUIRE(op.results[0].st);
}

std::vector<db_event> events(shard_store& s, uint64_t since = 0) {
  std::vector<db_event> out;
  auto snap = s.read();
  REQUIRE(snap.ok());
  snap->scan_db_events(since + 1, 0, [&](const db_event& e) {
    out.push_back(e);
    return true;
  });
  CHECK(snap->fault());
  return out;
}

std::string entry(int64_t created) {
  return "{\"by_range\":{},\"created\":" + std::to_string(created) + ",\"q\":1}";
}

}  // namespace

TEST_CASE("lifecycle steps between two states of a name") {
  CHECK(between(std::nullopt, {7, true}) == steps{{C, 7}});
  CHECK(between(db_state{7, true}, {7, true}).empty());
  CHECK(between(db_state{7, true}, {9, true}) == steps{{D, 7}, {C, 9}});
  CHECK(between(db_state{7, true}, {0, false}) == steps{{D, 7}});  // a 0.2 tombstone ("{}")
  CHECK(between(db_state{7, true}, {7, false}) == steps{{D, 7}});
  CHECK(between(db_state{7, true}, {9, false}) == steps{{D, 7}, {C, 9}, {D, 9}});
  CHECK(between(db_state{7, false}, {7, false}).empty());
  CHECK(between(db_state{7, false}, {0, false}).empty());
  CHECK(between(db_state{7, false}, {9, true}) == steps{{C, 9}});
  CHECK(between(db_state{7, false}, {9, false}) == steps{{C, 9}, {D, 9}});
  CHECK(between(std::nullopt, {9, false}) == steps{{C, 9}, {D, 9}});
  CHECK(between(std::nullopt, {0, false}).empty());  // nothing to name
  CHECK(resolve_state(db_state{7, true}, {0, false}) == db_state{7, false});
}

TEST_CASE("instance of a _dbs entry and the event encodings") {
  CHECK(instance_of_entry(entry(1700000000)) == 1700000000u);
  CHECK(instance_of_entry("{}") == 0);
  CHECK(instance_of_entry("{\"created\":\"x\"}") == 0);
  CHECK(instance_of_entry("{\"created\":-5}") == 0);
  CHECK(instance_of_entry("not json") == 0);
  db_event e{42, 3, D, "a/b", 1700000000, 1700000100};
  db_event back;
  REQUIRE(decode_event(event_key(42, 3), encode_event(e), back));
  CHECK(back.seq == 42);
  CHECK(back.index == 3);
  CHECK(back.type == D);
  CHECK(back.db == "a/b");
  CHECK(back.instance == 1700000000u);
  CHECK(back.time_s == 1700000100);
  CHECK_FALSE(decode_event(event_key(42, 3), encode_event(e) + "x", back));
  CHECK_FALSE(decode_event("e123", encode_event(e), back));
  CHECK(event_key(1, 0) < event_key(1, 1));
  CHECK(event_key(1, 9) < event_key(256, 0));
  db_state s;
  REQUIRE(decode_state(encode_state({5, true}), s));
  CHECK(s == db_state{5, true});
  CHECK_FALSE(decode_state("", s));
}

TEST_CASE("the catalog file records created and deleted in the commit that changes _dbs") {
  temp_dir dir;
  std::string path = dir.path + "/_dbs.lmdb";
  auto s = open_catalog(path);
  put_entry(*s, "a", entry(100));                                                   // seq 1
  put_entry(*s, "b", entry(101));                                                   // seq 2
  put_entry(*s, "a", "{\"created\":100,\"q\":1,\"by_range\":{},\"security\":{}}");  // _security: no event
  put_entry(*s, "a", "{\"created\":100}", true);                                    // seq 4: deleted
  put_entry(*s, "a", entry(102));                                                   // seq 5: a new incarnation
  put_entry(*s, "_design/x", "{}");                                                 // not a database
  auto all = events(*s);
  REQUIRE(all.size() == 4);
  CHECK((all[0].seq == 1 && all[0].type == C && all[0].db == "a" && all[0].instance == 100));
  CHECK((all[1].seq == 2 && all[1].type == C && all[1].db == "b" && all[1].instance == 101));
  CHECK((all[2].seq == 4 && all[2].type == D && all[2].db == "a" && all[2].instance == 100));
  CHECK((all[3].seq == 5 && all[3].type == C && all[3].db == "a" && all[3].instance == 102));
  CHECK(all[0].time_s == 1700000100);
  auto later = events(*s, 2);
  REQUIRE(later.size() == 2);
  CHECK(later[0].seq == 4);
  // Newest first, before a seq (the "m" and "s" keys after the events are not events).
  auto before = [&](uint64_t seq) {
    std::vector<uint64_t> out;
    auto snap = s->read();
    REQUIRE(snap.ok());
    snap->scan_db_events_before(seq, [&](const db_event& e) {
      out.push_back(e.seq);
      return true;
    });
    CHECK(snap->fault());
    return out;
  };
  CHECK(before(100) == std::vector<uint64_t>{5, 4, 2, 1});
  CHECK(before(5) == std::vector<uint64_t>{4, 2, 1});
  CHECK(before(3) == std::vector<uint64_t>{2, 1});
  CHECK(before(1).empty());

  SUBCASE("a replicated history that skipped an incarnation") {
    // Another copy's tree for "c": created (instance 7) and deleted before this copy heard of it.
    doc_update u;
    u.id = "c";
    u.body = "{\"created\":7}";
    u.deleted = true;
    u.new_edits = false;
    u.revs = {rev_id{2, "bbbb"}, rev_id{1, "aaaa"}};
    write_op op;
    op.docs.push_back(u);
    REQUIRE(s->commit({&op}, 1700000200));
    REQUIRE(op.results[0].st);
    auto e = events(*s, 5);
    REQUIRE(e.size() == 2);
    CHECK((e[0].type == C && e[0].instance == 7 && e[0].index == 0));
    CHECK((e[1].type == D && e[1].instance == 7 && e[1].index == 1));
    // The same history again changes nothing.
    write_op again;
    again.docs.push_back(u);
    REQUIRE(s->commit({&again}, 1700000300));
    CHECK(events(*s, 5).size() == 2);
  }
  SUBCASE("other shard files record nothing") {
    auto other = open_catalog(dir.path + "/db.1", false);
    put_entry(*other, "a", entry(100));
    CHECK(events(*other).empty());
  }
}

TEST_CASE("a catalog written by a release without events is reconciled when it opens") {
  temp_dir dir;
  std::string path = dir.path + "/_dbs.lmdb";
  {
    auto s = open_catalog(path);
    put_entry(*s, "a", entry(100));  // seq 1, recorded
    put_entry(*s, "b", entry(101));  // seq 2, recorded
  }
  {
    auto old = open_catalog(path, false);  // as 0.2 would: no events
    put_entry(*old, "a", "{}", true);      // seq 3: 0.2's tombstone
    put_entry(*old, "c", entry(103));      // seq 4
  }
  auto s = open_catalog(path);
  auto all = events(*s);
  REQUIRE(all.size() == 4);
  CHECK((all[2].seq == 4 && all[2].type == D && all[2].db == "a" && all[2].instance == 100));
  CHECK((all[3].seq == 4 && all[3].type == C && all[3].db == "c" && all[3].instance == 103));
  // Reopening again finds nothing new.
  s.reset();
  s = open_catalog(path);
  CHECK(events(*s).size() == 4);
}
