// The registry of open shards: one environment per file, and no resurrection of a removed file.
#include <doctest/doctest.h>
#include <caf/all.hpp>

#include <sys/stat.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <future>
#include <optional>
#include <thread>

#include "actors/bridge.hpp"
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

TEST_CASE("removed paths are remembered for ten minutes, then forgotten: the registry does not grow") {
  registry_fixture f;
  const std::string old_path = f.dir.path + "/shards/00000000-ffffffff/old.1.db";
  REQUIRE(f.shards.acquire(old_path, 1).ok());
  f.shards.remove(old_path);
  f.clk.advance_ms(599'000);
  CHECK(f.shards.removed(old_path));
  f.clk.advance_ms(2'000);
  f.shards.remove(f.dir.path + "/shards/00000000-ffffffff/other.1.db");  // a later removal forgets it
  CHECK_FALSE(f.shards.removed(old_path));
}

TEST_CASE("many threads opening many shards at once each get the one environment of their file") {
  registry_fixture f;
  std::vector<std::thread> threads;
  std::vector<std::vector<shard_handle>> got(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 8; ++i) {
        auto h = f.shards.acquire(f.dir.path + "/shards/p" + std::to_string(i) + ".1.db", 1);
        REQUIRE(h.ok());
        got[t].push_back(*h);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 1; t < 8; ++t)
    for (int i = 0; i < 8; ++i) CHECK(got[t][i].store == got[0][i].store);
}

namespace {

// Resident kB of this process's mappings of `path` (/proc/self/smaps).
long resident_kb(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_file = false;
  long kb = 0;
  while (std::getline(smaps, line)) {
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') != std::string::npos &&
        line.find(' ') > line.find('-')) {
      in_file = line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0;
    } else if (in_file && line.rfind("Rss:", 0) == 0) {
      kb += std::stol(line.substr(4));
    }
  }
  return kb;
}

}  // namespace

TEST_CASE("a shard nobody has used for a while gives its mapped pages back, and reads them again when used") {
  registry_fixture f;
  // Named the way a relative data directory names it (the kernel lists the absolute path).
  const std::string path = f.dir.path + "/shards/../shards/00000000-ffffffff/idle.1.db";
  auto read_some = [&] {
    auto h = f.shards.acquire(path, 1);
    REQUIRE(h.ok());
    auto snap = h->store->read();
    REQUIRE(snap.ok());
    doc_info d;
    CHECK_FALSE(snap->doc("absent", d));  // walks the tree from its root: its pages are mapped in
  };
  read_some();
  CHECK(f.shards.last_acquired_ms() == f.clk.now_ms());  // what "the node is idle" also asks
  char* real = ::realpath(path.c_str(), nullptr);
  REQUIRE(real != nullptr);
  const std::string file = real;
  std::free(real);
  auto resident = [&] { return resident_kb(file); };
  const long mapped = resident();
  REQUIRE(mapped > 0);

  f.shards.release_idle_maps(30000);  // used just now: kept
  CHECK(resident() == mapped);
  {
    auto held = f.shards.acquire(path, 1);  // held by a request (a feed): kept however old
    REQUIRE(held.ok());
    f.clk.advance_ms(31000);
    f.shards.release_idle_maps(30000);
    CHECK(resident() == mapped);
  }
  f.clk.advance_ms(31000);
  f.shards.release_idle_maps(30000);
  CHECK(resident() == 0);

  read_some();  // the same store, its pages read again from the page cache
  CHECK(resident() > 0);
  CHECK(f.shards.last_acquired_ms() == f.clk.now_ms());
}

namespace {

std::shared_ptr<write_op> one_doc(const std::string& id) {
  auto op = std::make_shared<write_op>();
  doc_update u;
  u.id = id;
  u.body = R"({"a":1})";
  op->docs.push_back(std::move(u));
  return op;
}

}  // namespace

TEST_CASE("a write under commit_here to an idle replica commits on the calling thread; others on the replica's") {
  registry_fixture f;
  auto h = f.shards.acquire(f.dir.path + "/shards/00000000-ffffffff/db.1.db", 1);
  REQUIRE(h.ok());
  const std::thread::id caller = std::this_thread::get_id();

  std::atomic<bool> done{false};
  std::thread::id committed_on;
  auto op = one_doc("here");
  {
    commit_here here;
    submit_write(h->writer, op, [&] {
      committed_on = std::this_thread::get_id();
      done = true;
    });
  }
  REQUIRE(done.load());  // committed (fsynced) before submit_write returned
  CHECK(committed_on == caller);
  REQUIRE(op->st);
  REQUIRE(op->results.size() == 1);
  CHECK(op->results[0].st);
  CHECK(h->store->update_seq() == 1);

  // Without it (and for the next write of the same thread: commit_here lets one write in place).
  for (bool scoped : {false, true}) {
    std::optional<commit_here> here;
    if (scoped) {
      here.emplace();
      auto first = one_doc(std::string("first") + (scoped ? "1" : "0"));
      submit_write(h->writer, first, [] {});
    }
    std::promise<std::thread::id> on;
    auto later = one_doc(std::string("later") + (scoped ? "1" : "0"));
    submit_write(h->writer, later, [&] { on.set_value(std::this_thread::get_id()); });
    auto fut = on.get_future();
    REQUIRE(fut.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    CHECK(fut.get() != caller);  // the replica's thread committed it
    CHECK(later->st);
  }
  CHECK(h->store->update_seq() == 4);
}

TEST_CASE("a write reaching a closed replica's lane is answered with the stop, even under commit_here") {
  registry_fixture f;
  const std::string path = f.dir.path + "/shards/00000000-ffffffff/db.1.db";
  auto h = f.shards.acquire(path, 1);
  REQUIRE(h.ok());
  shard_writer writer = h->writer;
  h = status{};
  f.shards.remove(path);  // the replica closes its lane
  std::promise<void> answered;
  auto op = one_doc("late");
  {
    commit_here here;
    submit_write(writer, op, [&] { answered.set_value(); });
  }
  auto fut = answered.get_future();
  REQUIRE(fut.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(op->st.code == errc::internal);
}
