// The update log (`updated` rows of _db_updates) over real shard files: commits mark databases, one
// record covers a burst, a deleted database is not recorded, and what a crash lost is found again.
#include <doctest/doctest.h>
#include <caf/all.hpp>

#include "actors/bridge.hpp"
#include "actors/change_notifier.hpp"
#include "actors/db_catalog.hpp"
#include "actors/update_log.hpp"
#include "node/files.hpp"
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
  task_list tasks;
  job_runner runner{tasks, clk, "n1@h", lanes()};

  static job_options lanes() {
    job_options o;
    o.lanes = {{update_log::lane, 1}};
    return o;
  }

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
  // A first run: `log` opened and started over database "a" written once, all of it recorded,
  // then no longer observing (later commits are not marked, as after a kill).
  db_meta record_first_write(update_log& log) {
    REQUIRE(log.open());
    observe(log);
    db_meta a = create("a");
    write(a, 0, "x");
    log.start(runner);
    log.flush();
    notifier.set_observer(nullptr);
    return a;
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
  log.start(f.runner);
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
  log.start(f.runner);
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
    log.start(f.runner);
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
  log.start(f.runner);  // looks at every local copy first
  log.flush();
  uint64_t after = 0;
  CHECK(recorded(log, "a", &after)["seqs"][a.ranges[1].name()] == 1);
  CHECK(after == before + 1);  // only "a" was ahead of its record
  log.stop();
}

TEST_CASE("a record a machine crash may have torn is rebuilt; a cleanly stopped one, or the same boot's, is kept") {
  node_fixture f;
  auto boot = [](const char* id) {
    update_log_options o;
    o.boot_id = id;
    return o;
  };
  auto uuid = [](update_log& log) { return log.record()->store->header().shard_uuid; };
  // What a kill -9 leaves behind: the boot file still says "open".
  auto killed = [&f](const char* id) {
    f.shards.close_all();
    REQUIRE(replace_file(update_log::boot_file_in(f.dir.path), std::string(id) + " open\n"));
  };
  db_meta a;
  std::string first;
  {
    update_log log(f.shards, f.catalog, f.clk, f.dir.path, boot("boot-1"));
    a = f.record_first_write(log);
    first = uuid(log);
  }
  killed("boot-1");
  {
    // The same boot: the page cache kept every commit, nothing to rebuild.
    update_log log(f.shards, f.catalog, f.clk, f.dir.path, boot("boot-1"));
    REQUIRE(log.open());
    CHECK(uuid(log) == first);
    CHECK(recorded(log, "a")["seqs"][a.ranges[0].name()] == 1);
  }
  killed("boot-1");
  std::string second;
  {
    // Another boot after an unclean stop: dropped, and rebuilt from the copies under a new uuid.
    update_log log(f.shards, f.catalog, f.clk, f.dir.path, boot("boot-2"));
    REQUIRE(log.open());
    CHECK(recorded(log, "a").is_null());
    log.start(f.runner);
    log.flush();
    second = uuid(log);
    CHECK(second != first);
    CHECK(recorded(log, "a")["seqs"][a.ranges[0].name()] == 1);
    log.stop();  // clean: synced, and the boot file says so
  }
  CHECK(read_file(update_log::boot_file_in(f.dir.path)) == std::string("boot-2 clean\n"));
  f.shards.close_all();
  update_log log(f.shards, f.catalog, f.clk, f.dir.path, boot("boot-3"));
  REQUIRE(log.open());
  CHECK(uuid(log) == second);  // a clean stop survives a restart of the machine
  CHECK(read_file(update_log::boot_file_in(f.dir.path)) == std::string("boot-3 open\n"));
}

TEST_CASE("after a clean stop the record is complete, and start does not compare every copy with it") {
  node_fixture f;
  update_log_options o;
  o.boot_id = "boot-1";
  db_meta a;
  {
    update_log log(f.shards, f.catalog, f.clk, f.dir.path, o);
    a = f.record_first_write(log);
    log.stop();  // clean
  }
  // A commit no flusher saw (impossible after a clean stop, where the node closes its shards
  // first): the scan would record it, so seeing it unrecorded shows the scan was skipped.
  f.write(a, 1, "unseen");
  f.shards.close_all();
  // What a restarted node's record holds for range 1 of "a" once its flusher has caught up.
  auto after_restart = [&] {
    update_log log(f.shards, f.catalog, f.clk, f.dir.path, o);
    REQUIRE(log.open());
    log.start(f.runner);
    log.flush();
    return recorded(log, "a")["seqs"][a.ranges[1].name()];
  };  // the destructor's stop is clean too, but nothing marks "a" meanwhile
  CHECK(after_restart() == 0);
  REQUIRE(replace_file(update_log::boot_file_in(f.dir.path), "boot-1 open\n"));  // as a kill -9 leaves it
  f.shards.close_all();
  CHECK(after_restart() == 1);
}
