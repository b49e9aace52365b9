// dir_lock: one holder per data directory, the second refused naming the first, the lock gone
// with its holder.
#include "node/dir_lock.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace settee {
namespace {

TEST_CASE("dir_lock: a second holder is refused with the first one's pid, and may take it once freed") {
  const std::string dir = std::filesystem::temp_directory_path() / ("settee-lock-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    auto first = dir_lock::acquire(dir);
    REQUIRE(first.ok());
    auto second = dir_lock::acquire(dir);  // another open file description: flock conflicts
    REQUIRE_FALSE(second.ok());
    CHECK(second.error().code == errc::conflict);
    CHECK(second.error().reason.find("(pid " + std::to_string(::getpid()) + ")") != std::string::npos);
    dir_lock moved = std::move(*first);  // the lock goes with the object
    CHECK_FALSE(dir_lock::acquire(dir).ok());
  }
  CHECK(dir_lock::acquire(dir).ok());  // released with its holder
  CHECK_FALSE(dir_lock::acquire(dir + "/missing").ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace settee
