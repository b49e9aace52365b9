// One node's part of _db_updates (actors/node_updates.hpp) over real catalog files: a position taken
// in one node's catalog goes on in another's, where the same lifecycle events sit in another order
// and at other times, without sending again what was seen (exactly once), and the token that
// carries it (actors/db_updates_seq.hpp) still reads as the layout of release 0.3.
#include <doctest/doctest.h>
#include <caf/all.hpp>

#include <map>

#include "actors/bridge.hpp"
#include "actors/change_notifier.hpp"
#include "actors/clustered_seq.hpp"
#include "actors/db_catalog.hpp"
#include "actors/db_updates_seq.hpp"
#include "actors/node_updates.hpp"
#include "actors/update_log.hpp"
#include "node/json.hpp"
#include "storage/codec.hpp"
#include "temp_dir.hpp"

using namespace settee;

namespace {

constexpr std::chrono::milliseconds timeout{10000};
constexpr int64_t t0 = 1700000000;

// A node's catalog and update log, as the node opens them.
struct catalog_node {
  std::string name;
  temp_dir dir;
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  manual_clock clk{t0 * 1000};
  change_notifier notifier;
  shard_registry shards;
  db_catalog catalog;
  update_log log;

  explicit catalog_node(std::string n)
      : name(std::move(n)),
        shards(sys, clk, files(), replica_limits{}, 50, &notifier),
        catalog(shards, clk, dir.path, name, timeout),
        log(shards, catalog, clk, dir.path) {
    REQUIRE(catalog.load());
    REQUIRE(log.open());
  }

  static store_options files() {
    store_options o;
    o.map_size_bytes = 64ull << 20;
    return o;
  }

  // A database created here at `at`: its incarnation is `at`.
  void create(const std::string& db, int64_t at) {
    clk.set_ms(at * 1000);
    auto m = catalog.create(db, 1, 1, {name});
    REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().reason));
    CHECK(m->created == at);
  }
  // The entry of incarnation `instance` (its tombstone when `deleted`) arriving here at `at`, as
  // internal replication writes it.
  void learn(const std::string& db, int64_t instance, int64_t at, bool deleted = false) {
    clk.set_ms(at * 1000);
    auto h = catalog.catalog_file();
    REQUIRE(h.ok());
    auto op = std::make_shared<write_op>();
    doc_update u;
    u.id = db;
    u.body = json{{"created", instance}}.dump();
    u.deleted = deleted;
    if (revs.count(db)) u.revs.push_back(revs[db]);
    op->docs.push_back(u);
    REQUIRE(write_one(h->writer, op, timeout));
    revs[db] = op->results.at(0).rev;
  }
  std::map<std::string, rev_id> revs;  // what learn() wrote last
  node_updates reader() { return node_updates(*catalog.catalog_file(), *log.record(), name); }
};

// Every lifecycle row left in `r` ("created a", ...), and the position after them.
std::vector<std::string> drain(node_updates& r) {
  std::vector<std::string> out;
  db_update_row row;
  while (r.next(row)) {
    if (row.db[0] != '_') out.push_back(std::string(row.type) + " " + row.db);
  }
  REQUIRE(r.error());
  return out;
}

// The position as a token and back (what a client carries between nodes).
node_updates_pos through_token(const node_updates_pos& p) {
  auto back = decode_db_updates_seq(encode_db_updates_seq({p}));
  REQUIRE(back.ok());
  REQUIRE(back->size() == 1);
  return back->front();
}

}  // namespace

TEST_CASE("a position carried to another catalog goes on there without repeating what was seen") {
  catalog_node a("a@h"), b("b@h");
  a.create("one", t0 + 1);
  a.create("two", t0 + 2);
  a.create("three", t0 + 3);
  a.create("only_a", t0 + 4);
  // b learns them later and in another order, and has one a has not seen yet.
  b.learn("three", t0 + 3, t0 + 10);
  b.learn("one", t0 + 1, t0 + 11);
  b.create("only_b", t0 + 12);
  b.learn("two", t0 + 2, t0 + 13);

  node_updates ra = a.reader();
  CHECK(drain(ra) == std::vector<std::string>{"created one", "created two", "created three", "created only_a"});
  node_updates_pos pos = through_token(ra.pos());
  CHECK(pos.seen.size() >= 4);
  CHECK(pos.dbs_time == t0 + 4);

  node_updates rb = b.reader();
  rb.start(pos);
  CHECK(rb.translated());
  CHECK(drain(rb) == std::vector<std::string>{"created only_b"});

  // Back to a with what b gave: everything a has was seen (only_b on b, the rest on a).
  a.learn("only_b", t0 + 12, t0 + 20);
  node_updates again = a.reader();
  again.start(through_token(rb.pos()));
  CHECK(again.translated());
  CHECK(drain(again).empty());
  // A deletion is another event of the same incarnation: it comes once as well, and a's own event
  // b had not learnt when the feed moved comes when b learns it.
  a.learn("only_b", t0 + 12, t0 + 30, /*deleted=*/true);
  b.clk.set_ms((t0 + 31) * 1000);
  REQUIRE(b.catalog.remove("only_b"));
  node_updates on_a = a.reader();
  on_a.start(again.pos());
  CHECK(drain(on_a) == std::vector<std::string>{"deleted only_b"});
  node_updates rb2 = b.reader();
  rb2.start(through_token(on_a.pos()));
  CHECK(drain(rb2).empty());
  b.learn("only_a", t0 + 4, t0 + 40);
  CHECK(drain(rb2).empty());  // seen on a before the feed moved to b
}

TEST_CASE("on the same catalog a position is exact and the seen list only travels along") {
  catalog_node a("a@h");
  a.create("one", t0 + 1);
  node_updates r = a.reader();
  drain(r);
  a.create("two", t0 + 2);
  node_updates next = a.reader();
  next.start(through_token(r.pos()));
  CHECK_FALSE(next.translated());
  CHECK(drain(next) == std::vector<std::string>{"created two"});
  CHECK(next.pos().seen.size() == r.pos().seen.size() + 1);
}

TEST_CASE("since=now and since=<time> count the window before them as seen") {
  catalog_node a("a@h"), b("b@h");
  a.create("old", t0 + 1);
  b.learn("old", t0 + 1, t0 + 5);
  b.create("b_only", t0 + 6);

  node_updates now = a.reader();
  now.start_now(t0 + 8);
  CHECK(drain(now).empty());
  CHECK(now.pos().dbs_time == t0 + 8);
  node_updates rb = b.reader();
  rb.start(through_token(now.pos()));
  CHECK(drain(rb) == std::vector<std::string>{"created b_only"});

  node_updates at = a.reader();
  at.start_at_time(t0 + 2);
  CHECK(drain(at).empty());
  node_updates rb2 = b.reader();
  rb2.start(through_token(at.pos()));
  CHECK(drain(rb2) == std::vector<std::string>{"created b_only"});
}

TEST_CASE("past max_seen events in the window, the oldest may come again, never lost") {
  catalog_node a("a@h"), b("b@h");
  const size_t n = node_updates::max_seen + 6;
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    names.push_back("db" + std::to_string(100 + i));
    a.create(names.back(), t0 + 1 + static_cast<int64_t>(i));
  }
  for (size_t i = 0; i < n; ++i)
    b.learn(names[i], t0 + 1 + static_cast<int64_t>(i), t0 + 200 + static_cast<int64_t>(i));
  node_updates ra = a.reader();
  CHECK(drain(ra).size() == n);
  CHECK(ra.pos().seen.size() == node_updates::max_seen);
  node_updates rb = b.reader();
  rb.start(through_token(ra.pos()));
  std::vector<std::string> again;
  for (size_t i = 0; i < n - node_updates::max_seen; ++i) again.push_back("created " + names[i]);
  auto got = drain(rb);
  CHECK_MESSAGE(got == again, json(got).dump());
}

TEST_CASE("back on a catalog it read before, a feed goes on from where it left it") {
  catalog_node a("a@h"), b("b@h");
  const size_t n = node_updates::max_seen + 6;
  for (size_t i = 0; i < n; ++i) {
    std::string db = "db" + std::to_string(100 + i);
    a.create(db, t0 + 1 + static_cast<int64_t>(i));
    b.learn(db, t0 + 1 + static_cast<int64_t>(i), t0 + 100 + static_cast<int64_t>(i));
  }
  node_updates ra = a.reader();
  CHECK(drain(ra).size() == n);
  node_updates rb = b.reader();
  rb.start(through_token(ra.pos()));
  CHECK(drain(rb).size() == n - node_updates::max_seen);  // past max_seen: at least once
  b.create("on_b", t0 + 200);
  CHECK(drain(rb) == std::vector<std::string>{"created on_b"});
  node_updates_pos from_b = through_token(rb.pos());
  REQUIRE(from_b.marks.size() == 1);
  CHECK(from_b.marks[0].node == "a@h");
  CHECK(from_b.marks[0].dbs_seq == ra.pos().dbs_seq);

  // Back on a: from its mark, not from the window (which holds all n events again); on_b, which a
  // learns meanwhile, was seen on b.
  a.learn("on_b", t0 + 200, t0 + 210);
  a.create("on_a", t0 + 211);
  node_updates back = a.reader();
  back.start(from_b);
  CHECK(back.translated());
  CHECK(drain(back) == std::vector<std::string>{"created on_a"});
  CHECK(back.pos().marks.size() == 1);  // b's now; a's own is pos itself
  CHECK(back.pos().marks[0].node == "b@h");
}

TEST_CASE("a token with a seen list keeps release 0.3's layout: the list is an entry it passes over") {
  node_updates_pos p;
  p.node = "n1@h";
  p.dbs_uuid = "abcdef0";
  p.dbs_seq = 7;
  p.dbs_time = t0 + 100;
  p.log_uuid = "1234567";
  p.log_seq = 3;
  p.seen = {{0x0123456789abcdefULL, t0 + 90}, {0xfedcba9876543210ULL, t0 + 100}};
  p.marks = {{"n2@h", "0fedcba", 42, 3}};
  std::string token = encode_db_updates_seq({p});

  // Read as 0.3 reads it (actors/db_updates_seq.cpp at v0.3.0): fixed fields per entry, to the end.
  std::string payload;
  REQUIRE(unwrap_token(token, payload));
  codec::reader r(payload);
  uint8_t tag = 0, version = 0;
  uint64_t count = 0;
  REQUIRE((r.byte(tag) && r.byte(version) && r.varint(count)));
  CHECK(tag == 'U');
  CHECK(version == 1);
  REQUIRE(count == 3);
  std::vector<std::string> nodes;
  for (uint64_t k = 0; k < count; ++k) {
    std::string node, dbs_uuid, log_uuid;
    uint64_t seq = 0, index = 0, time = 0, log_seq = 0;
    REQUIRE((r.str(node) && r.str(dbs_uuid) && r.varint(seq) && r.varint(index) && r.varint(time) && r.str(log_uuid) &&
             r.varint(log_seq)));
    nodes.push_back(node);
    if (k == 1) CHECK((dbs_uuid.empty() && seq == 0 && log_seq == 0));  // not a catalog it would read
  }
  CHECK(r.done());
  CHECK(nodes == std::vector<std::string>{"n1@h", "~seen", "~check"});

  auto back = decode_db_updates_seq(token);
  REQUIRE(back.ok());
  REQUIRE(back->size() == 1);
  CHECK(back->front().seen.size() == 2);
  CHECK(back->front().seen[0].id == 0x0123456789abcdefULL);
  CHECK(back->front().seen[0].time_s == t0 + 90);
  CHECK(back->front().seen[1].time_s == t0 + 100);
  REQUIRE(back->front().marks.size() == 1);
  CHECK(back->front().marks[0].node == "n2@h");
  CHECK(back->front().marks[0].dbs_uuid == "0fedcba");
  CHECK(back->front().marks[0].dbs_seq == 42);
  CHECK(back->front().marks[0].dbs_index == 3);

  // A seen list with nothing before it, or one that does not decode, is not a token of ours.
  node_updates_pos lone;
  lone.node = "~seen";
  CHECK_FALSE(decode_db_updates_seq(encode_db_updates_seq({lone})).ok());
  std::string bad = token;
  CHECK_FALSE(decode_db_updates_seq(bad.substr(0, bad.size() - 4)).ok());
}
