// The registry of open shards: one environment per file, and no resurrection of a removed file.
#include <doctest/doctest.h>
#include <caf/all.hpp>

#include <sys/stat.h>

#include "actors/shard_registry.hpp"
#include "registry_fixture.hpp"

using namespace settee;

namespace {

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("a removed shard path is never opened (or created) again by the same registry") {
  registry_fixture f;
  temp_dir& dir = f.dir;
  shard_registry& shards = f.shards;
  const std::string path = dir.path + "/shards/00000000-ffffffff/db.1.db";

  auto first = shards.acquire(path, 1);
  REQUIRE(first.ok());
  CHECK(exists(path));
  auto again = shards.acquire(path, 1);
  REQUIRE(again.ok());
  CHECK(again->store == first->store);  // one environment per file
  first = status{};
  again = status{};

  shards.remove(path);
  CHECK_FALSE(exists(path));
  // A request holding the old shard map (e.g. a sync sweep) must not bring the file back.
  auto late = shards.acquire(path, 1);
  REQUIRE_FALSE(late.ok());
  CHECK(late.error().code == errc::db_not_found);
  CHECK_FALSE(exists(path));

  // Other paths (a new incarnation has a new suffix) open normally.
  CHECK(shards.acquire(dir.path + "/shards/00000000-ffffffff/db.2.db", 2).ok());
}
