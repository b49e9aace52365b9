// doc_validator over a real database (two ranges of real shard files, written through the
// coordinator) and real settee-js workers: every design document's validate_doc_update runs on
// each write, in id order, the first refusal wins, the caller's context reaches the function, and
// a new design document is seen at once (the notifier says so).
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "actors/change_notifier.hpp"
#include "actors/coordinator.hpp"
#include "actors/db_catalog.hpp"
#include "actors/doc_validator.hpp"
#include "actors/js_pool.hpp"
#include "coordinator_writes.hpp"
#include "js_worker.hpp"
#include "registry_fixture.hpp"

using namespace settee;

namespace {

struct fixture : registry_fixture {
  db_catalog catalog{shards, clk, dir.path, "n1@h", std::chrono::seconds(10)};
  coordinator coord{catalog, shards, std::chrono::seconds(10), "n1@h"};
  js_pool js;
  change_notifier notifier;
  doc_validator validator{coord, js, &notifier, std::chrono::hours(1)};
  db_meta db;

  explicit fixture(js_options o = testing::worker_options()) : js(std::move(o)) {
    REQUIRE(catalog.load());
    db = make_db("db");
  }
  db_meta make_db(const std::string& name) {
    auto m = catalog.create(name, 2, 1, {"n1@h"});
    REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().reason));
    return *m;
  }
  void put(const std::string& id, const json& body) { put_in(db, id, body); }
  void put_in(const db_meta& in, const std::string& id, const json& body) {
    put_doc(coord, in, id, body);
    notifier.design_changed();  // as a commit of a design document through the node says
  }
  std::vector<status> check(const std::vector<std::pair<std::string, json>>& docs, const std::string& user = "bob") {
    return check_in(db, docs, user);
  }
  std::vector<status> check_in(const db_meta& in, const std::vector<std::pair<std::string, json>>& docs,
                               const std::string& user = "bob") {
    std::vector<doc_update> updates;
    for (const auto& [id, body] : docs) {
      doc_update u;
      u.id = id;
      u.body = body.dump();
      updates.push_back(u);
    }
    write_caller caller{json{{"db", "db"}, {"name", user}, {"roles", json::array()}}.dump(), "{}"};
    auto out = validator.validate(in, updates, caller);
    REQUIRE(out);
    return *out;
  }
};

}  // namespace

TEST_CASE("doc_validator: every design document's function runs, in id order, the first refusal wins") {
  fixture f;
  auto none = f.check({{"a", json{{"x", 1}}}});
  CHECK(none.at(0));  // no validate_doc_update: everything passes
  f.put("_design/a", {{"validate_doc_update",
                       "function(newDoc, oldDoc, userCtx) { if (!newDoc.ok) throw({forbidden: 'needs ok'}); }"}});
  f.put("_design/b", {{"validate_doc_update",
                       "function(newDoc, oldDoc, userCtx) {"
                       "  if (userCtx.name !== 'bob') throw({unauthorized: 'only bob'});"
                       "  if (newDoc.big) throw({forbidden: 'too big'}); }"}});
  auto got =
      f.check({{"d1", json{{"ok", true}}}, {"d2", json{{"no", true}}}, {"d3", json{{"ok", true}, {"big", true}}}});
  REQUIRE(got.size() == 3);
  CHECK(got[0]);
  CHECK(got[1].code == errc::forbidden);
  CHECK(got[1].reason == "needs ok");
  CHECK(got[2].code == errc::forbidden);
  CHECK(got[2].reason == "too big");
  // The caller's context reaches the function.
  auto other = f.check({{"d4", json{{"ok", true}}}}, "eve");
  CHECK(other.at(0).code == errc::unauthorized);
  CHECK(other.at(0).reason == "only bob");
  // Design documents are not validated by it (they need a database admin instead).
  CHECK(f.check({{"_design/c", json{{"views", json::object()}}}}).at(0));
}

TEST_CASE("doc_validator: a function that loops in one database does not hold another's writes") {
  // Enough looping databases (each its own function, so its own batch) to take every batch
  // doc_validator runs at once normally (one per two cores), and a worker more for the others.
  const size_t looping = std::clamp<size_t>(std::thread::hardware_concurrency() / 2, 1, 4);
  fixture f(testing::worker_options(looping + 1, 5000));
  std::vector<db_meta> slow;
  for (size_t i = 0; i < looping; ++i) {
    slow.push_back(f.make_db("slow" + std::to_string(i)));
    f.put_in(slow.back(), "_design/v", {{"validate_doc_update", "function(newDoc) { while (true) {} }"}});
  }
  db_meta fast = f.make_db("fast");
  f.put_in(fast, "_design/v",
           {{"validate_doc_update", "function(newDoc) { if (!newDoc.ok) throw({forbidden: 'no'}); }"}});
  std::atomic<size_t> slow_answered{0};
  std::vector<status> slow_results(looping);
  std::vector<std::thread> writers;
  for (size_t i = 0; i < looping; ++i) {
    writers.emplace_back([&, i] {
      slow_results[i] = f.check_in(slow[i], {{"d", json{{"ok", true}}}}).at(0);
      ++slow_answered;
    });
  }
  const auto until = mono::now() + std::chrono::seconds(20);
  while (f.js.busy() < looping && mono::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(f.js.busy() == looping);  // every looping function runs, on a worker of its own
  auto got = f.check_in(fast, {{"a", json{{"ok", true}}}, {"b", json{{"no", true}}}});
  // Answered while the loops still ran (until their 5 s deadline: a margin for a loaded machine).
  CHECK(slow_answered.load() == 0);
  CHECK(got.at(0));
  CHECK(got.at(1).code == errc::forbidden);
  for (auto& w : writers) w.join();
  for (const status& st : slow_results) CHECK_FALSE(st);  // stopped at the deadline: a 500, logged
}
