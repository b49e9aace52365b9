// The catalog over a real `_dbs` file: a second catalog on the same file stands for another node's
// changes arriving by internal replication, which this catalog finds by reloading what changed.
#include <doctest/doctest.h>

#include "actors/db_catalog.hpp"
#include "registry_fixture.hpp"

using namespace settee;

namespace {

constexpr std::chrono::milliseconds timeout{10000};

struct two_catalogs : registry_fixture {
  db_catalog writer{shards, clk, dir.path, "n1@h", timeout};
  db_catalog reader{shards, clk, dir.path, "n1@h", timeout};
  two_catalogs() {
    REQUIRE(writer.load());
    REQUIRE(reader.load());
  }
  db_meta create(const std::string& name) {
    clk.advance_ms(1000);  // a later incarnation
    auto m = writer.create(name, 2, 1, {"n1@h"});
    REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().reason));
    return *m;
  }
};

}  // namespace

TEST_CASE("a reload brings in what changed behind the catalog's back: creations, deletions, incarnations, security") {
  two_catalogs f;
  auto a = f.create("a");
  auto b = f.create("b");
  CHECK(f.reader.lookup("a")->created == a.created);  // not known: reloads
  CHECK(f.reader.find("b")->created == b.created);    // came with the same reload

  REQUIRE(f.writer.remove("a"));
  CHECK(f.reader.find("a").ok());  // not told yet
  f.reader.mark_stale();
  CHECK(f.reader.lookup("a").error().code == errc::db_not_found);
  CHECK(f.reader.names() == std::vector<std::string>{"b"});

  auto a2 = f.create("a");
  REQUIRE(f.writer.remove("b"));
  auto b2 = f.create("b");
  REQUIRE(f.writer.set_security("b", R"({"members":{"names":["x"]}})"));
  f.reader.mark_stale();
  CHECK(f.reader.lookup("a")->created == a2.created);
  auto seen = f.reader.lookup("b");
  REQUIRE(seen.ok());
  CHECK(seen->created == b2.created);  // deleted and created again between two reloads
  CHECK(seen->security->dump() == R"({"members":{"names":["x"]}})");

  // A listing refreshes too (GET /_all_dbs), without waiting for a lookup to reload.
  f.create("c");
  f.reader.mark_stale();
  REQUIRE(f.reader.refresh());
  CHECK(f.reader.names() == std::vector<std::string>{"a", "b", "c"});
  using names = std::vector<std::string>;  // a page of names: from a name (or between two), either way
  CHECK(f.reader.names(std::string("b"), false, 10) == names{"b", "c"});
  CHECK(f.reader.names(std::string("bb"), false, 10) == names{"c"});
  CHECK(f.reader.names(std::nullopt, false, 2) == names{"a", "b"});
  CHECK(f.reader.names(std::string("b"), true, 10) == names{"b", "a"});
  CHECK(f.reader.names(std::string("bb"), true, 1) == names{"b"});
  CHECK(f.reader.names(std::nullopt, true, 10) == names{"c", "b", "a"});
  CHECK(f.reader.names(std::string("d"), false, 10).empty());
  CHECK(f.reader.names(std::string("0"), true, 10).empty());
  CHECK(f.reader.names(std::string("a"), false, 0).empty());

  // A third catalog loading the file from the start agrees with the one that followed it.
  db_catalog fresh{f.shards, f.clk, f.dir.path, "n1@h", timeout};
  REQUIRE(fresh.load());
  CHECK(fresh.names() == f.reader.names());
  for (auto& name : fresh.names()) {
    CHECK(fresh.find(name)->created == f.reader.find(name)->created);
    CHECK(*fresh.find(name)->security == *f.reader.find(name)->security);
  }
}

TEST_CASE("a split shard map: routing by the open ranges, seen by other catalogs, and the file format raised") {
  two_catalogs f;
  auto a = f.create("a");
  CHECK(
      f.shards.acquire(db_catalog::file_in(f.dir.path), 0, db_catalog::notify_key())->store->header().format_version ==
      1);
  int64_t suffix = a.created * 1000 + 7;
  auto split = f.writer.update_entry("a", a.created, [&](db_catalog::entry& e) {
    REQUIRE(e.split_shard(e.shards[0].id(), suffix, {{"n1@h", 0}}));
    return status{};
  });
  REQUIRE_MESSAGE(split.ok(), (split.ok() ? "" : split.error().reason));
  CHECK(split->q == 3);
  CHECK(split->shard_id(0) == "00000000-3fffffff." + std::to_string(suffix));
  CHECK(split->shard_id(2) == "80000000-ffffffff." + std::to_string(a.created));
  CHECK(split->shard_paths[1] ==
        f.dir.path + "/shards/40000000-7fffffff/a." + std::to_string(suffix));  // the child's file, opened
  CHECK(f.shards.acquire(split->shard_paths[1], a.created, a.key()).ok());
  CHECK(range_index(split->ranges, 0x50000000) == 1);
  CHECK(range_index(split->ranges, 0x90000000) == 2);
  CHECK(
      f.shards.acquire(db_catalog::file_in(f.dir.path), 0, db_catalog::notify_key())->store->header().format_version ==
      shard_header::split_catalog_format);

  // The wrong incarnation is not touched.
  CHECK(f.writer.update_entry("a", a.created + 1, [](db_catalog::entry&) { return status{}; }).error().code ==
        errc::db_not_found);

  // Another node's catalog learns the new map by reloading; one loading the file reads it too.
  f.reader.mark_stale();
  auto seen = f.reader.lookup("a");
  REQUIRE(seen.ok());
  CHECK(seen->q == 3);
  CHECK(seen->shard_paths == split->shard_paths);
  REQUIRE(seen->entry);
  CHECK(seen->entry->shards.size() == 4);
  CHECK(!seen->entry->shards[0].open);
  db_catalog fresh{f.shards, f.clk, f.dir.path, "n1@h", timeout};
  REQUIRE(fresh.load());
  CHECK(fresh.find("a")->shard_paths == split->shard_paths);
  // _security kept with the lineage.
  REQUIRE(f.writer.set_security("a", R"({"admins":{"names":["z"]}})"));
  db_catalog again{f.shards, f.clk, f.dir.path, "n1@h", timeout};
  REQUIRE(again.load());
  CHECK(again.find("a")->q == 3);
  CHECK(again.find("a")->security->dump() == R"({"admins":{"names":["z"]}})");
}
