// doc_validator over a real database (two ranges of real shard files, written through the
// coordinator) and real settee-js workers: every design document's validate_doc_update runs on
// each write, in id order, the first refusal wins, the caller's context reaches the function, and
// a new design document is seen at once (the notifier says so).
#include <doctest/doctest.h>

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
  js_pool js{testing::worker_options()};
  change_notifier notifier;
  doc_validator validator{coord, js, &notifier, std::chrono::hours(1)};
  db_meta db;

  fixture() {
    REQUIRE(catalog.load());
    auto m = catalog.create("db", 2, 1, {"n1@h"});
    REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().reason));
    db = *m;
  }
  void put(const std::string& id, const json& body) {
    put_doc(coord, db, id, body);
    notifier.design_changed();  // as a commit of a design document through the node says
  }
  std::vector<status> check(const std::vector<std::pair<std::string, json>>& docs, const std::string& user = "bob") {
    std::vector<doc_update> updates;
    for (const auto& [id, body] : docs) {
      doc_update u;
      u.id = id;
      u.body = body.dump();
      updates.push_back(u);
    }
    write_caller caller{json{{"db", "db"}, {"name", user}, {"roles", json::array()}}.dump(), "{}"};
    auto out = validator.validate(db, updates, caller);
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
