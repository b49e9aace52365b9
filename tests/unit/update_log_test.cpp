// The update log (`updated` rows of _db_updates) over real shard files: commits mark databases, one
// record covers a burst, a deleted database is not recorded, and what a crash lost is found again.
#include <doctest/doctest.h>
#include <caf/all.hpp>

#include "actors/bridge.hpp"
#include "actors/change_notifier.hpp"
#include "actors/db_catalog.hpp"
#include "actors/update_log.hpp"
#include "node/json.hpp"
#include "temp_dir.hpp"

using namespace settee;

namespace {

constexpr std::chrono::milliseconds timeout{10000};

struct node_fixture {
  temp_dir dir;
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  manual_clock clk{1700000000000};
  change_notifier notifier;
  shard_registry shards{sys, clk, small_files(), replica_limits{}, 50, &notifier};
  db_catalog catalog{shards, clk, dir.path, "n1@h", timeout};

  static store_options small_files() {
    store_options o;
    o.node_name = "n1@h";
    o.map_size_bytes = 64ull << 20;
    return o;
  }
  node_fixture() { REQUIRE(catalog.load()); }
  ~node_fixture() { notifier.set_observer(nullptr); }

  // Attaches `log` as the node does.
  void observe(update_log& log) {
    notifier.set_observer([&log](const std::string& key) { log.mark(key); });
  }
  db_meta create(const std::string& name, uint32_t q = 2) {
    auto m = catalog.create(name, q, 1, {"n1@h"});
    REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().reason));
    return *m;
  }
  // One commit of one new document to range `range` of `m`.
  void write(const db_meta& m, size_t range, const std::string& id) {
    auto h = shards.acquire(m.shard_paths[range], m.created, m.key());
    REQUIRE(h.ok());
    auto op = std::make_shared<write_op>();
    doc_update u;
    u.id = id;
    u.body = "{}";
    op->docs.push_back(u);
    REQUIRE(write_one(h->writer, op, timeout));
  }
  uint64_t seq_of(const db_meta& m, size_t range) {
    return shards.acquire(m.shard_paths[range], m.created, m.key())->store->header().update_seq;
  }
};

// The record's document for `name` (null when none) and how many commits the record has had.
json recorded(update_log& log, const std::string& name, uint64_t* commits = nullptr) {
  auto h = log.record();
  REQUIRE(h.ok());
  if (commits) *commits = h->store->header().update_seq;
  auto snap = h->store->read();
  REQUIRE(snap.ok());
  doc_info d;
  std::string body;
  if (!snap->doc(name, d) || !snap->winner_body(d, body)) return json();
  return parse_json(body).value_or(json());
}

}  // namespace

TEST_CASE("commits mark their database; one record covers every commit before it") {
  node_fixture f;
  update_log log(f.shards, f.catalog, f.clk, f.dir.path);
  f.observe(log);
  auto a = f.create("a");
  auto b = f.create("b");
  f.create("idle");
  // 100 commits before the flusher runs: one record commit, one document per database.
  for (int i = 0; i < 100; ++i) f.write(a, i % 2, "doc" + std::to_string(i));
  f.write(b, 1, "x");
  log.start();
  log.flush();
  uint64_t commits = 0;
  json ra = recorded(log, "a", &commits);
  CHECK(commits == 2);  // the two documents in one commit
  CHECK(ra["instance"] == a.created);
  CHECK(ra["seqs"][a.ranges[0].name()] == f.seq_of(a, 0));
  CHECK(ra["seqs"][a.ranges[1].name()] == f.seq_of(a, 1));
  CHECK(f.seq_of(a, 0) + f.seq_of(a, 1) == 100);
  CHECK(recorded(log, "b")["seqs"][b.ranges[1].name()] == 1);
  CHECK(recorded(log, "idle").is_null());  // never written: no row

  // A later write moves the database's document again (the feed shows it once, at the end).
  f.write(b, 0, "y");
  log.flush();
  recorded(log, "b", &commits);
  CHECK(commits == 3);
  CHECK(recorded(log, "b")["seqs"][b.ranges[0].name()] == 1);
  log.stop();
}

TEST_CASE("a database deleted before its record is not recorded; a new incarnation replaces the old") {
  node_fixture f;
  update_log log(f.shards, f.catalog, f.clk, f.dir.path);
  f.observe(log);
  auto gone = f.create("gone");
  f.write(gone, 0, "x");
  REQUIRE(f.catalog.remove("gone"));
  auto a = f.create("a", 1);
  f.write(a, 0, "x");
  log.start();
  log.flush();
  CHECK(recorded(log, "gone").is_null());
  REQUIRE(f.catalog.remove("a"));
  auto again = f.create("a", 1);
  CHECK(again.created != a.created);
  f.write(again, 0, "y");
  log.flush();
  CHECK(recorded(log, "a")["instance"] == again.created);
  log.stop();
}

TEST_CASE("writes a crash kept from the record are found at start by their copies' seqs") {
  node_fixture f;
  db_meta a, b;
  {
    update_log log(f.shards, f.catalog, f.clk, f.dir.path);
    f.observe(log);
    a = f.create("a");
    b = f.create("b");
    f.write(a, 0, "x");
    f.write(b, 0, "x");
    log.start();
    log.flush();
    f.notifier.set_observer(nullptr);  // the marks of later commits are lost, as in a kill -9
    log.stop();
  }
  f.write(a, 1, "lost");
  uint64_t before = 0;
  {
    update_log log(f.shards, f.catalog, f.clk, f.dir.path);
    CHECK(recorded(log, "a")["seqs"][a.ranges[1].name()] == 0);
    recorded(log, "a", &before);
  }
  update_log log(f.shards, f.catalog, f.clk, f.dir.path);
  log.start();  // looks at every local copy first
  log.flush();
  uint64_t after = 0;
  CHECK(recorded(log, "a", &after)["seqs"][a.ranges[1].name()] == 1);
  CHECK(after == before + 1);  // only "a" was ahead of its record
  log.stop();
}
