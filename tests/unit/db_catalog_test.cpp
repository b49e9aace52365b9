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
  CHECK(seen->security == R"({"members":{"names":["x"]}})");

  // A listing refreshes too (GET /_all_dbs), without waiting for a lookup to reload.
  f.create("c");
  f.reader.mark_stale();
  REQUIRE(f.reader.refresh());
  CHECK(f.reader.names() == std::vector<std::string>{"a", "b", "c"});

  // A third catalog loading the file from the start agrees with the one that followed it.
  db_catalog fresh{f.shards, f.clk, f.dir.path, "n1@h", timeout};
  REQUIRE(fresh.load());
  CHECK(fresh.names() == f.reader.names());
  for (auto& name : fresh.names()) {
    CHECK(fresh.find(name)->created == f.reader.find(name)->created);
    CHECK(fresh.find(name)->security == f.reader.find(name)->security);
  }
}
